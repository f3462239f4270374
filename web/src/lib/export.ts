// export.ts — saving what a figure shows: its picture as SVG or PNG, its numbers as JSON
// or CSV. Grids are drawn to SVG from their numbers (the page draws them as tables or on
// canvas); plots are already SVG and are serialised as they are.
import { format_weight, weight_colour, weight_text_is_light } from './colour_scale';

const XMLNS = 'http://www.w3.org/2000/svg';

const escape_xml = (s: string) =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/**
 * One head's pattern as a standalone SVG: token labels on both axes, one coloured cell
 * per (query, key), the weight printed when the grid is small.
 *   tokens: string[] (T,) the keys   rows: (number | null)[][] (R, T), null = masked
 *   row_labels: string[] (R,)        defaults to tokens (a square pattern: R = T)
 */
export function grid_svg(title: string, tokens: string[], rows: (number | null)[][], row_labels: string[] = tokens): string {
  const T = tokens.length;
  const R = rows.length;
  const cell = T <= 16 ? 34 : T <= 48 ? 14 : 6;
  const label_w = Math.min(120, 12 + 7 * Math.max(1, ...tokens.map((t) => t.length), ...row_labels.map((t) => t.length)));
  const top = label_w + 28;
  const left = label_w;
  const width = left + T * cell + 12;
  const height = top + R * cell + 12;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="${XMLNS}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="18" font-size="13" font-weight="bold">${escape_xml(title)}</text>`,
  );
  const show_labels = cell >= 14;
  for (let i = 0; show_labels && i < R; ++i) {
    const y = top + i * cell + cell / 2 + 4;
    parts.push(`<text x="${left - 6}" y="${y}" text-anchor="end">${escape_xml(row_labels[i])}</text>`);
  }
  for (let i = 0; show_labels && i < T; ++i) {
    const x = left + i * cell + cell / 2 + 4;
    parts.push(`<text transform="translate(${x} ${top - 6}) rotate(-90)">${escape_xml(tokens[i])}</text>`);
  }
  for (let q = 0; q < R; ++q)
    for (let k = 0; k < T; ++k) {
      const w = rows[q]?.[k] ?? null;
      const x = left + k * cell;
      const y = top + q * cell;
      if (w === null) {
        parts.push(`<rect x="${x}" y="${y}" width="${cell - 1}" height="${cell - 1}" fill="#f3f2ee"/>`);
        continue;
      }
      parts.push(`<rect x="${x}" y="${y}" width="${cell - 1}" height="${cell - 1}" fill="${weight_colour(w)}"><title>${escape_xml(row_labels[q])} → ${escape_xml(tokens[k])}: ${format_weight(w)}</title></rect>`);
      if (cell >= 30) {
        const ink = weight_text_is_light(w) ? 'white' : 'black';
        parts.push(`<text x="${x + cell / 2}" y="${y + cell / 2 + 4}" text-anchor="middle" font-size="10" fill="${ink}">${format_weight(w)}</text>`);
      }
    }
  parts.push('</svg>');
  return parts.join('');
}

/** An SVG element on the page as a standalone file. */
export function element_svg(svg: SVGSVGElement): string {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  copy.setAttribute('xmlns', XMLNS);
  const box = svg.getBoundingClientRect();
  if (!copy.getAttribute('width')) copy.setAttribute('width', String(Math.round(box.width)));
  if (!copy.getAttribute('height')) copy.setAttribute('height', String(Math.round(box.height)));
  return new XMLSerializer().serializeToString(copy);
}

/** Rasterises an SVG document at twice its size (sharp on high-density screens). */
export async function svg_to_png(svg: string): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error('The picture could not be drawn.'));
      img.src = url;
    });
    const scale = 2;
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(img.width * scale));
    canvas.height = Math.max(1, Math.round(img.height * scale));
    const ctx = canvas.getContext('2d')!;
    ctx.fillStyle = 'white';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('The picture could not be encoded.'))), 'image/png'),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}

const csv_cell = (v: unknown) => {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** A header and rows as CSV text. */
export function to_csv(header: string[], rows: unknown[][]): string {
  return [header, ...rows].map((r) => r.map(csv_cell).join(',')).join('\n') + '\n';
}

/** A grid's numbers as CSV: one row per (query, key) cell, masked cells left out. */
export function grid_csv(tokens: string[], rows: (number | null)[][], row_labels: string[] = tokens): string {
  const out: unknown[][] = [];
  rows.forEach((row, q) =>
    row.forEach((w, k) => {
      if (w !== null) out.push([q, row_labels[q], k, tokens[k], w]);
    }),
  );
  return to_csv(['query', 'query_token', 'key', 'key_token', 'weight'], out);
}

/** Hands a file to the browser's downloads. */
export function download(name: string, data: Blob | string, type = 'text/plain'): void {
  const blob = typeof data === 'string' ? new Blob([data], { type }) : data;
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A file name from a title: "Head 1.5 on “the cat”" → "head-1-5-on-the-cat". */
export const file_stem = (title: string) =>
  title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 60) || 'figure';
