// lesson_state.svelte.ts — what the whole word-order lesson shares: the loaded model, the
// learner's progress, and sending an answer. Each part keeps its own runs in its own state.
import { api, ApiError } from '../../lib/api';
import { learner_id } from '../../lib/learner';
import type { ModelInfo, ProgressResponse } from '../../lib/types';
import { word_order_api } from './api';
import { LESSON_ID } from './text';
import type { WordOrderAnswer, WordOrderChallenge, WordOrderCheckResponse } from './types';

export const message = (e: unknown) => (e instanceof ApiError ? e.message : 'Something went wrong: ' + String(e));

export class WordOrderLessonState {
  status = $state<'loading' | 'ready' | 'no-model' | 'failed'>('loading');
  load_error = $state<string | null>(null);
  model = $state<ModelInfo | null>(null);
  progress = $state<ProgressResponse | null>(null);
  progress_error = $state<string | null>(null);
  readonly learner = learner_id();

  async start(): Promise<void> {
    void this.load_progress();
    try {
      this.model = await api.model();
      this.status = 'ready';
    } catch (e) {
      this.status = e instanceof ApiError && e.status === 503 ? 'no-model' : 'failed';
      this.load_error = message(e);
    }
  }

  private async load_progress(): Promise<void> {
    try {
      this.progress = await api.progress(this.learner, LESSON_ID);
      this.progress_error = null;
    } catch (e) {
      this.progress_error = 'Your progress could not be loaded: ' + message(e);
    }
  }

  async reset_progress(): Promise<void> {
    try {
      this.progress = await api.resetProgress(this.learner, LESSON_ID);
      this.progress_error = null;
    } catch (e) {
      this.progress_error = 'Your progress could not be reset: ' + message(e);
    }
  }

  /** Sends one answer; the server checks it on the evidence it carries and records a right one. */
  async check(challenge: WordOrderChallenge, answer: WordOrderAnswer): Promise<WordOrderCheckResponse> {
    const result = await word_order_api.check(this.learner, challenge, answer);
    this.progress = result.progress;
    this.progress_error = null;
    return result;
  }
}

/** A token as it reads on screen: spaces at the ends dropped, a token of spaces shown as dots. */
export const token_text = (t: string) => {
  const s = t.replace(/\n/g, '↵');
  return s.trim() === '' ? s.replace(/ /g, '·') : s.trim();
};
export const pct = (x: number) => `${Math.round(x * 100)}%`;
export const fixed = (x: number, d = 2) => x.toFixed(d);
