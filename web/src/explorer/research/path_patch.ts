// path_patch.ts — path patching in the explorer (POST /api/model/path-patch; docs/research.md,
// "Path patching"): the request from the heads the learner ticked, and the answer as one
// layer × head panel the patching heatmap draws (every layer of the model, a head that was not
// a sender left empty), the sentence the numbers choose, and the CSV.
import { request } from '../../lib/api';
import { to_csv } from '../../lib/export';
import type { PatchMetric, ResearchToken } from '../../lib/research_types';
import { fmt4, type PatchCell, type PatchPanel } from './patch_grid';

export type ReceiverInput = 'q' | 'k' | 'v';
export const RECEIVER_INPUTS: ReceiverInput[] = ['q', 'k', 'v'];

export interface PathPatchRequest {
  clean: string;
  corrupted: string;
  answer: string;
  wrong?: string;
  metric: PatchMetric;
  noising: boolean;
  senders: 'all' | string[]; // "L.H"
  receivers: 'final' | string[]; // "L.H:q" | ":k" | ":v"
}

export interface PathPatchResponse {
  kind: 'path_patch';
  metric: PatchMetric;
  direction: 'denoising' | 'noising';
  senders: 'all' | string[];
  receivers: 'final' | string[];
  axes: ['layer', 'head'];
  values: (number | null)[][]; // (layers.length, heads): null where the head was not a sender
  layers: number[]; // the layers that hold a sender
  heads: number;
  clean: number;
  corrupted: number;
  tokens: ResearchToken[];
  corrupted_tokens: ResearchToken[];
  pairs: number;
  cost: { forwards: number; block_tokens: number; multiply_adds: number };
  skipped: number;
}

export const path_patch = (req: PathPatchRequest) => request<PathPatchResponse>('POST', '/api/model/path-patch', req);

/** A head as the API names it. */
export const head_key = (layer: number, head: number) => `${layer}.${head}`;

/** Heads "L.H" in the model's order. */
export function sorted_heads(heads: Iterable<string>): string[] {
  return [...heads].sort((a, b) => {
    const [la, ha] = a.split('.').map(Number);
    const [lb, hb] = b.split('.').map(Number);
    return la - lb || ha - hb;
  });
}

/** The senders field: "all" when every head of the model is ticked, else the ticked heads. */
export function senders_field(ticked: Set<string>, n_layer: number, n_head: number): 'all' | string[] {
  return ticked.size === n_layer * n_head ? 'all' : sorted_heads(ticked);
}

/** The receivers field: "final", or each ticked receiver head with each ticked input. */
export function receivers_field(to_final: boolean, heads: Set<string>, inputs: Set<ReceiverInput>): 'final' | string[] {
  if (to_final) return 'final';
  const out: string[] = [];
  for (const h of sorted_heads(heads)) for (const x of RECEIVER_INPUTS) if (inputs.has(x)) out.push(`${h}:${x}`);
  return out;
}

/** The answer as one panel over every layer of the model: rows layers, columns heads. */
export function path_panel(r: PathPatchResponse, n_layer: number): PatchPanel {
  const heads = Array.from({ length: r.heads }, (_, h) => h);
  const cells: (PatchCell | null)[][] = Array.from({ length: n_layer }, (_, l) => {
    const i = r.layers.indexOf(l);
    return heads.map((h) => {
      const v = i < 0 ? null : r.values[i][h];
      return v === null || v === undefined ? null : { value: v, index: [l, h], row: l, col: h };
    });
  });
  return {
    title: '',
    row_axis: 'layer',
    col_axis: 'head',
    row_labels: Array.from({ length: n_layer }, (_, l) => `layer ${l}`),
    col_labels: heads.map((h) => `head ${h}`),
    col_index: heads,
    col_notes: heads.map(() => null),
    cells,
  };
}

/** Where the senders' paths end, in words. */
export function receivers_words(r: PathPatchResponse): string {
  return r.receivers === 'final' ? 'the final residual stream (the logits)' : `the inputs ${r.receivers.join(', ')}`;
}

/** The sentence under the heatmap, chosen by the numbers: the sender whose path moves the
 *  metric furthest from the run it starts in (noising: away from the clean run; denoising:
 *  toward it), as a share of the clean − corrupted range. */
export function path_summary(r: PathPatchResponse, panel: PatchPanel): string {
  const range = r.clean - r.corrupted;
  if (!(Math.abs(range) > 0)) return `The clean and corrupted runs give the same ${r.metric} (${fmt4(r.clean)}), so no path can move it.`;
  let best: { c: PatchCell; effect: number } | null = null;
  for (const row of panel.cells)
    for (const c of row) {
      if (!c || !Number.isFinite(c.value)) continue;
      const effect = r.direction === 'noising' ? (r.clean - c.value) / range : (c.value - r.corrupted) / range;
      if (!best || effect > best.effect) best = { c, effect };
    }
  if (!best) return 'No sender was run.';
  const head = head_key(best.c.index[0], best.c.index[1]);
  const pct = `${Math.round(100 * best.effect)}%`;
  const runs = `clean run ${fmt4(r.clean)}, corrupted run ${fmt4(r.corrupted)}`;
  if (best.effect < 0.05)
    return `No sender’s path to ${receivers_words(r)} moves ${r.metric} by 5% of the clean–corrupted range (${runs}); the largest is head ${head}, ${pct}.`;
  return r.direction === 'noising'
    ? `The path that matters most: head ${head} → ${receivers_words(r)}. Corrupting it alone takes ${r.metric} to ${fmt4(best.c.value)}, ${pct} of the way from the clean run to the corrupted one (${runs}).`
    : `The path that matters most: head ${head} → ${receivers_words(r)}. Restoring it alone brings ${r.metric} to ${fmt4(best.c.value)}, ${pct} of the way from the corrupted run to the clean one (${runs}).`;
}

/** One row per sender that was run: layer, head, value. */
export function path_csv(panel: PatchPanel): string {
  const rows: unknown[][] = [];
  for (const row of panel.cells) for (const c of row) if (c) rows.push([c.index[0], c.index[1], c.value]);
  return to_csv(['layer', 'head', 'value'], rows);
}
