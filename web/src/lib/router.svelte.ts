// router.svelte.ts — the course's small hash router: `#/lessons/<slug>` picks a lesson,
// `#/course` is the overview, `#/explorer` the model explorer, `#/glossary[/<term>]` the glossary; an empty hash opens the
// first lesson. The query string stays free for a page's own state (sentence, head,
// query, mask), so a link reproduces what the learner saw.
export interface Route {
  page: 'lesson' | 'course' | 'explorer' | 'glossary';
  lesson: string | null; // slug when page is 'lesson'; null for the default lesson
  term?: string | null; // the glossary entry to open at, when page is 'glossary'
}

function parse(hash: string): Route {
  if (/^#\/course\/?$/.test(hash)) return { page: 'course', lesson: null };
  if (/^#\/explorer\/?$/.test(hash)) return { page: 'explorer', lesson: null };
  const g = /^#\/glossary(?:\/([a-z0-9-]+))?\/?$/.exec(hash);
  if (g) return { page: 'glossary', lesson: null, term: g[1] ?? null };
  const m = /^#\/lessons\/([a-z0-9-]+)\/?$/.exec(hash);
  return { page: 'lesson', lesson: m ? m[1] : null };
}

class Router {
  route = $state<Route>(parse(typeof location === 'undefined' ? '' : location.hash));

  constructor() {
    if (typeof window !== 'undefined') {
      window.addEventListener('hashchange', () => (this.route = parse(location.hash)));
    }
  }
}

export const router = new Router();

export const lesson_href = (slug: string) => `#/lessons/${slug}`;
export const course_href = '#/course';
export const explorer_href = '#/explorer';
