// course_state.svelte.ts — the course as the server lists it (GET /api/lessons): order,
// titles, announced lessons, and this learner's progress. Until the server answers (or
// if it cannot), the lesson folders stand in, as "Lesson N" without progress.
import { api, ApiError } from '../lib/api';
import { learner_id } from '../lib/learner';
import type { CourseLesson } from '../lib/types';
import { lesson_pages } from '../lessons';

class CourseState {
  lessons = $state<CourseLesson[]>(
    lesson_pages.map((l) => ({ id: l.slug, number: l.number, title: `Lesson ${l.number}`, total: 0, completed_count: 0, coming: false })),
  );
  from_server = $state(false);
  error = $state<string | null>(null);
  private seq = 0;

  /** The lessons a learner can open: listed, not coming, and with a page in this build. */
  readonly open = $derived(this.lessons.filter((l) => !l.coming && lesson_pages.some((p) => p.slug === l.id)));

  /** The course's number and title of a lesson with a page (see lessons/index.ts). */
  entry_of(slug: string): { number: number; title: string } {
    const listed = this.lessons.find((l) => l.id === slug);
    if (listed) return listed;
    const number = lesson_pages.find((p) => p.slug === slug)?.number ?? 0;
    return { number, title: `Lesson ${number}` };
  }

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
