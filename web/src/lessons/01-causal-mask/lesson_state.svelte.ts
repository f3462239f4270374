// lesson_state.svelte.ts — the lesson's state and every call it makes to the server.
// The view (sentence, head, query, mask) is mirrored in the URL; each change of it is
// reported to the server, which decides whether a challenge is met.
import { LessonProgress } from '../../course/lesson_progress.svelte';
import { api, error_message } from '../../lib/api';
import type { HeadFocus } from '../../lib/focus';
import type {
  HeadInfo,
  HeadSplitPreset,
  HeadSplitResponse,
  Program,
  WeightsResponse,
} from '../../lib/types';
import { FIRST_HEAD, LESSON_ID, WORKED_EXAMPLE_QUERY } from './text';
import { read_view, write_view, type LessonView } from './view_state';

export class CausalMaskLessonState {
  // What the server told us once.
  status = $state<'loading' | 'ready' | 'failed'>('loading');
  load_error = $state<string | null>(null);
  heads = $state<HeadInfo[]>([]);
  default_sentence = $state('');
  max_tokens = $state(32);

  // What is on screen. by_head holds every head's weights for view.sentence and view.mask.
  view = $state<LessonView>({ sentence: '', head: FIRST_HEAD, query: 0, mask: true });
  by_head = $state<Record<string, WeightsResponse>>({});
  sentence_error = $state<string | null>(null);
  busy = $state(false);

  readonly challenges = new LessonProgress(LESSON_ID);

  programs = $state<Program[]>([]);
  programs_error = $state<string | null>(null);

  split_presets = $state<HeadSplitPreset[]>([]);
  split_fields = $state({ d_model: '', h: '' });
  split = $state<HeadSplitResponse | null>(null);
  split_error = $state<string | null>(null);

  /** Counts focus() calls, so the section that shows the focus can bring itself into view. */
  focus_requests = $state(0);

  private weights_seq = 0;
  private split_seq = 0;
  private split_timer: ReturnType<typeof setTimeout> | undefined;

  // The current head's weights and its info; undefined until loaded.
  current = $derived(this.by_head[this.view.head] as WeightsResponse | undefined);
  current_head = $derived(this.heads.find((h) => h.name === this.view.head));
  tokens = $derived(this.current?.tokens ?? []);

  async start(): Promise<void> {
    let heads;
    try {
      heads = await api.heads();
    } catch (e) {
      this.status = 'failed';
      this.load_error = error_message(e);
      return;
    }
    this.heads = heads.heads;
    this.default_sentence = heads.default_sentence;
    this.max_tokens = heads.max_tokens;

    void this.challenges.load();
    void this.load_programs();
    void this.load_split_presets();

    const asked = read_view(location.search);
    const head = heads.heads.some((h) => h.name === asked.head) ? asked.head! : (heads.heads.find((h) => h.name === FIRST_HEAD)?.name ?? heads.heads[0].name);
    const mask = asked.mask ?? true;
    let sentence = asked.sentence ?? heads.default_sentence;
    let by_head: Record<string, WeightsResponse>;
    try {
      by_head = await this.compute(sentence, mask);
    } catch (e) {
      // A link with a sentence the server refuses: say why, and show the lesson's own.
      this.sentence_error = error_message(e);
      sentence = heads.default_sentence;
      try {
        by_head = await this.compute(sentence, mask);
      } catch (e2) {
        this.status = 'failed';
        this.load_error = error_message(e2);
        return;
      }
    }
    const tokens = by_head[head].tokens;
    const query = asked.query !== undefined && asked.query < tokens.length ? asked.query : this.default_query(sentence, tokens);
    this.by_head = by_head;
    this.view = { sentence, head, query, mask };
    this.status = 'ready';
    this.sync_url();
  }

  // ---- the view: every change goes to the URL and to the challenge detectors ----

  select_head(head: string): void {
    if (head === this.view.head || !this.by_head[head]) return;
    this.view.head = head;
    this.changed();
  }

  select_query(query: number): void {
    if (query === this.view.query || query < 0 || query >= this.tokens.length) return;
    this.view.query = query;
    this.changed();
  }

  async set_mask(mask: boolean): Promise<void> {
    if (mask === this.view.mask) return;
    const seq = ++this.weights_seq;
    this.busy = true;
    try {
      const by_head = await this.compute(this.view.sentence, mask);
      if (seq !== this.weights_seq) return;
      this.by_head = by_head;
      this.view.mask = mask;
      this.changed();
    } catch (e) {
      if (seq === this.weights_seq) this.sentence_error = error_message(e);
    } finally {
      if (seq === this.weights_seq) this.busy = false;
    }
  }

  async set_sentence(text: string): Promise<void> {
    const sentence = text.trim();
    const seq = ++this.weights_seq;
    this.busy = true;
    try {
      const by_head = await this.compute(sentence, this.view.mask);
      if (seq !== this.weights_seq) return;
      const tokens = by_head[this.view.head].tokens;
      const same_sentence = sentence === this.view.sentence;
      this.by_head = by_head;
      this.sentence_error = null;
      this.view.sentence = sentence;
      if (!same_sentence) this.view.query = this.default_query(sentence, tokens);
      this.changed();
    } catch (e) {
      if (seq === this.weights_seq) this.sentence_error = error_message(e);
    } finally {
      if (seq === this.weights_seq) this.busy = false;
    }
  }

  /** A lesson step points at a head and a query (and maybe a mask state). */
  async focus(f: HeadFocus): Promise<void> {
    if (f.mask !== undefined && f.mask !== this.view.mask) await this.set_mask(f.mask);
    if (this.by_head[f.head]) this.view.head = f.head;
    if (f.query >= 0 && f.query < this.tokens.length) this.view.query = f.query;
    this.focus_requests += 1;
    this.changed();
  }

  private default_query(sentence: string, tokens: string[]): number {
    if (sentence === this.default_sentence && WORKED_EXAMPLE_QUERY < tokens.length) return WORKED_EXAMPLE_QUERY;
    return tokens.length - 1;
  }

  private changed(): void {
    this.sync_url();
    this.check_progress();
  }

  private sync_url(): void {
    const search = write_view(this.view, this.default_sentence);
    if (search !== location.search) history.replaceState(history.state, '', search + location.hash);
  }

  private async compute(sentence: string, mask: boolean): Promise<Record<string, WeightsResponse>> {
    // One head first: a sentence the server refuses costs one failing request, not one per head.
    const first = await api.weights({ sentence, head: this.heads[0].name, mask });
    const rest = await Promise.all(this.heads.slice(1).map((h) => api.weights({ sentence, head: h.name, mask })));
    return Object.fromEntries([first, ...rest].map((a, i) => [this.heads[i].name, a]));
  }

  // ---- challenges ----

  /** Tell the server what is on screen; it decides which challenges that meets. */
  private check_progress(): void {
    const report = { learner: this.challenges.learner, lesson: LESSON_ID, ...$state.snapshot(this.view) };
    this.challenges.record(() => api.checkProgress(report), (p) => p, 'Your progress could not be saved: ').catch(() => {});
  }

  // ---- example programs ----

  private async load_programs(): Promise<void> {
    try {
      this.programs = (await api.programs(LESSON_ID)).programs;
    } catch (e) {
      this.programs_error = error_message(e);
    }
  }

  // ---- head split calculator ----

  private async load_split_presets(): Promise<void> {
    try {
      const first = await api.headSplitPresets();
      this.split_presets = first.presets;
      this.split = first;
      this.split_fields = { d_model: String(first.d_model), h: String(first.h) };
    } catch (e) {
      this.split_error = error_message(e);
    }
  }

  set_split(d_model: string, h: string): void {
    this.split_fields = { d_model, h };
    clearTimeout(this.split_timer);
    const seq = ++this.split_seq;
    if (d_model.trim() === '' || h.trim() === '') {
      this.split = null;
      this.split_error = d_model.trim() === '' ? 'Type the model width, d_model, as a whole number.' : 'Type the number of heads, h, as a whole number.';
      return;
    }
    this.split_timer = setTimeout(async () => {
      try {
        const answer = await api.headSplit(d_model.trim(), h.trim());
        if (seq !== this.split_seq) return;
        this.split = answer;
        this.split_error = null;
      } catch (e) {
        if (seq !== this.split_seq) return;
        this.split = null;
        this.split_error = error_message(e);
      }
    }, 200);
  }
}
