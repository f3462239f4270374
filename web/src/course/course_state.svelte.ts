// course_state.svelte.ts — the course as the server lists it (GET /api/lessons), with
// this learner's progress. Until the server answers, the lessons built into the page
// stand in, without progress.
import { api, ApiError } from '../lib/api';
import { learner_id } from '../lib/learner';
import type { CourseLesson } from '../lib/types';
import { lessons as built_in } from '../lessons';

class CourseState {
  lessons = $state<CourseLesson[]>(
    built_in.map((l) => ({ id: l.slug, number: l.number, title: l.title, total: 0, completed_count: 0, coming: false })),
  );
  from_server = $state(false);
  error = $state<string | null>(null);
  private seq = 0;

  async load(): Promise<void> {
    const my = ++this.seq;
    try {
      const answer = await api.lessons(learner_id());
      if (my !== this.seq) return;
      this.lessons = [...answer.lessons].sort((a, b) => a.number - b.number);
      this.from_server = true;
      this.error = null;
    } catch (e) {
      if (my === this.seq) this.error = e instanceof ApiError ? e.message : String(e);
    }
  }
}

export const course = new CourseState();
