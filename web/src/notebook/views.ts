// views.ts — the data python/headlab/views.py hands to headlabViews.render, one shape per kind.
// Each is the explorer's own type (lib/research_types.ts), so the same components draw it.
import type { LensResponse, PatchResponse } from '../lib/research_types';

export type ViewKind = 'pattern' | 'patching' | 'patch_compare' | 'lens';

/** attention_patterns: one figure per head; rows ragged as the API sends them, row q holding keys 0..q. */
export interface PatternData {
  tokens: string[]; // (T,)
  heads: { title: string; head: string; rows: number[][] }[]; // rows (T, q+1)
}

/** patching_heatmap: model.patch's answer in the API's shape, without the run's cost; values may hold NaN
 *  (path patching's heads that were no sender), drawn as empty cells. `pairs` comes with
 *  attribution patching's answers (the sentence under the heatmap counts them). */
export type PatchData = Omit<PatchResponse, 'pairs' | 'cost' | 'skipped'> & { pairs?: number; title?: string };

/** patching_comparison: activation patching's measured sweep and attribution patching's estimates of the
 *  same sweep (same what, metric, layers and positions), drawn side by side under the explorer's comparison. */
export interface PatchCompareData {
  measured: PatchData;
  estimated: PatchData; // method 'attribution'
}

/** lens_table: model.lens's answer in the API's shape, and the cell read out first. */
export interface LensData {
  lens: LensResponse;
  pointed: { layer: number; pos: number } | null;
}
