// patch_grid.ts — a patching sweep's answer (POST /api/model/patch) as flat 2-D panels a
// heatmap draws, the diverging colour scale they use (0 in the middle), the sentence that
// reads the largest effect out of the numbers, and the panels as SVG and CSV.
//   axes (layer, pos)           → one panel: rows layers, columns positions
//   axes (layer, head)          → one panel: rows layers, columns heads
//   axes (layer, pos, head)     → one panel: rows "layer.head", columns positions
//   axes (layer, head, dest_pos)→ one panel: rows "layer.head", columns positions
//   a leading patch_type axis   → one panel per patch type, each as above
import { to_csv } from '../../lib/export';
import type { Nested, PatchResponse, ResearchToken } from '../../lib/research_types';

export interface PatchCell {
  value: number;
  index: number[]; // the cell's coordinates on the answer's axes: [layer, pos], [layer, pos, head], ...
  row: number; // the panel row and column it is drawn in
  col: number;
}
export interface PatchPanel {
  title: string; // "" for a sweep of one panel; the patch type for the *_every sweeps
  row_axis: string; // "layer" or "layer.head"
  col_axis: 'pos' | 'head';
  row_labels: string[]; // (R,)
  col_labels: string[]; // (C,) the clean token at each position, or "head h"
  col_index: number[]; // (C,) the position (or head) number of each column
  col_notes: (string | null)[]; // (C,) the corrupted token where it differs from the clean one
  cells: (PatchCell | null)[][]; // (R, C)
}

/** How a research token reads in a label: the BOS token as ⟨start⟩, blanks made visible. */
export function research_token_label(t: ResearchToken | undefined, bos_id: number | null): string {
  if (!t) return '?';
  if (bos_id !== null && t.id === bos_id) return '⟨start⟩';
  const s = t.text.replace(/\n/g, '↵').replace(/\t/g, '⇥');
  return s.trim() === '' ? s.replace(/ /g, '·') : s;
}

const at = (x: Nested, i: number): Nested => (Array.isArray(x) ? x[i] : NaN);

/** The panels of one sweep, in the answer's order. */
export function patch_panels(r: PatchResponse, bos_id: number | null): PatchPanel[] {
  const every = r.axes[0] === 'patch_type';
  const axes = every ? r.axes.slice(1) : r.axes;
  const stacks: { title: string; values: Nested[]; prefix: number[] }[] = every
    ? (r.patch_types ?? r.values.map((_, i) => String(i))).map((t, i) => ({ title: t, values: r.values[i] as Nested[], prefix: [i] }))
    : [{ title: '', values: r.values, prefix: [] }];
  const pos_columns = () => {
    const labels = r.positions.map((p) => research_token_label(r.tokens?.[p], bos_id));
    const notes = r.positions.map((p) => {
      const c = r.tokens?.[p];
      const x = r.corrupted_tokens?.[p];
      return c && x && c.id !== x.id ? research_token_label(x, bos_id) : null;
    });
    return { col_labels: labels, col_index: [...r.positions], col_notes: notes };
  };
  return stacks.map(({ title, values, prefix }) => {
    const L = values.length;
    if (axes.length === 2 && axes[1] === 'pos') {
      const cols = pos_columns();
      const cells = values.map((row, l) =>
        cols.col_index.map((p, j) => ({ value: at(row, j) as number, index: [...prefix, r.layers[l], p], row: l, col: j })),
      );
      return { title, row_axis: 'layer', col_axis: 'pos', row_labels: r.layers.map((l) => `layer ${l}`), ...cols, cells };
    }
    if (axes.length === 2 && axes[1] === 'head') {
      const H = Math.max(0, ...values.map((row) => (Array.isArray(row) ? row.length : 0)));
      const heads = Array.from({ length: H }, (_, h) => h);
      const cells = values.map((row, l) => heads.map((h) => ({ value: at(row, h) as number, index: [...prefix, r.layers[l], h], row: l, col: h })));
      return {
        title,
        row_axis: 'layer',
        col_axis: 'head',
        row_labels: r.layers.map((l) => `layer ${l}`),
        col_labels: heads.map((h) => `head ${h}`),
        col_index: heads,
        col_notes: heads.map(() => null),
        cells,
      };
    }
    // (layer, pos, head) or (layer, head, dest_pos): rows are heads of each layer.
    const head_first = axes[1] === 'head';
    const cols = pos_columns();
    const row_labels: string[] = [];
    const cells: (PatchCell | null)[][] = [];
    for (let l = 0; l < L; ++l) {
      const H = head_first ? (values[l] as Nested[]).length : Math.max(0, ...((values[l] as Nested[]) ?? []).map((x) => (Array.isArray(x) ? x.length : 0)));
      for (let h = 0; h < H; ++h) {
        const i = row_labels.length;
        row_labels.push(`layer ${r.layers[l]} head ${h}`);
        cells.push(
          cols.col_index.map((p, j) => {
            const v = head_first ? at(at(values[l], h), j) : at(at(values[l], j), h);
            const index = head_first ? [...prefix, r.layers[l], h, p] : [...prefix, r.layers[l], p, h];
            return { value: v as number, index, row: i, col: j };
          }),
        );
      }
    }
    return { title, row_axis: 'layer.head', col_axis: 'pos', row_labels, ...cols, cells };
  });
}

/** The largest |value − centre| over every panel: the scale runs from centre − m to centre + m. */
export function scale_max(panels: PatchPanel[], centre = 0): number {
  let m = 0;
  for (const p of panels) for (const row of p.cells) for (const c of row) if (c && Number.isFinite(c.value)) m = Math.max(m, Math.abs(c.value - centre));
  return m > 0 ? m : 1;
}

// ColorBrewer RdBu, 11 classes: red below 0, white at 0, blue above. Two hues around a
// white middle, so the sign reads from the hue and the size from the lightness.
const STOPS = ['#67001f', '#b2182b', '#d6604d', '#f4a582', '#fddbc7', '#f7f7f7', '#d1e5f0', '#92c5de', '#4393c3', '#2166ac', '#053061'];
const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

function diverging_rgb(value: number, max: number): number[] {
  const t = Math.min(1, Math.max(-1, value / max)); // −1 .. 1
  const x = ((t + 1) / 2) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const a = rgb(STOPS[i]);
  const b = rgb(STOPS[i + 1]);
  return a.map((v, k) => Math.round(v + (b[k] - v) * f));
}

export function diverging_colour(value: number, max: number): string {
  if (!Number.isFinite(value)) return '#cccccc';
  const [r, g, b] = diverging_rgb(value, max);
  return `rgb(${r} ${g} ${b})`;
}

/** White ink on the dark ends of the scale, black in the middle. */
export function diverging_text_is_light(value: number, max: number): boolean {
  return Number.isFinite(value) && Math.abs(value / max) > 0.6;
}

export const diverging_gradient = () => `linear-gradient(to right, ${STOPS.join(', ')})`;

/** A value as the view prints it: 4 decimals, as the API's examples. */
export const fmt4 = (x: number) => (Number.isFinite(x) ? x.toFixed(4) : '–');

/** What share of the way from the corrupted run's metric to the clean run's a value is. */
export function share_of_range(r: PatchResponse, value: number): number | null {
  const range = r.clean - r.corrupted;
  return range !== 0 && Number.isFinite(range) ? (value - r.corrupted) / range : null;
}

/** The name of one cell in words: "layer 1, position 14 (“ viol”; corrupted “ ar”)". */
export function cell_words(p: PatchPanel, c: PatchCell): string {
  const where =
    p.col_axis === 'head'
      ? `${p.row_labels[c.row]}, head ${p.col_index[c.col]}`
      : `${p.row_labels[c.row]}, position ${p.col_index[c.col]} (“${p.col_labels[c.col]}”${p.col_notes[c.col] !== null ? `; corrupted “${p.col_notes[c.col]}”` : ''})`;
  return (p.title ? `${p.title}: ` : '') + where;
}

/** The cell that moves the metric furthest toward the clean run (denoising) or away from it
 *  (noising), and that move as a share of the clean − corrupted range; null when the two runs
 *  give the same metric or no cell has a value. */
export function top_cell(r: PatchResponse, panels: PatchPanel[]): { panel: PatchPanel; cell: PatchCell; effect: number } | null {
  const range = r.clean - r.corrupted;
  if (!(Math.abs(range) > 0)) return null;
  let best: { panel: PatchPanel; cell: PatchCell; effect: number } | null = null;
  for (const panel of panels)
    for (const row of panel.cells)
      for (const cell of row) {
        if (!cell || !Number.isFinite(cell.value)) continue;
        const effect = r.direction === 'noising' ? (r.clean - cell.value) / range : (cell.value - r.corrupted) / range;
        if (!best || effect > best.effect) best = { panel, cell, effect };
      }
  return best;
}

/** The sentence under the heatmap, chosen by the numbers: the top cell (top_cell); for
 *  attribution patching said to be an estimate, first order, one backward per pair. */
export function patch_summary(r: PatchResponse, panels: PatchPanel[]): string {
  const estimate = r.method === 'attribution';
  const lead = estimate
    ? `These are first-order estimates (attribution patching: one backward per pair, ${r.pairs === 1 ? 'one pair' : `${r.pairs} pairs`}), not patched runs. `
    : '';
  const range = r.clean - r.corrupted;
  if (!(Math.abs(range) > 0)) return `${lead}The clean and corrupted runs give the same ${r.metric} (${fmt4(r.clean)}), so no patch can restore anything.`;
  const best = top_cell(r, panels);
  if (!best) return `${lead}The sweep has no values.`;
  const pct = `${Math.round(100 * best.effect)}%`;
  const runs = `(clean run ${fmt4(r.clean)}, corrupted run ${fmt4(r.corrupted)})`;
  const largest = estimate ? 'The largest estimated' : 'The largest';
  return r.direction === 'noising'
    ? `${lead}${largest} damage: ${cell_words(best.panel, best.cell)}, value ${fmt4(best.cell.value)}, taking away ${pct} of the clean–corrupted range ${runs}.`
    : `${lead}${largest} restoration: ${cell_words(best.panel, best.cell)}, value ${fmt4(best.cell.value)}, ${pct} of the clean–corrupted range ${runs}.`;
}

const escape_xml = (s: string) => s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/** The panels as one standalone SVG: a titled grid each, the legend's ends printed. */
export function patch_svg(title: string, panels: PatchPanel[], max: number, centre = 0): string {
  const cell = 22;
  const label_w = 12 + 7 * Math.max(8, ...panels.flatMap((p) => p.row_labels.map((s) => s.length)));
  const col_h = 12 + 7 * Math.max(4, ...panels.flatMap((p) => p.col_labels.map((s, j) => s.length + String(p.col_index[j]).length + 1)));
  const C = Math.max(1, ...panels.map((p) => p.col_labels.length));
  const width = label_w + C * cell + 20;
  const parts: string[] = [];
  let y = 30;
  const body: string[] = [];
  for (const p of panels) {
    if (p.title) {
      body.push(`<text x="8" y="${y + 14}" font-size="12" font-weight="bold">${escape_xml(p.title)}</text>`);
      y += 20;
    }
    const top = y + col_h;
    p.col_labels.forEach((s, j) => {
      const x = label_w + j * cell + cell / 2 + 4;
      body.push(`<text transform="translate(${x} ${top - 6}) rotate(-90)">${escape_xml(`${p.col_index[j]} ${s}`)}</text>`);
    });
    p.cells.forEach((row, i) => {
      body.push(`<text x="${label_w - 6}" y="${top + i * cell + cell / 2 + 4}" text-anchor="end">${escape_xml(p.row_labels[i])}</text>`);
      row.forEach((c, j) => {
        if (!c) return;
        body.push(
          `<rect x="${label_w + j * cell}" y="${top + i * cell}" width="${cell - 1}" height="${cell - 1}" fill="${diverging_colour(c.value - centre, max)}"><title>${escape_xml(cell_words(p, c))}: ${fmt4(c.value)}</title></rect>`,
        );
      });
    });
    y = top + p.cells.length * cell + 16;
  }
  body.push(`<text x="8" y="${y + 12}">colour: ${centre === 0 ? `−${fmt4(max)}` : fmt4(centre - max)} (red) … ${centre === 0 ? '0' : fmt4(centre)} (white) … ${centre === 0 ? `+${fmt4(max)}` : fmt4(centre + max)} (blue)</text>`);
  const height = y + 24;
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="18" font-size="13" font-weight="bold">${escape_xml(title)}</text>`,
    ...body,
    '</svg>',
  );
  return parts.join('');
}

/** Every cell as a CSV row: the answer's axes, the clean token of a position, the value. */
export function patch_csv(r: PatchResponse, panels: PatchPanel[]): string {
  const has_pos = r.axes.includes('pos') || r.axes.includes('dest_pos');
  const header = [...r.axes, ...(has_pos ? ['clean_token', 'corrupted_token'] : []), 'value'];
  const rows: unknown[][] = [];
  for (const p of panels)
    for (const row of p.cells)
      for (const c of row) {
        if (!c) continue;
        const idx = r.axes[0] === 'patch_type' ? [r.patch_types?.[c.index[0]] ?? c.index[0], ...c.index.slice(1)] : c.index;
        const pos = p.col_axis === 'pos' ? p.col_index[c.col] : null;
        const tok = pos === null ? [] : [r.tokens?.[pos]?.text ?? '', r.corrupted_tokens?.[pos]?.text ?? ''];
        rows.push([...idx, ...tok, c.value]);
      }
  return to_csv(header, rows);
}
