// router.svelte.ts — the course's small hash router: `#/lessons/<slug>` picks a lesson,
// and an empty hash opens the first. The query string stays free for the lesson's own
// state (sentence, head, query, mask), so a link reproduces what the learner saw.
export interface Route {
  lesson: string | null; // slug, null for the default lesson
}

function parse(hash: string): Route {
  const m = /^#\/lessons\/([a-z0-9-]+)\/?$/.exec(hash);
  return { lesson: m ? m[1] : null };
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
