// narrow.test.mjs — web/src/explorer/research/narrow.ts without a browser: the refusal read from
// the server's message, and the narrower sweeps offered from it. Over generated refusals (a loop
// over limits and sizes) every offer keeps at least one of what it narrows, less work than the
// refused request, and fits the limit by a count of the server's work written out here; then a
// real server with a low limit (--max-patch-multiply-adds) is sent every offer for generated
// sweeps it refuses, and must take each. tests/web/research_narrowing.test.mjs clicks them.
// narrow.ts is TypeScript: esbuild (vite's own) bundles it with lib/api.ts's ApiError into one module here.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, test } from 'node:test';
import { api_get, api_post, fresh_db, repo_root, start_server, test_model } from './harness.mjs';

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
const patch_message = (cost, limit, forwards = 10, pairs = 1) =>
  `This sweep is ${forwards.toLocaleString('en-US')} forwards over ${pairs} prompt ${pairs === 1 ? 'pair' : 'pairs'}: 100 block-tokens, about ${sci(cost)} multiply-adds, more than this server's limit (${sci(limit)}). Narrow it: fewer layers`;
const path_message = (cost, limit) =>
  `This path patching is about ${sci(cost)} multiply-adds (10 forwards), more than this server's limit (${sci(limit)}). Narrow it: fewer senders`;
const refusal = (message, status = 413) => N.work_refusal(new N.ApiError(status, 'too_long', message));
const range = (n, from = 0) => Array.from({ length: n }, (_, i) => from + i);

test('work_refusal reads the cost and limit from both routes’ messages, and nothing else is a refusal', () => {
  const big = patch_message(3.2e11, 1e11, 12345, 2);
  assert.deepEqual(refusal(big), { cost: 3.2e11, limit: 1e11, message: big, forwards: 12345, pairs: 2 });
  assert.deepEqual(refusal(patch_message(3.2e11, 1e11, 10, 1)).pairs, 1);
  assert.deepEqual(refusal(path_message(3.3e7, 1e7)), { cost: 3.3e7, limit: 1e7, message: path_message(3.3e7, 1e7), forwards: 10 });
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

// research::patch_cost's count (src/research/patching.cpp), per token, written out here on its
// own: forwards and block-runs of a sweep of `layers` × `positions` with m sites per (layer,
// position) (by position) or per layer (over all positions).
function patch_count({ L, layers, positions, by_pos, m, metric, pairs }) {
  const base = metric === 'normalized' ? 4 : 2;
  const sites = m * (by_pos ? positions.length : 1);
  return {
    forwards: pairs * (base + sites * layers.length),
    runs: pairs * (base * L + sites * layers.reduce((a, l) => a + L - l, 0)),
  };
}

test('activation patching’s offers: never the refused request again, never empty, and within the limit by the server’s count', () => {
  let seen = 0;
  for (const limit of [1e6, 3e7, 1e11])
    for (const L of [1, 2, 3, 12, 48])
      for (const P of [1, 2, 5, 15, 121])
        for (const pairs of [1, 2, 7])
          for (const [what, m] of [['resid_pre', 1], ['z_by_pos', 12], ['attn_head_by_pos_every', 40], ['z_all_pos', 12], ['block_every', 3]])
            for (const metric of ['normalized', 'logprob'])
              for (const per_run of [limit / 5000, limit / 300, limit / 20, limit / 3]) {
                const layers = range(L), positions = range(P), by_pos = !what.includes('all_pos');
                const count = (o = {}) =>
                  patch_count({ L, layers: o.layers ?? layers, positions: o.positions ?? positions, by_pos: o.what ? false : by_pos, m, metric, pairs: o.pairs ?? pairs });
                const all = count();
                const r = refusal(patch_message(all.runs * per_run, limit, all.forwards, pairs));
                if (!r) continue;
                const offers = N.patch_narrowings(r, layers, positions, what, pairs, { n_layer: L, metric });
                const where = JSON.stringify({ limit, L, P, pairs, what, metric, per_run });
                assert.equal(new Set(offers.map((o) => o.label)).size, offers.length, `labels distinct: ${where}`);
                for (const o of offers) {
                  seen++;
                  const kl = o.layers ?? layers, kp = o.positions ?? positions, kb = o.pairs ?? pairs;
                  assert.ok(kl.length >= 1 && kp.length >= 1 && kb >= 1, `not empty: ${o.label} ${where}`);
                  assert.ok(kl.every((l) => layers.includes(l)) && kp.every((p) => positions.includes(p)) && kb <= pairs, `a subset: ${o.label} ${where}`);
                  assert.ok(count(o).runs < all.runs, `less work than the refused request: ${o.label} ${where}`);
                  assert.ok(count(o).runs * per_run <= limit, `within the limit: ${o.label} ${where}`);
                }
              }
  assert.ok(seen > 1000, `the loops reached offers (${seen})`);
});

test('activation patching’s offers keep the first layers, the last positions and the first pairs, and say so in their labels', () => {
  // 12 layers, 16 positions, 4 pairs of z_by_pos (12 heads), logprob: 0.8 / 3.2 of the work fits
  const shape = { L: 12, layers: range(12), positions: range(16), by_pos: true, m: 12, metric: 'logprob', pairs: 4 };
  const all = patch_count(shape);
  const r = refusal(patch_message(3.2e11, 1e11, all.forwards, 4));
  const offers = N.patch_narrowings(r, range(12), range(16), 'z_by_pos', 4, { n_layer: 12, metric: 'logprob' });
  assert.deepEqual(offers, [
    { label: 'the first 1 of the 4 pairs', pairs: 1 },
    // the first layers cost the most (a run from layer l is L − l blocks): 1 layer is 12/78 of the sites' work
    { label: 'layers 0 only (1 of 12)', layers: [0] },
    { label: 'positions 13–15 only (the last 3 of 16)', positions: [13, 14, 15] },
    { label: 'z_all_pos instead: each head over all positions at once', what: 'z_all_pos' },
  ]);
  // neither alone fits: the first layer and the last positions that fit beside it
  const far = refusal(patch_message(2e12, 1e11, all.forwards, 4));
  const both = N.patch_narrowings(far, range(12), range(16), 'z_by_pos', 4, { n_layer: 12, metric: 'logprob' });
  assert.deepEqual(both.map((o) => o.label), ['layers 0 and positions 12–15']);
  // positions are not offered for a sweep over all positions: they would not change its work
  const heads = refusal(patch_message(2e11, 1e11, 4 * (2 + 12 * 12), 4));
  assert.ok(N.patch_narrowings(heads, range(12), range(16), 'z_all_pos', 4, { n_layer: 12, metric: 'logprob' }).every((o) => !o.positions));
  // the prompt's positions unknown (the view could not tokenize it): a sweep by position is offered only fewer pairs
  assert.deepEqual(N.patch_narrowings(r, range(12), [], 'z_by_pos', 4, { n_layer: 12, metric: 'logprob' }), [{ label: 'the first 1 of the 4 pairs', pairs: 1 }]);
  // and when even one layer at one position is over, nothing is offered
  assert.deepEqual(N.patch_narrowings(refusal(patch_message(1e14, 1e11, 6, 1)), range(2), range(2), 'resid_pre', 1, { n_layer: 2, metric: 'logprob' }), []);
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

// Against the server's own count: a `headlab serve` whose work limit (2.8e7 multiply-adds) the
// built-in model's stories are over, asked for generated sweeps; every offer for each refused one
// is sent as the view sends it, and none may be refused again.
const STORY = [' ink crown plum fog violin arch ink crown plum fog', ' ink crown plum fog arch violin ink crown plum fog'];
const prompts = (copies, n) => Array(n).fill({ clean: STORY[0].repeat(copies), corrupted: STORY[0].repeat(copies - 1) + STORY[1], answer: ' viol', wrong: ' ar' });

test('every offer for a refused sweep is answered by a server with that limit, never refused again', { timeout: 120_000 }, async () => {
  const server = await start_server({ db: fresh_db(), model: test_model(), args: ['--max-patch-multiply-adds', '2.8e7'] });
  try {
    const { n_layer: L, n_head: NH } = (await api_get(server, '/api/model')).body.config;
    const tokens = async (text) => (await api_post(server, '/api/model/run', { text, heads: [[0, 0]], window: { queries: [0, 1], keys: [0, 1] }, top_k: 1 })).body.tokens.length;
    const failures = [];
    let refused = 0, offered = 0;
    const ask = async (route, body, offers_of) => {
      const first = await api_post(server, route, body);
      if (first.status !== 413) return;
      refused++;
      const r = refusal(first.body.error.message);
      assert.ok(r, first.body.error.message);
      for (const [label, narrowed] of await offers_of(r)) {
        offered++;
        const again = await api_post(server, route, narrowed);
        if (again.status !== 200) failures.push(`${label}: ${again.status} ${JSON.stringify(again.body).slice(0, 160)} for ${JSON.stringify({ ...body, prompts: body.prompts?.length })}`);
      }
    };
    // activation and attribution patching, as PatchingView narrows them
    for (const copies of [1, 2, 4])
      for (const n of [1, 2, 5])
        for (const what of ['resid_pre', 'z_by_pos', 'attn_head_by_pos_every', 'z_all_pos', 'block_every'])
          for (const metric of ['normalized', 'logprob'])
            for (const method of ['activation', 'attribution']) {
              const body = { prompts: prompts(copies, n), what, metric, noising: false, ...(method === 'attribution' ? { method } : {}) };
              await ask('/api/model/patch', body, async (r) => {
                const T = await tokens(body.prompts[0].clean);
                const offers = method === 'attribution' ? N.attribution_narrowings(r, n) : N.patch_narrowings(r, range(L), range(T), what, n, { n_layer: L, metric });
                return offers.map((o) => [o.label, { ...body, prompts: body.prompts.slice(0, o.pairs ?? n), ...(o.layers ? { layers: o.layers } : {}), ...(o.positions ? { positions: o.positions } : {}), what: o.what ?? what }]);
              });
            }
    // path patching, as PathPatchingView narrows it
    const every = range(L * NH).map((i) => `${Math.floor(i / NH)}.${i % NH}`);
    for (const copies of [1, 2, 4])
      for (const receivers of ['final', range(NH).map((h) => `${L - 1}.${h}:k`), [`${L - 1}.0:q`, `${L - 1}.2:v`]])
        for (const senders of ['all', every.filter((_, i) => i % 2 === 0), every.slice(0, NH)]) {
          const body = { ...prompts(copies, 1)[0], metric: 'logprob', noising: true, senders, receivers };
          const to = receivers === 'final' ? 'final' : receivers.map((x) => Number(x.split('.')[0]));
          await ask('/api/model/path-patch', body, (r) => {
            const o = N.sender_narrowing(r, senders === 'all' ? every : senders, L, to);
            return o ? [[o.label, { ...body, senders: o.senders }]] : [];
          });
        }
    assert.deepEqual(failures, []);
    assert.ok(refused > 100 && offered > 30, `the loops reached refusals (${refused}) and offers (${offered})`);
  } finally {
    await server.stop();
  }
});
