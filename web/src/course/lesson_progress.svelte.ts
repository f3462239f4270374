// lesson_progress.svelte.ts — one lesson's challenges for this learner, as the server keeps
// them: loaded once, replaced by every answer the server checks, cleared on request. Calls
// run one after another in the order they were made, so a late answer never overwrites a
// later reset.
//
//   const challenges = new LessonProgress('word-order');
//   void challenges.load();
//   const r = await challenges.record(() => api.checkWordOrder(...), (r) => r.progress);
import { api, error_message } from '../lib/api';
import { learner_id } from '../lib/learner';
import type { ProgressResponse } from '../lib/types';

export class LessonProgress {
  progress = $state<ProgressResponse | null>(null);
  error = $state<string | null>(null);
  readonly learner = learner_id();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(readonly lesson: string) {}

  load(): Promise<void> {
    return this.quietly(() => api.progress(this.learner, this.lesson), 'Your progress could not be loaded: ');
  }

  reset(): Promise<void> {
    return this.quietly(() => api.resetProgress(this.learner, this.lesson), 'Your progress could not be reset: ');
  }

  /**
   * Makes a call whose answer carries the progress (a checked answer, a reported view) after
   * the calls before it, and keeps that progress. A failure rejects for the caller to show
   * where the learner acted; with `failure`, it is also shown with the challenges, after
   * those words.
   */
  async record<T>(call: () => Promise<T>, progress_of: (answer: T) => ProgressResponse, failure?: string): Promise<T> {
    const answer = this.chain.then(call);
    this.chain = answer.then(
      (a) => {
        this.progress = progress_of(a);
        this.error = null;
      },
      (e) => {
        if (failure !== undefined) this.error = failure + error_message(e);
      },
    );
    await this.chain;
    return answer;
  }

  private async quietly(call: () => Promise<ProgressResponse>, failure: string): Promise<void> {
    try {
      await this.record(call, (p) => p, failure);
    } catch {
      // this.error says it
    }
  }
}
