// lens.ts — the logit lens table (POST /api/model/lens) as a standalone SVG for export.
import { weight_colour as wc } from '../../lib/colour_scale';
import type { LensResponse } from '../../lib/research_types';

const esc = (s: string) => s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
/** The lens table as a standalone SVG: one shaded cell per layer and position, the top token in it. */
export function lens_svg(r: LensResponse): string {
  const cw = 64;
  const ch = 34;
  const left = 90;
  const top = 60;
  const width = left + r.tokens.length * cw + 10;
  const height = top + r.values.length * ch + 10;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="10">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="18" font-size="13" font-weight="bold">Logit lens: top next token and its probability</text>`,
  ];
  r.tokens.forEach((t, p) => parts.push(`<text x="${left + p * cw + 2}" y="${top - 8}">${p} ${esc(t.text)}</text>`));
  r.values.forEach((row, l) => {
    parts.push(`<text x="8" y="${top + l * ch + ch / 2 + 4}">${esc(r.layers[l])}</text>`);
    row.forEach((c, p) => {
      const t = c.top[0];
      if (!t) return;
      const x = left + p * cw;
      const y = top + l * ch;
      const ink = t.prob > 0.6 ? 'white' : 'black';
      parts.push(`<rect x="${x}" y="${y}" width="${cw - 2}" height="${ch - 2}" fill="${wc(t.prob)}"/>`);
      parts.push(`<text x="${x + 3}" y="${y + 13}" fill="${ink}">${esc(t.text)}</text><text x="${x + 3}" y="${y + 26}" fill="${ink}">${t.prob.toFixed(2)}</text>`);
    });
  });
  parts.push('</svg>');
  return parts.join('');
}
