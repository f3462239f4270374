// teacher_route.svelte.ts — the class pages' part of the hash: `#/teacher` (create a class
// or log in), `#/teacher/<CODE>` (the teacher's view), `#/join` and `#/join/<CODE>` (a
// learner joins). Anything else is the course router's (lib/router.svelte.ts).
export interface ClassRoute {
  page: 'teacher' | 'join' | null; // null: not a class page
  code: string | null; // the class code in the hash, upper case
}

export function parse_class_route(hash: string): ClassRoute {
  const m = /^#\/(teacher|join)(?:\/([A-Za-z0-9]{1,16}))?\/?$/.exec(hash);
  if (!m) return { page: null, code: null };
  return { page: m[1] as 'teacher' | 'join', code: m[2] ? m[2].toUpperCase() : null };
}

class ClassRouter {
  route = $state<ClassRoute>(parse_class_route(typeof location === 'undefined' ? '' : location.hash));

  constructor() {
    if (typeof window !== 'undefined') {
      window.addEventListener('hashchange', () => (this.route = parse_class_route(location.hash)));
    }
  }
}

export const class_router = new ClassRouter();

export const teacher_href = (code?: string) => (code ? `#/teacher/${code}` : '#/teacher');
export const join_href = (code?: string) => (code ? `#/join/${code}` : '#/join');
