// view_state.ts — what the learner has set up in this lesson, and its home in the URL's
// query string, like the first lesson's: ?induction_text=...&induction_head=1.2
// &sink_text=...&sink_head=1.3&limits_text=... A part's own default is left out, so the
// plain lesson keeps a clean URL and a link reproduces what the learner saw.
import type { HeadRef } from '../../lib/types';

export interface TrainedHeadsView {
  induction_text: string;
  induction_head: HeadRef;
  sink_text: string;
  sink_head: HeadRef;
  limits_text: string;
}

const TEXT_KEYS = ['induction_text', 'sink_text', 'limits_text'] as const;
const HEAD_KEYS = ['induction_head', 'sink_head'] as const;

/** "1.2" -> { layer: 1, head: 2 }; anything else is absent. */
export function parse_head(s: string | null): HeadRef | undefined {
  const m = s ? /^(\d{1,3})\.(\d{1,3})$/.exec(s) : null;
  return m ? { layer: Number(m[1]), head: Number(m[2]) } : undefined;
}

/** What the URL asks for; anything missing or malformed is absent. */
export function read_view(search: string): Partial<TrainedHeadsView> {
  const params = new URLSearchParams(search);
  const view: Partial<TrainedHeadsView> = {};
  for (const k of TEXT_KEYS) {
    const v = params.get(k);
    if (v !== null && v.trim() !== '') view[k] = v;
  }
  for (const k of HEAD_KEYS) {
    const h = parse_head(params.get(k));
    if (h) view[k] = h;
  }
  return view;
}

/**
 * The query string (with its "?", or "" when empty) after one part's change: `set`
 * holds the values to write, and a value equal to its default in `defaults` is removed.
 * Keys of other pages are kept.
 */
export function write_view(search: string, set: Partial<TrainedHeadsView>, defaults: Partial<TrainedHeadsView>): string {
  const params = new URLSearchParams(search);
  for (const [k, v] of Object.entries(set) as [keyof TrainedHeadsView, string | HeadRef][]) {
    const text = typeof v === 'string' ? v : `${v.layer}.${v.head}`;
    const d = defaults[k];
    const default_text = d === undefined ? undefined : typeof d === 'string' ? d : `${d.layer}.${d.head}`;
    if (text === default_text) params.delete(k);
    else params.set(k, text);
  }
  const s = params.toString();
  return s ? '?' + s : '';
}

/** Writes one part's change to the address bar without a new history entry. */
export function sync_view(set: Partial<TrainedHeadsView>, defaults: Partial<TrainedHeadsView>): void {
  const search = write_view(location.search, set, defaults);
  if (search !== location.search) history.replaceState(history.state, '', (search || location.pathname) + location.hash);
}
