// narrow.test.mjs — web/src/explorer/research/narrow.ts without a browser: the refusal read from
// the server's message, and the narrower sweeps offered from it. Over generated refusals (a loop
// over limits and sizes) every offer is a different request from the refused one, keeps at
// least one of what it narrows, and fits the limit by the cost model it was made from (the
// server checks the narrowed request again; tests/web/research_narrowing.test.mjs runs one).
// narrow.ts is TypeScript: esbuild (vite's own) bundles it with lib/api.ts's ApiError into one module here.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, test } from 'node:test';
import { repo_root } from './harness.mjs';

let N; // the module's exports
before(async () => {
  const esbuild = createRequire(createRequire(path.join(repo_root, 'web', 'package.json')).resolve('vite'))('esbuild');
  const out = await esbuild.build({
    stdin: { contents: "export * from './explorer/research/narrow.ts'; export { ApiError } from './lib/api.ts';", resolveDir: path.join(repo_root, 'web/src'), loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
  });
  N = await import('data:text/javascript;base64,' + Buffer.from(out.outputFiles[0].text).toString('base64'));
});

// The server's two messages (src/server/model_service/model_patch.cpp, path_patch_handlers.cpp).
const sci = (x) => x.toExponential(1).replace(/e([+-])(\d)$/, 'e$10$2');
const patch_message = (cost, limit) =>
  `This sweep is 10 forwards over 1 prompt pair: 100 block-tokens, about ${sci(cost)} multiply-adds, more than this server's limit (${sci(limit)}). Narrow it: fewer layers`;
const path_message = (cost, limit) =>
  `This path patching is about ${sci(cost)} multiply-adds (10 forwards), more than this server's limit (${sci(limit)}). Narrow it: fewer senders`;
const refusal = (message, status = 413) => N.work_refusal(new N.ApiError(status, 'too_long', message));
const range = (n, from = 0) => Array.from({ length: n }, (_, i) => from + i);

test('work_refusal reads the cost and limit from both routes’ messages, and nothing else is a refusal', () => {
  assert.deepEqual(refusal(patch_message(3.2e11, 1e11)), { cost: 3.2e11, limit: 1e11, message: patch_message(3.2e11, 1e11) });
  assert.deepEqual(refusal(path_message(3.3e7, 1e7)), { cost: 3.3e7, limit: 1e7, message: path_message(3.3e7, 1e7) });
  assert.equal(refusal(patch_message(3.2e11, 1e11), 400), null, 'another status');
  assert.equal(refusal('The prompts have different lengths'), null, 'another 413');
  assert.equal(N.work_refusal(new Error(patch_message(3.2e11, 1e11))), null, 'not an ApiError');
  assert.equal(refusal(patch_message(1e11, 1e11)), null, 'a cost that is not over the limit');
});

test('ranges_text and parse_ranges read each other back; parse_ranges says what is wrong in words', () => {
  for (const xs of [[0], [0, 1, 2, 3, 5], [2, 4, 6], [0, 1, 7, 8, 9, 12]]) {
    assert.deepEqual(N.parse_ranges(N.ranges_text(xs), 'Layers', 13), xs);
  }
  assert.equal(N.ranges_text([0, 1, 2, 3, 5, 7, 8, 9]), '0–3, 5, 7–9');
  assert.equal(N.parse_ranges('  ', 'Layers', 4), null, 'blank: all');
  assert.deepEqual(N.parse_ranges('3, 0-1, 1', 'Layers', 4), [0, 1, 3]);
  assert.equal(N.parse_ranges('x', 'Layers', 4), 'Layers: “x” is not a number or a range such as 2–5.');
  assert.equal(N.parse_ranges('3-1', 'Layers', 4), 'Layers: the range 3–1 runs backwards.');
  assert.equal(N.parse_ranges('4', 'Layers', 4), 'Layers: 4 is past the last one (3).');
});

// The refusals the loops go through: limits from 1e6 to 1e12, costs from just over the limit to
// a thousand times it, each as the message rounds it (two digits).
function* refusals() {
  for (const limit of [1e6, 3e7, 1e11, 2.5e12])
    for (const over of [1.01, 1.2, 1.6, 2, 3.7, 10, 99, 1000]) {
      const r = refusal(patch_message(limit * over, limit));
      if (r) yield r; // 1.01× rounds to the limit itself at two digits: not a refusal
    }
}

test('activation patching’s offers: never the refused request again, never empty, and within the limit by their share', () => {
  let seen = 0;
  for (const r of refusals())
    for (const L of [1, 2, 3, 12, 48])
      for (const P of [1, 2, 5, 15, 121])
        for (const pairs of [1, 2, 7])
          for (const what of ['resid_pre', 'z_by_pos', 'attn_head_by_pos_every']) {
            const layers = range(L), positions = range(P);
            const offers = N.patch_narrowings(r, layers, positions, what, pairs);
            const where = JSON.stringify({ cost: r.cost, limit: r.limit, L, P, pairs, what });
            assert.equal(new Set(offers.map((o) => o.label)).size, offers.length, `labels distinct: ${where}`);
            for (const o of offers) {
              seen++;
              const kl = o.layers ?? layers, kp = o.positions ?? positions, kb = o.pairs ?? pairs;
              assert.ok(kl.length >= 1 && kp.length >= 1 && kb >= 1, `not empty: ${o.label} ${where}`);
              assert.ok(kl.every((l) => layers.includes(l)) && kp.every((p) => positions.includes(p)) && kb <= pairs, `a subset: ${o.label} ${where}`);
              const changed = kl.length < L || kp.length < P || kb < pairs || (o.what !== undefined && o.what !== what);
              assert.ok(changed, `not the same request again: ${o.label} ${where}`);
              // by position costs a run per position; over all positions one
              const share = (kl.length / L) * (kp.length / P) * (kb / pairs) * (o.what ? 1 / P : 1);
              assert.ok(share * r.cost <= 0.8 * r.limit * (1 + 1e-12), `within the limit: ${o.label} keeps ${share} of ${where}`);
            }
          }
  assert.ok(seen > 1000, `the loops reached offers (${seen})`);
});

test('activation patching’s offers keep the first layers, the last positions and the first pairs, and say so in their labels', () => {
  const r = refusal(patch_message(3.2e11, 1e11)); // 0.25 of each fits
  const offers = N.patch_narrowings(r, range(12), range(16), 'z_by_pos', 4);
  assert.deepEqual(offers, [
    { label: 'the first 1 of the 4 pairs', pairs: 1 },
    { label: 'layers 0–2 only (3 of 12)', layers: [0, 1, 2] },
    { label: 'positions 12–15 only (the last 4 of 16)', positions: [12, 13, 14, 15] },
    { label: 'z_all_pos instead: each head over all positions at once', what: 'z_all_pos' },
  ]);
  // neither alone fits: the same share of each
  const far = refusal(patch_message(5e12, 1e11));
  const both = N.patch_narrowings(far, range(12), range(16), 'resid_pre', 1); // 0.016 of the sweep fits
  assert.deepEqual(both, [{ label: 'layers 0 and positions 13–15', layers: [0], positions: [13, 14, 15] }]);
  // and when even one layer at one position is over, nothing is offered
  assert.deepEqual(N.patch_narrowings(refusal(patch_message(1e14, 1e11)), range(2), range(2), 'resid_pre', 1), []);
});

test('attribution patching offers only fewer pairs: never all of them, never none, within the limit by their share', () => {
  let seen = 0;
  for (const r of refusals())
    for (const pairs of [1, 2, 3, 8, 100, 1000]) {
      const offers = N.attribution_narrowings(r, pairs);
      const fit = Math.floor((pairs * 0.8 * r.limit) / r.cost);
      assert.equal(offers.length, Math.min(fit, pairs - 1) >= 1 ? 1 : 0, JSON.stringify({ r, pairs }));
      for (const o of offers) {
        seen++;
        assert.deepEqual(Object.keys(o).sort(), ['label', 'pairs'], 'only the pairs change: the cost is per pair');
        assert.ok(o.pairs >= 1 && o.pairs < pairs);
        assert.ok((o.pairs / pairs) * r.cost <= 0.8 * r.limit * (1 + 1e-12));
        assert.equal(o.label, `the first ${o.pairs} of the ${pairs} pairs`);
      }
    }
  assert.ok(seen > 20, `the loops reached offers (${seen})`);
  assert.deepEqual(N.attribution_narrowings(refusal(patch_message(3.3e7, 1e7)), 2), [], 'half of two pairs is still over: no offer');
  assert.deepEqual(N.attribution_narrowings(refusal(patch_message(3.3e7, 1e7)), 8), [{ label: 'the first 1 of the 8 pairs', pairs: 1 }]);
});

// research::path_patch_cost's count, per token of a pair (src/research/path_patching.cpp), for
// the senders the offer keeps: an independent sum, not path_sender_costs.
function path_cost(n_layer, senders, receivers) {
  const heads = receivers !== 'final';
  const first = heads ? Math.min(...receivers) : n_layer;
  const last = heads ? Math.max(...receivers) : n_layer;
  let runs = 2 * n_layer;
  for (const s of senders) {
    const l = Number(s.split('.')[0]);
    if (heads && l >= last) continue;
    runs += n_layer - l + (heads ? n_layer - first : 0);
  }
  return runs;
}
const heads_below = (L, NH) => range(L).flatMap((l) => range(NH).map((h) => `${l}.${h}`));

test('path patching’s offer: the first senders that reach a receiver, never all of them, never none, and within the limit by the server’s count', () => {
  let seen = 0;
  for (const limit of [1e6, 1e7, 1e11])
    for (const [L, NH] of [[1, 1], [2, 4], [3, 2], [12, 12]])
      for (const to of ['final', [L - 1], [0], [1, L - 1]].filter((x) => x === 'final' || x.every((l) => l < L)))
        for (const senders of [heads_below(L, NH), heads_below(L, NH).filter((_, i) => i % 3 === 0), [`0.0`]])
          for (const per_run of [limit / 2000, limit / 300, limit / 50, limit / 7, limit / 3, limit / 1.5]) {
            const cost = path_cost(L, senders, to) * per_run;
            const r = refusal(path_message(cost, limit));
            if (!r) continue;
            const o = N.sender_narrowing(r, senders, L, to);
            const where = JSON.stringify({ limit, L, NH, to, senders: senders.length, per_run });
            if (!o) continue;
            seen++;
            assert.ok(o.senders.length >= 1, `not empty: ${where}`);
            assert.ok(o.senders.every((s) => senders.includes(s)), `a subset: ${where}`);
            assert.ok(path_cost(L, o.senders, to) < path_cost(L, senders, to), `not the same work again: ${o.label} ${where}`);
            // the message rounds the cost to two digits: the real cost is within 5% of it
            assert.ok(path_cost(L, o.senders, to) * per_run <= limit, `within the limit: ${o.label} ${where}`);
          }
  assert.ok(seen > 30, `the loops reached offers (${seen})`);
});

test('path patching’s offer leaves out the senders that reach no receiver, and none is offered when not one sender fits', () => {
  // 2 layers, receivers in layer 1: layer 1's senders run nothing, so keeping them would cost the same
  const all = heads_below(2, 4);
  const per_run = 1e6;
  const cost = path_cost(2, all, [1]) * per_run; // 2·2 + 4·(2 + 1) = 16 runs
  const r = refusal(path_message(cost, 1.3e7)); // 0.8 × 13 = 10.4 runs fit: 2 senders
  assert.deepEqual(N.sender_narrowing(r, all, 2, [1]), { label: 'the first 2 of the 4 senders that reach a receiver (0.0 … 0.1)', senders: ['0.0', '0.1'] });
  assert.equal(N.sender_narrowing(refusal(path_message(cost, 8e6)), all, 2, [1]), null, 'one sender alone (7 runs) is over 0.8 × 8');
  const final = N.sender_narrowing(refusal(path_message(path_cost(2, all, 'final') * per_run, 1e7)), all, 2, 'final');
  assert.deepEqual(final, { label: 'the first 2 of the 8 senders (0.0 … 0.1)', senders: ['0.0', '0.1'] });
});
