// lesson_state.svelte.ts — what the whole word-order lesson shares: the loaded model, the
// learner's progress, and sending an answer. Each part keeps its own runs in its own state.
import { LessonProgress } from '../../course/lesson_progress.svelte';
import { api, ApiError, error_message } from '../../lib/api';
import type { ModelInfo } from '../../lib/types';
import { LESSON_ID } from './text';
import type { WordOrderAnswer, WordOrderChallenge, WordOrderCheckResponse } from '../../lib/positions_types';

export { error_message as message };

export class WordOrderLessonState {
  status = $state<'loading' | 'ready' | 'no-model' | 'failed'>('loading');
  load_error = $state<string | null>(null);
  model = $state<ModelInfo | null>(null);
  readonly challenges = new LessonProgress(LESSON_ID);

  async start(): Promise<void> {
    void this.challenges.load();
    try {
      this.model = await api.model();
      this.status = 'ready';
    } catch (e) {
      this.status = e instanceof ApiError && e.status === 503 ? 'no-model' : 'failed';
      this.load_error = error_message(e);
    }
  }

  /** Sends one answer; the server checks it on the evidence it carries and records a right one. */
  check(challenge: WordOrderChallenge, answer: WordOrderAnswer): Promise<WordOrderCheckResponse> {
    const { learner } = this.challenges;
    return this.challenges.record(() => api.checkWordOrder(learner, challenge, answer), (r) => r.progress);
  }
}

export const pct = (x: number) => `${Math.round(x * 100)}%`;
export const fixed = (x: number, d = 2) => x.toFixed(d);

/**
 * A field that must hold a whole number from `min` to `max`, as typed: its value, or one
 * plain message naming the field and its limits.
 */
export function whole_number(typed: string | number | null | undefined, min: number, max: number, field: string): { value: number | null; error: string | null } {
  const s = String(typed ?? '').trim();
  const limits = `${field} must be a whole number from ${min.toLocaleString('en')} to ${max.toLocaleString('en')}`;
  if (s === '') return { value: null, error: `${limits}; it is empty.` };
  if (!/^[+-]?\d+$/.test(s)) return { value: null, error: `${limits}; “${s.slice(0, 20)}” is not one.` };
  const v = Number(s);
  if (v < min || v > max) return { value: null, error: `${limits}; ${v.toLocaleString('en')} is ${v < min ? 'below' : 'above'} that.` };
  return { value: v, error: null };
}
