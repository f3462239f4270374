// narrow.ts — when the server refuses a sweep over its work limit (413 too_long: "... about
// 3.2e+11 multiply-adds, more than this server's limit (1.0e+11) ..."; docs/api.md, POST
// /api/model/patch and /api/model/path-patch), the narrower sweeps that would fit, worked out
// from the refusal's own numbers, for the view to offer instead of only the error. Each offer's
// work is counted as the server counts it (research::patch_cost, path_patch_cost) relative to the
// refused sweep's, and kept under the limit with a margin; the server checks the narrowed
// request again (tests/web/narrow.test.mjs sends every offer of generated sweeps to a server).
import { ApiError } from '../../lib/api';

export interface WorkRefusal {
  cost: number; // the sweep's multiply-adds, as the message gives them
  limit: number; // the server's limit
  message: string; // the server's own words
  forwards?: number; // the sweep's forwards, when the message gives them
  pairs?: number; // the prompt pairs, when the message gives them
}

/** The refusal's cost and limit, or null when the error is not a work-limit refusal. */
export function work_refusal(e: unknown): WorkRefusal | null {
  if (!(e instanceof ApiError) || e.status !== 413) return null;
  const m = /about (\d+(?:\.\d+)?e[+-]?\d+) multiply-adds.*?limit \((\d+(?:\.\d+)?e[+-]?\d+)\)/.exec(e.message);
  if (!m) return null;
  const cost = Number(m[1]);
  const limit = Number(m[2]);
  if (!(cost > limit && limit > 0)) return null;
  const f = /(\d[\d,]*) forwards over (\d+) prompt pairs?/.exec(e.message) ?? /\((\d[\d,]*) forwards\)/.exec(e.message);
  const counts = f ? { forwards: Number(f[1].replace(/,/g, '')), ...(f[2] ? { pairs: Number(f[2]) } : {}) } : {};
  return { cost, limit, message: e.message, ...counts };
}

const MARGIN = 0.8; // the cost in the message has two digits; a batch's pairs may differ in length

/** How many of n fit, or 0 when not even one does. */
export function how_many_fit(r: WorkRefusal, n: number): number {
  return Math.min(n - 1, Math.floor((n * MARGIN * r.limit) / r.cost));
}

/** "0–3, 5, 7–9" for a sorted list of whole numbers. */
export function ranges_text(xs: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) ++j;
    parts.push(j === i ? String(xs[i]) : `${xs[i]}–${xs[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}

/** "0-3, 5" (or "0–3") as [0, 1, 2, 3, 5]; blank is null (all); anything else says what is wrong. */
export function parse_ranges(text: string, name: string, below: number): number[] | null | string {
  if (text.trim() === '') return null;
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)\s*(?:[-–]\s*(\d+)\s*)?$/.exec(part);
    if (!m) return `${name}: “${part.trim()}” is not a number or a range such as 2–5.`;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) return `${name}: the range ${a}–${b} runs backwards.`;
    if (b >= below) return `${name}: ${b} is past the last one (${below - 1}).`;
    for (let x = a; x <= b; ++x) out.add(x);
  }
  return [...out].sort((x, y) => x - y);
}

/** One narrower sweep the view offers: the fields it sets, and what it says. */
export interface Narrowing {
  label: string;
  layers?: number[];
  positions?: number[];
  what?: string;
  pairs?: number; // keep the batch's first pairs
}

/** What an activation-patching sweep's work depends on, besides what it sweeps. */
export interface PatchShape {
  n_layer: number; // the model's layers
  metric: string; // normalized runs clean and corrupted twice (4 base runs), the others once (2)
}

/** A sweep by position patches each (layer, position); over all positions, each layer's heads once. */
const by_position = (what: string) => !what.endsWith('_all_pos') && !what.includes('_all_pos_');

/** An activation-patching sweep's narrower versions that fit: fewer pairs of a batch (the first
 *  ones), fewer layers (the first ones), fewer positions (the last ones, nearest the answer), both,
 *  or heads over all positions instead of by position. Each is counted as research::patch_cost
 *  counts work, per pair and token in block-runs: the metric's base runs of every layer, and per
 *  patched site a run from its layer on (L − layer); each swept layer has m sites per position (by
 *  position) or m in all, m read from the refusal's forwards. The first layers cost the most, and
 *  the base runs stay whatever is kept, so a share of the layers or positions would not do. */
export function patch_narrowings(
  r: WorkRefusal,
  layers: number[],
  positions: number[],
  what: string,
  pairs: number,
  shape: PatchShape,
): Narrowing[] {
  const L = shape.n_layer;
  const base = (shape.metric === 'normalized' ? 4 : 2) * L;
  const by_pos = by_position(what);
  const per_layer = (nl: number) => layers.slice(0, nl).reduce((a, l) => a + L - l, 0);
  const cells = (np: number, pos: boolean) => (pos ? np : 1);
  const sites_per_pair = layers.length * cells(positions.length, by_pos);
  const m = r.forwards !== undefined && r.pairs !== undefined && sites_per_pair > 0 ? Math.max(0, r.forwards / r.pairs - base / L) / sites_per_pair : 1;
  const runs = (nl: number, np: number, pos = by_pos) => base + m * cells(np, pos) * per_layer(nl);
  const budget = (MARGIN * r.limit * runs(layers.length, positions.length)) / r.cost; // in runs, for all the pairs
  const fits = (x: number) => x <= budget;
  const out: Narrowing[] = [];
  const kb = how_many_fit(r, pairs);
  if (kb >= 1) out.push({ label: `the first ${kb} of the ${pairs} pairs`, pairs: kb });
  if (by_pos && positions.length === 0) return out; // the prompt's positions unknown: its work per layer too
  let kl = 0;
  while (kl + 1 < layers.length && fits(runs(kl + 1, positions.length))) ++kl;
  if (kl >= 1) {
    const keep = layers.slice(0, kl);
    out.push({ label: `layers ${ranges_text(keep)} only (${kl} of ${layers.length})`, layers: keep });
  }
  let kp = 0;
  if (by_pos) while (kp + 1 < positions.length && fits(runs(layers.length, kp + 1))) ++kp;
  if (kp >= 1) {
    const keep = positions.slice(-kp);
    out.push({ label: `positions ${ranges_text(keep)} only (the last ${kp} of ${positions.length})`, positions: keep });
  }
  if (kl < 1 && kp < 1 && by_pos && layers.length > 1 && positions.length > 1) {
    // neither alone: the first layer with the last positions that fit beside it
    const np = Math.min(positions.length - 1, m > 0 ? Math.floor((budget - base) / (m * per_layer(1))) : 0);
    if (np >= 1) {
      const kl2 = layers.slice(0, 1);
      const kp2 = positions.slice(-np);
      out.push({ label: `layers ${ranges_text(kl2)} and positions ${ranges_text(kp2)}`, layers: kl2, positions: kp2 });
    }
  }
  // by position costs a run per position where over all positions costs one
  if (what.includes('_by_pos') && fits(runs(layers.length, 1, false))) {
    const all = what.replace('_by_pos', '_all_pos'); // z_by_pos → z_all_pos, attn_head_by_pos_every → attn_head_all_pos_every
    out.push({ label: `${all} instead: each head over all positions at once`, what: all });
  }
  return out;
}

/** An attribution-patching sweep's narrower versions that fit: its cost is two forwards and a
 *  backward per pair whatever the layers, positions or what it sweeps, so only fewer pairs of a
 *  batch (the first ones) make it cheaper. */
export function attribution_narrowings(r: WorkRefusal, pairs: number): Narrowing[] {
  const kb = how_many_fit(r, pairs);
  return kb >= 1 ? [{ label: `the first ${kb} of the ${pairs} pairs`, pairs: kb }] : [];
}

/** Where a path-patching sweep's senders send: receiver heads' layers, or the final residual stream. */
export type PathReceiverLayers = number[] | 'final';

/** A path-patching sweep's work per token of a pair, in block-runs, as research::path_patch_cost
 *  counts it with the server's shortcuts: the two runs of the pair (2 L); each sender's run from its
 *  own layer (L − layer) and, into receiver heads, the receivers' run from the first receiver's
 *  layer (L − first); a sender at or after the last receiver's layer reaches none and runs nothing. */
export function path_sender_costs(n_layer: number, senders: string[], receivers: PathReceiverLayers): { base: number; each: number[] } {
  const heads = receivers !== 'final';
  const first = heads ? Math.min(...receivers) : n_layer;
  const last = heads ? Math.max(...receivers) : n_layer;
  const each = senders.map((s) => {
    const layer = Number(s.split('.')[0]);
    if (heads && layer >= last) return 0;
    return n_layer - layer + (heads ? n_layer - first : 0);
  });
  return { base: 2 * n_layer, each };
}

/** A path-patching sweep's narrower version: the first senders that reach a receiver and fit.
 *  The first (lowest) senders cost the most, so they are counted one by one from the cost model,
 *  not as a share; senders that reach no receiver cost nothing, show nothing, and are left out. */
export function sender_narrowing(
  r: WorkRefusal,
  senders: string[],
  n_layer: number,
  receivers: PathReceiverLayers,
): { label: string; senders: string[] } | null {
  const { base, each } = path_sender_costs(n_layer, senders, receivers);
  const total = base + each.reduce((a, b) => a + b, 0);
  const budget = (MARGIN * r.limit * total) / r.cost; // in the same units as total
  const reach = senders.filter((_, i) => each[i] > 0);
  const keep: string[] = [];
  let spent = base;
  for (let i = 0; i < senders.length; i++) {
    if (each[i] === 0) continue;
    if (spent + each[i] > budget) break;
    spent += each[i];
    keep.push(senders[i]);
  }
  if (keep.length === 0 || keep.length === reach.length) return null; // none fits, or (a wrong cost) all of them again
  const of = reach.length === senders.length ? `${senders.length} senders` : `${reach.length} senders that reach a receiver`;
  const k = keep.length;
  return { label: `the first ${k} of the ${of} (${keep[0]}${k > 1 ? ` … ${keep[k - 1]}` : ''})`, senders: keep };
}
