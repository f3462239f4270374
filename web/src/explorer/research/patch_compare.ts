// patch_compare.ts — attribution patching's estimates against activation patching's measured
// values for the same request (docs/research.md, "Attribution patching"), computed from the two
// answers: the Pearson correlation of the two grids over their cells, the cell where they differ
// most, and whether both put their largest effect (patch_grid.ts's top_cell) in the same cell.
//   r = sum_i (a_i - mean a)(b_i - mean b) / sqrt(sum_i (a_i - mean a)^2 * sum_i (b_i - mean b)^2)
// What a correlation says (its bands) lives in patch_compare_bands.json, which Python's
// headlab.views.correlation_words reads too: the notebook's sentence and the explorer's are one.
import type { PatchResponse } from '../../lib/research_types';
import bands from './patch_compare_bands.json';
import { cell_words, fmt4, patch_panels, top_cell, type PatchCell, type PatchPanel } from './patch_grid';

export interface PatchComparison {
  cells: number; // the cells both grids have a value for
  correlation: number | null; // null when either grid is constant (or has fewer than 2 cells)
  disagree: { words: string; activation: number; attribution: number } | null; // the largest |difference|
  top_activation: { words: string; index: number[]; activation: number; attribution: number } | null;
  top_attribution: { words: string; index: number[]; activation: number; attribution: number } | null;
}

/** Pearson's correlation of two equally long lists, or null when either has no spread. */
export function pearson(a: number[], b: number[]): number | null {
  const n = a.length;
  if (n < 2 || b.length !== n) return null;
  const ma = a.reduce((s, x) => s + x, 0) / n;
  const mb = b.reduce((s, x) => s + x, 0) / n;
  let sab = 0,
    saa = 0,
    sbb = 0;
  for (let i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) ** 2;
    sbb += (b[i] - mb) ** 2;
  }
  return saa > 0 && sbb > 0 ? sab / Math.sqrt(saa * sbb) : null;
}

const same_index = (x: number[], y: number[]) => x.length === y.length && x.every((v, i) => v === y[i]);

/** The two answers cell by cell, or what keeps them from being compared. */
export function compare_patches(activation: PatchResponse, attribution: PatchResponse, bos_id: number | null): PatchComparison | string {
  const pa = patch_panels(activation, bos_id);
  const pb = patch_panels(attribution, bos_id);
  const shape = (ps: PatchPanel[]) => ps.map((p) => p.cells.map((row) => row.length).join(',')).join(';');
  if (activation.what !== attribution.what || activation.metric !== attribution.metric || shape(pa) !== shape(pb))
    return 'The two answers are not the same sweep (different what, metric or shape), so they cannot be compared cell by cell.';
  const a: number[] = [];
  const b: number[] = [];
  let worst: { panel: PatchPanel; cell: PatchCell; other: number; diff: number } | null = null;
  pa.forEach((panel, k) =>
    panel.cells.forEach((row, i) =>
      row.forEach((cell, j) => {
        const other = pb[k].cells[i][j];
        if (!cell || !other || !Number.isFinite(cell.value) || !Number.isFinite(other.value)) return;
        a.push(cell.value);
        b.push(other.value);
        const diff = Math.abs(cell.value - other.value);
        if (!worst || diff > worst.diff) worst = { panel, cell, other: other.value, diff };
      }),
    ),
  );
  const w = worst as { panel: PatchPanel; cell: PatchCell; other: number; diff: number } | null;
  // a cell's value in the other grid, by its coordinates
  const value_at = (ps: PatchPanel[], index: number[]) => {
    for (const p of ps) for (const row of p.cells) for (const c of row) if (c && same_index(c.index, index)) return c.value;
    return NaN;
  };
  const top = (r: PatchResponse, ps: PatchPanel[]) => {
    const t = top_cell(r, ps);
    return t ? { words: cell_words(t.panel, t.cell), index: t.cell.index, activation: value_at(pa, t.cell.index), attribution: value_at(pb, t.cell.index) } : null;
  };
  return {
    cells: a.length,
    correlation: pearson(a, b),
    disagree: w ? { words: cell_words(w.panel, w.cell), activation: w.cell.value, attribution: w.other } : null,
    top_activation: top(activation, pa),
    top_attribution: top(attribution, pb),
  };
}

/** What a correlation r says, by the first band of patch_compare_bands.json whose at_least r reaches
 * (at_least null: every r). A correlation says whether the same cells stand out, not whether the
 * sizes match (the largest difference says that). */
export function correlation_words(r: number): string {
  const band = bands.find((b) => b.at_least === null || r >= b.at_least);
  return band ? band.words : '';
}

/** The comparison in sentences, each chosen by the numbers. */
export function comparison_sentences(c: PatchComparison, direction: 'denoising' | 'noising'): { correlation: string; disagree: string; top: string } {
  const r = c.correlation;
  const how = r === null ? '' : correlation_words(r);
  const correlation =
    r === null
      ? `Over ${c.cells} cells the correlation is undefined: one of the grids has the same value in every cell.`
      : `Over ${c.cells} cells the estimates correlate with the measured values at ${fmt4(r)}: ${how}, whatever their sizes.`;
  const disagree = c.disagree
    ? `They differ most at ${c.disagree.words}: measured ${fmt4(c.disagree.activation)}, estimated ${fmt4(c.disagree.attribution)} (a difference of ${fmt4(Math.abs(c.disagree.activation - c.disagree.attribution))}).`
    : 'No cell has a value in both grids.';
  const effect = direction === 'noising' ? 'damage' : 'restoration';
  const ta = c.top_activation;
  const tb = c.top_attribution;
  const top =
    !ta || !tb
      ? 'The clean and corrupted runs give the same metric, so neither method has a top cell.'
      : same_index(ta.index, tb.index)
        ? `The top cells agree: both methods put the largest ${effect} at ${ta.words} (measured ${fmt4(ta.activation)}, estimated ${fmt4(ta.attribution)}).`
        : `The top cells differ: activation patching puts the largest ${effect} at ${ta.words} (measured ${fmt4(ta.activation)}, estimated there ${fmt4(ta.attribution)}), attribution patching at ${tb.words} (estimated ${fmt4(tb.attribution)}, measured there ${fmt4(tb.activation)}).`;
  return { correlation, disagree, top };
}
