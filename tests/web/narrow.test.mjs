// narrow.test.mjs — web/src/explorer/research/narrow.ts without a browser: the narrower sweeps
// read from a work-limit refusal's envelope (the server prices them: research/patch_narrowing.h),
// through lib/api.ts's request, the one place that calls fetch, so the ApiError is the one the
// views get. A real server with a low limit (--max-patch-multiply-adds) is asked for generated
// sweeps; for each it refuses, every offer it makes is sent back as the views send it and must be
// taken, within the limit, at the cost the offer gave. tests/web/research_narrowing.test.mjs clicks them.
// narrow.ts is TypeScript: esbuild (vite's own) bundles it with lib/api.ts into one module here.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, test } from 'node:test';
import { api_get, fresh_db, repo_root, start_server, test_model } from './harness.mjs';

let N; // the module's exports
before(async () => {
  const esbuild = createRequire(createRequire(path.join(repo_root, 'web', 'package.json')).resolve('vite'))('esbuild');
  const out = await esbuild.build({
    stdin: { contents: "export * from './explorer/research/narrow.ts'; export { ApiError, request } from './lib/api.ts';", resolveDir: path.join(repo_root, 'web/src'), loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
  });
  N = await import('data:text/javascript;base64,' + Buffer.from(out.outputFiles[0].text).toString('base64'));
});

const range = (n, from = 0) => Array.from({ length: n }, (_, i) => from + i);
const envelope_error = (status, error) => new N.ApiError(status, error.code, error.message, Object.fromEntries(Object.entries(error).filter(([k]) => k !== 'code' && k !== 'message')));

test('work_refusal reads the cost, limit and offers from the envelope, and nothing else is a refusal', () => {
  const offers = [
    { label: 'the first 1 of the 4 pairs', pairs: 1, cost: 8e10 },
    { label: 'layers 0–1 only (2 of 12)', layers: [0, 1], cost: 9.4e10 },
    { label: 'the first 2 of the 8 senders (0.0 … 0.1)', senders: ['0.0', '0.1'], cost: 9e10 },
  ];
  const error = { code: 'too_long', message: 'This sweep is …', cost: 3.2e11, limit: 1e11, narrowings: offers };
  assert.deepEqual(N.work_refusal(envelope_error(413, error)), { cost: 3.2e11, limit: 1e11, message: 'This sweep is …', narrowings: offers });
  assert.deepEqual(N.work_refusal(envelope_error(413, { ...error, narrowings: [] })).narrowings, [], 'nothing fits');
  const odd = [{ label: 'no cost' }, { cost: 1 }, 'text', null, { label: 'ok', cost: 1, layers: ['x'], pairs: 1.5 }];
  assert.deepEqual(N.work_refusal(envelope_error(413, { ...error, narrowings: odd })).narrowings, [{ label: 'ok', cost: 1 }], 'malformed offers and fields left out');
  assert.equal(N.work_refusal(envelope_error(400, error)), null, 'another status');
  assert.equal(N.work_refusal(envelope_error(413, { code: 'too_long', message: 'The text is 300 tokens long' })), null, 'another 413: no offers');
  assert.equal(N.work_refusal(new Error('This sweep is …')), null, 'not an ApiError');
  assert.equal(N.work_refusal(new N.ApiError(413, 'too_long', 'x')), null, 'no envelope fields');
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

// A `headlab serve` whose work limit (2.8e7 multiply-adds) the built-in model's stories are over,
// asked for generated sweeps through lib/api.ts's request (fetch sent to the server).
const LIMIT = 2.8e7;
const STORY = [' ink crown plum fog violin arch ink crown plum fog', ' ink crown plum fog arch violin ink crown plum fog'];
const prompts = (copies, n) => Array(n).fill({ clean: STORY[0].repeat(copies), corrupted: STORY[0].repeat(copies - 1) + STORY[1], answer: ' viol', wrong: ' ar' });

test('every offer of a refused sweep is answered by the server within its limit, at the cost the offer gave', { timeout: 120_000 }, async () => {
  const server = await start_server({ db: fresh_db(), model: test_model(), args: ['--max-patch-multiply-adds', String(LIMIT)] });
  const real_fetch = globalThis.fetch;
  globalThis.fetch = (route, init) => real_fetch(typeof route === 'string' && route.startsWith('/') ? server.url + route : route, init); // the page's relative paths
  try {
    const { n_layer: L, n_head: NH } = (await api_get(server, '/api/model')).body.config;
    const failures = [];
    let refused = 0, offered = 0, answered = 0;
    // the request as the view sends it; the refusal as the view reads it
    const ask = async (route, body) => {
      try {
        await N.request('POST', route, body);
        answered++;
        return null;
      } catch (e) {
        const r = N.work_refusal(e);
        assert.ok(r, `${e.status} ${e.message}`);
        assert.equal(r.limit, LIMIT);
        assert.ok(r.cost > LIMIT);
        refused++;
        return r;
      }
    };
    const take = async (route, label, narrowed, offer, where) => {
      offered++;
      try {
        const a = await N.request('POST', route, narrowed);
        if (!(a.cost.multiply_adds <= LIMIT && a.cost.multiply_adds === offer.cost)) failures.push(`${label}: cost ${a.cost.multiply_adds}, offered ${offer.cost} for ${where}`);
      } catch (e) {
        failures.push(`${label}: ${e.status} ${e.message.slice(0, 120)} for ${where}`);
      }
    };
    // activation and attribution patching, as PatchingView narrows them
    for (const copies of [1, 2, 4])
      for (const n of [1, 2, 5])
        for (const what of ['resid_pre', 'attn_out', 'z_by_pos', 'attn_head_by_pos_every', 'z_all_pos']) // attention-only: no block_every
          for (const metric of ['normalized', 'logprob'])
            for (const method of ['activation', 'attribution']) {
              const body = { prompts: prompts(copies, n), what, metric, noising: false, ...(method === 'attribution' ? { method } : {}) };
              const where = JSON.stringify({ copies, n, what, metric, method });
              const r = await ask('/api/model/patch', body);
              if (!r) continue;
              const labels = r.narrowings.map((o) => o.label);
              assert.equal(new Set(labels).size, labels.length, `labels distinct: ${where}`);
              for (const o of r.narrowings) {
                assert.ok(o.cost <= r.limit && o.cost < r.cost, `${o.label}: ${where}`);
                assert.ok(o.pairs === undefined || (o.pairs >= 1 && o.pairs < n), `${o.label}: fewer pairs, not none`);
                assert.ok(o.layers === undefined || (o.layers.length >= 1 && o.layers.length < L && o.layers.every((l, i) => l === i)), `${o.label}: the first layers`);
                if (method === 'attribution') assert.deepEqual(Object.keys(o).sort(), ['cost', 'label', 'pairs'], 'attribution: only the pairs change its cost');
                const narrowed = { ...body, prompts: body.prompts.slice(0, o.pairs ?? n), ...(o.layers ? { layers: o.layers } : {}), ...(o.positions ? { positions: o.positions } : {}), what: o.what ?? what };
                await take('/api/model/patch', o.label, narrowed, o, where);
              }
            }
    // path patching, as PathPatchingView narrows it
    const every = range(L * NH).map((i) => `${Math.floor(i / NH)}.${i % NH}`);
    for (const copies of [1, 2, 4])
      for (const receivers of ['final', range(NH).map((h) => `${L - 1}.${h}:k`), [`${L - 1}.0:q`, `${L - 1}.2:v`]])
        for (const senders of ['all', every.filter((_, i) => i % 2 === 0), every.slice(0, NH)]) {
          const body = { ...prompts(copies, 1)[0], metric: 'logprob', noising: true, senders, receivers };
          const where = JSON.stringify({ copies, receivers, senders });
          const r = await ask('/api/model/path-patch', body);
          if (!r) continue;
          assert.ok(r.narrowings.length <= 1, where);
          for (const o of r.narrowings) {
            assert.ok(o.senders.length >= 1 && o.senders.every((s) => (senders === 'all' ? every : senders).includes(s)), `${o.label}: a subset`);
            if (receivers !== 'final') assert.ok(o.senders.every((s) => Number(s.split('.')[0]) < L - 1), `${o.label}: senders that reach a receiver`);
            await take('/api/model/path-patch', o.label, { ...body, senders: o.senders }, o, where);
          }
        }
    assert.deepEqual(failures, []);
    assert.ok(refused > 100 && offered > 40 && answered > 5, `the loops reached refusals (${refused}), offers (${offered}) and sweeps within the limit (${answered})`);
  } finally {
    globalThis.fetch = real_fetch;
    await server.stop();
  }
});
