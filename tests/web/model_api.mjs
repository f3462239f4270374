// model_api.mjs — what the model pages should show, computed by the tests from the
// server's own answers (never from numbers typed in): the scanner's report as the server's
// codec writes it, the heads a page picks from it, and the same small sums the pages do.
import assert from 'node:assert/strict';
import { api_get, api_post } from './harness.mjs';

/** GET /api/model/scan as { heads: [{ layer, head, name, scores: {s: number}, labels: [{ name, margin }] }] }. */
export async function scan_report(server) {
  const r = await api_get(server, '/api/model/scan');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return {
    heads: r.body.heads.map((h) => ({
      layer: h.layer,
      head: h.head,
      name: h.name,
      scores: h.scores,
      labels: h.labels.map((l) => ({ name: l.label, margin: l.margin })),
    })),
  };
}

/** Heads with a label, largest margin first (as the pages rank them). */
export function labelled(scan, label) {
  const margin = (h) => h.labels.find((l) => l.name === label)?.margin ?? -Infinity;
  return scan.heads.filter((h) => h.labels.some((l) => l.name === label)).sort((a, b) => margin(b) - margin(a));
}

/** The head the lessons show for a role: the best labelled one, else the top scorer. */
export function pick(scan, label) {
  const best = labelled(scan, label)[0];
  if (best) return best;
  return [...scan.heads].sort((a, b) => (b.scores[label] ?? -Infinity) - (a.scores[label] ?? -Infinity))[0];
}

export async function run(server, body) {
  const r = await api_post(server, '/api/model/run', { bos: true, top_k: 0, ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

// The same run asked with "encoding": "base64" (docs/api.md), as the lesson pages that draw only
// heads ask for it, decoded here on its own terms: each head's pattern one base64 string of
// little-endian uint16 round(p * 65535), row q holding keys 0..q. Returns the heads' patterns as rows.
export async function run_compact_patterns(server, body) {
  const answer = await run(server, { ...body, encoding: 'base64' });
  assert.equal(answer.encoding, 'base64');
  const T = answer.tokens.length;
  return answer.heads.map((h) => {
    const b = Buffer.from(h.pattern, 'base64');
    assert.equal(b.length, T * (T + 1), 'T(T+1)/2 uint16 cells');
    const rows = [];
    let at = 0;
    for (let q = 0; q < T; q++) {
      const row = [];
      for (let k = 0; k <= q; k++, at += 2) row.push(b.readUInt16LE(at) / 65535);
      rows.push(row);
    }
    return rows;
  });
}

export async function intervene(server, body) {
  const r = await api_post(server, '/api/model/intervene', { bos: true, top_k: 0, ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

export function mean(xs) {
  const v = xs.filter((x) => x !== null && x !== undefined && Number.isFinite(x));
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
}

export const pct = (x) => `${Math.round(100 * x)}%`;
export const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;

/** A text followed by itself, as the pages' "Repeat it" makes it. */
export const repeated = (text) => `${text.trim()} ${text.trim()}`;

/** Where the second copy starts in a run of repeated(text) with the start token, or null. */
export function second_copy_start(tokens) {
  const n = tokens.length - 1;
  if (n < 2 || n % 2) return null;
  const half = n / 2;
  for (let i = 1; i < half; ++i) if (tokens[1 + i].id !== tokens[1 + half + i].id) return null;
  return 1 + half;
}

/**
 * What lesson 2's find-induction check measures (course/trained_heads.cpp), from a run:
 * over queries whose pair (ids[q-1], ids[q]) occurred before, the mean weight on keys k
 * that followed an earlier copy of ids[q] (ids[k-1] === ids[q], k <= q). ids: (T) with BOS.
 */
export function induction_share(ids, pattern) {
  // An independent reading of course/trained_heads.h's find-induction rule: queries in a
  // repeated span whose earlier-copy targets (keys k <= q - 2 with ids[k-1] == ids[q]) are not
  // empty; on them the mean mass on the targets, an even spread's share of them, and the mean
  // weight on the previous token. met: enough such queries, targets not most of the row, the
  // mass at least max(30%, twice chance) and more than the previous token's.
  let repeated = 0;
  let n = 0;
  let mass = 0;
  let chance = 0;
  let previous = 0;
  for (let q = 2; q < ids.length; ++q) {
    let repeated_pair = false;
    for (let j = 2; j < q && !repeated_pair; ++j) repeated_pair = ids[j] === ids[q] && ids[j - 1] === ids[q - 1];
    if (!repeated_pair) continue;
    ++repeated;
    let m = 0;
    let targets = 0;
    for (let k = 1; k <= q - 2; ++k) if (ids[k - 1] === ids[q]) { m += pattern[q][k]; ++targets; }
    if (targets === 0) continue;
    mass += m;
    chance += targets / (q + 1);
    previous += pattern[q][q - 1];
    ++n;
  }
  if (n) { mass /= n; chance /= n; previous /= n; }
  const met = repeated >= 4 && n >= 4 && chance <= 0.4 && mass >= Math.max(0.3, 2 * chance) && mass > previous;
  return { repeated, n, mass, chance, previous, met };
}
