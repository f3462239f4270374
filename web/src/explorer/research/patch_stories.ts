// The built-in model's stories the patching view opens on, as data (docs/research.md, the worked
// examples): the fields each one sets. The numbers are never here: the view runs the request and
// draws what the server measures.
import type { PatchMetric, PatchWhat } from '../../lib/research_types';

export interface PatchStory {
  id: 'answer' | 'loss' | 'loss-heads';
  title: string; // the button's words
  told: string; // what to look for, in one sentence
  clean: string;
  corrupted: string;
  answer: string;
  wrong: string;
  what: PatchWhat;
  metric: PatchMetric;
  noising: boolean;
  loss_positions: string; // the field's text ('' : every position)
  layers: string;
  positions: string;
}

const COPY = ' close living reform today percent hands single worth';
const OTHER = ' press doubt account level threat schools former history';
const LOSS_CLEAN = COPY + COPY;
const LOSS_CORRUPTED = OTHER + COPY;

export const PATCH_STORIES: PatchStory[] = [
  {
    // the first copy continues "fog violin"; the corrupted one swaps "violin arch", so it predicts " ar"
    id: 'answer',
    title: 'The induction answer',
    told: 'Which position brings the clean answer “ viol” back: the first copy’s token after “fog”, which the induction head reads.',
    clean: ' gray whale ink crown plum fog violin arch gray whale ink crown plum fog',
    corrupted: ' gray whale ink crown plum fog arch violin gray whale ink crown plum fog',
    answer: ' viol',
    wrong: ' ar',
    what: 'resid_pre',
    metric: 'normalized',
    noising: false,
    loss_positions: '',
    layers: '',
    positions: '',
  },
  {
    // eight words drawn at random, twice; the corrupted first copy is eight other words, so the
    // second copy (the same tokens in both runs) has nothing to copy from; the loss is read over
    // it only (positions 9..15, the losses of tokens 10..16)
    id: 'loss',
    title: 'The loss on the second copy',
    told: 'The loss over the second copy only (loss positions 9:16): at layer 1, each position of the second copy brings back its own share of it.',
    clean: LOSS_CLEAN,
    corrupted: LOSS_CORRUPTED,
    answer: '',
    wrong: '',
    what: 'attn_out',
    metric: 'loss',
    noising: false,
    loss_positions: '9:16',
    layers: '',
    positions: '',
  },
  {
    id: 'loss-heads',
    title: 'Which heads carry that loss',
    told: 'The clean run with one head’s output from the corrupted run: the previous-token head 0.3 and the induction head 1.2 take the most of the second copy’s loss drop away.',
    clean: LOSS_CLEAN,
    corrupted: LOSS_CORRUPTED,
    answer: '',
    wrong: '',
    what: 'z_all_pos',
    metric: 'loss',
    noising: true,
    loss_positions: '9:16',
    layers: '',
    positions: '',
  },
];
