// lesson_state.svelte.ts — what the whole trained-heads lesson shares: the loaded model,
// the head scanner's report, the learner's progress, and answering a challenge. Each
// part keeps its own runs of the model in its own small state class.
import { LessonProgress } from '../../course/lesson_progress.svelte';
import { api, ApiError, error_message } from '../../lib/api';
import { heads_labelled, top_head, token_label, token_labels } from '../../lib/heads';
import type {
  ModelInfo,
  ModelToken,
  ScanReport,
  ScannedHead,
  TrainedHeadsCheckRequest,
  TrainedHeadsCheckResponse,
} from '../../lib/types';
import { LESSON_ID } from './text';

export { error_message as message };

export class TrainedHeadsLessonState {
  status = $state<'loading' | 'ready' | 'no-model' | 'failed'>('loading');
  load_error = $state<string | null>(null);
  model = $state<ModelInfo | null>(null);
  scan = $state<ScanReport | null>(null);
  scan_error = $state<string | null>(null);
  readonly challenges = new LessonProgress(LESSON_ID);

  /** The model's clearest previous-token head: labelled if any is, else the top scorer. */
  previous_head = $derived<ScannedHead | null>(
    this.scan ? (heads_labelled(this.scan, 'previous_token')[0] ?? top_head(this.scan, 'previous_token')) : null,
  );
  /** Whether the heads above carry the scanner's label, or are only the best scorers. */
  previous_labelled = $derived(this.scan ? heads_labelled(this.scan, 'previous_token').length > 0 : false);
  induction_head = $derived<ScannedHead | null>(
    this.scan ? (heads_labelled(this.scan, 'induction')[0] ?? top_head(this.scan, 'induction')) : null,
  );
  sink_heads = $derived<ScannedHead[]>(this.scan ? heads_labelled(this.scan, 'sink') : []);
  /** Heads that weigh the first token heavily and do fetch something from it (not sinks). */
  first_token_heads = $derived<ScannedHead[]>(this.scan ? heads_labelled(this.scan, 'first_token') : []);

  async start(): Promise<void> {
    void this.challenges.load();
    try {
      this.model = await api.model();
    } catch (e) {
      this.status = e instanceof ApiError && e.status === 503 ? 'no-model' : 'failed';
      this.load_error = error_message(e);
      return;
    }
    this.status = 'ready';
    try {
      this.scan = await api.scan();
    } catch (e) {
      this.scan_error = 'The head scanner could not report on this model: ' + error_message(e);
    }
  }

  label = (t: ModelToken) => token_label(t, this.model?.bos_token.id ?? null);
  /** The labels of a run's tokens; pieces of a character show their bytes. text: what the run was sent. */
  labels = (tokens: ModelToken[], text: string) => token_labels(tokens, text, this.model?.bos_token.id ?? null);

  /** Sends one answer to the server, which checks it against the model and records a right one. */
  check(challenge: TrainedHeadsCheckRequest['challenge'], answer: TrainedHeadsCheckRequest['answer']): Promise<TrainedHeadsCheckResponse> {
    const { learner } = this.challenges;
    return this.challenges.record(() => api.checkTrainedHeads({ learner, challenge, answer }), (r) => r.progress);
  }
}
