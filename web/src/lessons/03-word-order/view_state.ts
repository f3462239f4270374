// view_state.ts — what the learner has set up in this lesson, kept in the URL's query string
// like the other lessons': ?order_text=...&order_head=2&pairs=5,2,905,902&rope_theta=500000
// &rope_hs=128. A value equal to its default is left out, so the plain lesson keeps a clean
// URL and a link reproduces what the learner saw. Keys of other pages are kept.

export interface WordOrderView {
  order_text: string;
  order_head: number;
  pairs: [number, number, number, number];
  rope_theta: string;
  rope_hs: string;
}

/** What the URL asks for; anything missing or malformed is absent. */
export function read_view(search: string): Partial<WordOrderView> {
  const p = new URLSearchParams(search);
  const view: Partial<WordOrderView> = {};
  const text = p.get('order_text');
  if (text !== null && text.trim() !== '') view.order_text = text;
  const head = p.get('order_head');
  if (head !== null && /^\d{1,3}$/.test(head)) view.order_head = Number(head);
  const pairs = p.get('pairs')?.split(',');
  if (pairs?.length === 4 && pairs.every((x) => /^\d{1,4}$/.test(x))) view.pairs = pairs.map(Number) as WordOrderView['pairs'];
  for (const k of ['rope_theta', 'rope_hs'] as const) {
    const v = p.get(k);
    if (v !== null && v.length <= 32) view[k] = v;
  }
  return view;
}

const text_of = (v: unknown) => (Array.isArray(v) ? v.join(',') : String(v));

/** The query string (with its "?", or "") after one part's change. */
export function write_view(search: string, set: Partial<WordOrderView>, defaults: Partial<WordOrderView>): string {
  const params = new URLSearchParams(search);
  for (const [k, v] of Object.entries(set)) {
    const d = defaults[k as keyof WordOrderView];
    if (d !== undefined && text_of(v) === text_of(d)) params.delete(k);
    else params.set(k, text_of(v));
  }
  const s = params.toString();
  return s ? '?' + s : '';
}

/** Writes one part's change to the address bar without a new history entry. */
export function sync_view(set: Partial<WordOrderView>, defaults: Partial<WordOrderView>): void {
  const search = write_view(location.search, set, defaults);
  if (search !== location.search) history.replaceState(history.state, '', (search || location.pathname) + location.hash);
}
