// heads.ts — small pure helpers over the model API's data: naming heads, turning ragged
// causal rows into a square grid, finding heads in the scanner's report.
import type { HeadRef, ModelToken, RaggedRows, ScanReport, ScannedHead } from './types';

/** "layer.head", the name the scanner and the lessons use: { layer: 1, head: 5 } → "1.5". */
export const head_name = (h: HeadRef) => `${h.layer}.${h.head}`;

export const same_head = (a: HeadRef | null | undefined, b: HeadRef | null | undefined) =>
  !!a && !!b && a.layer === b.layer && a.head === b.head;

/** Ragged rows (row q holds keys 0..q) as a (T, T) grid with null above the diagonal. */
export function square_rows(rows: RaggedRows): (number | null)[][] {
  const T = rows.length;
  return rows.map((row) => Array.from({ length: T }, (_, k) => (k < row.length ? row[k] : null)));
}

/** How a token reads on screen: the start-of-text token as ⟨start⟩, spaces made visible only at the ends. */
export function token_label(t: ModelToken, bos_id: number | null): string {
  if (bos_id !== null && t.id === bos_id && t.begin === t.end) return '⟨start⟩';
  const s = t.text.replace(/\n/g, '↵').replace(/\t/g, '⇥');
  return s.trim() === '' ? s.replace(/ /g, '·') : s.trim();
}

/**
 * What one token covers of the text it came from: its bytes [begin, end), the text they
 * spell, or, for a piece of a multi-byte character (which alone is no character at all),
 * null. bytes: the whole text as UTF-8.
 */
export interface TokenPiece {
  bytes: number[];
  text: string | null;
}
export function token_piece(bytes: Uint8Array, t: ModelToken): TokenPiece {
  const own = Array.from(bytes.slice(t.begin, t.end));
  try {
    return { bytes: own, text: new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(own)) };
  } catch {
    return { bytes: own, text: null };
  }
}
/** Bytes as the page shows them: "C3 BC". */
export const hex_bytes = (bytes: number[]) => bytes.map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join(' ');

/**
 * Labels of a run's tokens like token_label, but a token that holds only part of a
 * character shows its bytes ("⟨C3⟩") instead of "�". text: what the run was sent.
 */
export function token_labels(tokens: ModelToken[], text: string, bos_id: number | null): string[] {
  const bytes = new TextEncoder().encode(text);
  return tokens.map((t) => {
    if (t.begin === t.end || !t.text.includes('\uFFFD')) return token_label(t, bos_id);
    const piece = token_piece(bytes, t);
    return piece.text === null ? `⟨${hex_bytes(piece.bytes)}⟩` : token_label(t, bos_id);
  });
}

/** The score of a head, or null when the scanner did not measure it. */
export function head_score(h: ScannedHead, score: string): number | null {
  return h.scores[score]?.score ?? null;
}

/** Heads carrying a label, best (largest margin) first. */
export function heads_labelled(scan: ScanReport, label: string): ScannedHead[] {
  const margin = (h: ScannedHead) => h.labels.find((l) => l.name === label)?.margin ?? -Infinity;
  return scan.heads.filter((h) => h.labels.some((l) => l.name === label)).sort((a, b) => margin(b) - margin(a));
}

/** The head with the highest score (labelled or not); null when nothing was measured. */
export function top_head(scan: ScanReport, score: string): ScannedHead | null {
  return rank_heads(scan, score)[0] ?? null;
}

/** Every head by one score, highest first; heads without that score go last. */
export function rank_heads(scan: ScanReport, score: string, ascending = false): ScannedHead[] {
  const key = (h: ScannedHead) => head_score(h, score);
  return [...scan.heads].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    if (x === null || y === null) return x === null ? (y === null ? 0 : 1) : -1;
    return ascending ? x - y : y - x;
  });
}

/** Every score name the scanner reported, in its own order. */
export function score_names(scan: ScanReport): string[] {
  const names: string[] = [];
  for (const h of scan.heads) for (const n of Object.keys(h.scores)) if (!names.includes(n)) names.push(n);
  return names;
}

/** "previous_token" → "previous token". */
export const score_title = (name: string) => name.replace(/_/g, ' ');

/** A text followed by itself, so induction heads have a copy to continue. */
export function repeat_text(text: string): string {
  const t = text.trim();
  return t === '' ? t : `${t} ${t}`;
}

/** Mean of the non-null values of xs[from..to), or null. */
export function mean(xs: (number | null)[], from = 0, to = xs.length): number | null {
  let sum = 0;
  let n = 0;
  for (let i = from; i < to; ++i) {
    const x = xs[i];
    if (x !== null && x !== undefined && Number.isFinite(x)) {
      sum += x;
      n += 1;
    }
  }
  return n > 0 ? sum / n : null;
}

/** Where the second copy of a text made by repeat_text starts, in tokens; null if it is not one. */
export function second_copy_start(tokens: ModelToken[], bos: boolean): number | null {
  const first = bos ? 1 : 0;
  const n = tokens.length - first;
  if (n < 2 || n % 2 !== 0) return null;
  const half = n / 2;
  for (let i = 0; i < half; ++i) {
    // The second copy's first token has a leading space the first copy's lacks, so compare
    // every token but the first of each copy by id.
    if (i > 0 && tokens[first + i].id !== tokens[first + half + i].id) return null;
  }
  return first + half;
}

/** Mean absolute difference of two heads' patterns over the same text. */
export function pattern_distance(a: RaggedRows, b: RaggedRows): number {
  let sum = 0;
  let n = 0;
  for (let q = 0; q < a.length; ++q)
    for (let k = 0; k < a[q].length; ++k) {
      sum += Math.abs(a[q][k] - (b[q]?.[k] ?? 0));
      n += 1;
    }
  return n > 0 ? sum / n : 0;
}

/** Argmax of one row: the key a query reads most. */
export function favourite_key(row: number[]): number {
  let best = 0;
  for (let k = 1; k < row.length; ++k) if (row[k] > row[best]) best = k;
  return best;
}

/** 0.1234 → "0.12"; null → "–". */
export const fmt = (x: number | null | undefined, digits = 2) =>
  x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);

/** 0.1234 → "12%". */
export const pct = (x: number) => `${Math.round(100 * x)}%`;
