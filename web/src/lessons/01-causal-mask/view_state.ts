// view_state.ts — what the learner is looking at in this lesson, and its home in the
// URL's query string: ?sentence=...&head=induction&query=7&mask=off. The lesson's own
// sentence and the mask being on are left out, so the plain lesson keeps a clean URL.
import type { HeadName } from '../../lib/types';

export interface LessonView {
  sentence: string;
  head: HeadName;
  query: number; // 0-based token position
  mask: boolean;
}

/** What the URL asks for; anything missing or malformed is absent. */
export function read_view(search: string): Partial<LessonView> {
  const params = new URLSearchParams(search);
  const view: Partial<LessonView> = {};
  const sentence = params.get('sentence');
  if (sentence !== null && sentence.trim() !== '') view.sentence = sentence;
  const head = params.get('head');
  if (head) view.head = head;
  const query = params.get('query');
  if (query !== null && /^\d{1,3}$/.test(query)) view.query = Number(query);
  const mask = params.get('mask');
  if (mask === 'off') view.mask = false;
  else if (mask === 'on') view.mask = true;
  return view;
}

/** The query string for a view, with its leading "?". */
export function write_view(view: LessonView, default_sentence: string): string {
  const params = new URLSearchParams();
  if (view.sentence !== default_sentence) params.set('sentence', view.sentence);
  params.set('head', view.head);
  params.set('query', String(view.query));
  if (!view.mask) params.set('mask', 'off');
  return '?' + params.toString();
}
