// lib/compact_views.ts — the model run's compact views ("encoding": "base64", docs/api.md)
// back into rows: each view is one base64 string of the window's cells row after row,
// probabilities (pattern, value_weighted, rollout) as little-endian uint16 round(p * 65535)
// (within 1/131070 of p), scores as little-endian float32. Row q of a window holds keys
// keys[0]..min(keys[1] - 1, q) (none when q is before the keys), as the rows of numbers do.
import type { HeadPatterns, ModelRunHeads, RaggedRows, TokenWindow } from './types';

function bytes_of(b64: string): Uint8Array {
  const raw = atob(b64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** The cells' count of each row of the window (the whole view: queries and keys 0..T). */
export function window_row_sizes(T: number, window?: TokenWindow): number[] {
  const [qb, qe] = window ? window.queries : [0, T];
  const [kb, ke] = window ? window.keys : [0, T];
  const sizes: number[] = [];
  for (let q = qb; q < qe; q++) sizes.push(Math.max(0, Math.min(ke, q + 1) - kb));
  return sizes;
}

function rows(values: ArrayLike<number>, sizes: number[], scale: number): RaggedRows {
  const out: RaggedRows = [];
  let at = 0;
  for (const n of sizes) {
    const row = new Array<number>(n);
    for (let i = 0; i < n; i++) row[i] = values[at++] * scale;
    out.push(row);
  }
  if (at !== values.length) throw new Error(`a compact view holds ${values.length} cells where the window has ${at}`);
  return out;
}

/** uint16 probabilities: p = u / 65535. */
export function decode_probabilities(b64: string, sizes: number[]): RaggedRows {
  const b = bytes_of(b64);
  const dv = new DataView(b.buffer);
  const u = new Array<number>(b.length / 2);
  for (let i = 0; i < u.length; i++) u[i] = dv.getUint16(2 * i, true);
  return rows(u, sizes, 1 / 65535);
}

/** float32 scores. */
export function decode_floats(b64: string, sizes: number[]): RaggedRows {
  const b = bytes_of(b64);
  const dv = new DataView(b.buffer);
  const f = new Array<number>(b.length / 4);
  for (let i = 0; i < f.length; i++) f[i] = dv.getFloat32(4 * i, true);
  return rows(f, sizes, 1);
}

/** An answer asked with "encoding": "base64", in the shape of the default one (rows of numbers). */
export function expand_compact_run<R extends ModelRunHeads>(wire: R & { encoding?: string }): R {
  if (wire.encoding !== 'base64') return wire;
  const sizes = window_row_sizes(wire.tokens.length, wire.window);
  const views = wire as unknown as { heads: (HeadPatterns & Record<string, unknown>)[]; rollout?: unknown };
  const heads: HeadPatterns[] = views.heads.map((h) => {
    const out: HeadPatterns = { layer: h.layer, head: h.head };
    if (typeof h.pattern === 'string') out.pattern = decode_probabilities(h.pattern, sizes);
    if (typeof h.value_weighted === 'string') out.value_weighted = decode_probabilities(h.value_weighted, sizes);
    if (typeof h.scores === 'string') out.scores = decode_floats(h.scores, sizes);
    return out;
  });
  const { encoding: _encoding, ...rest } = wire;
  const out = { ...rest, heads } as unknown as R;
  if (typeof views.rollout === 'string') out.rollout = decode_probabilities(views.rollout, sizes);
  return out;
}
