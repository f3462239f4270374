// retry_policy.test.mjs — web/src/lib/retry.ts without a browser: which refusals are waited out,
// how long (never before Retry-After, spread by jitter, capped) and the send-again loop; and
// lib/api.ts's choice of the calls that retry. retry.ts is TypeScript: esbuild (vite's own)
// bundles it with lib/api.ts into one module here. tests/web/retry.test.mjs drives the page.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, test } from 'node:test';
import { repo_root } from './harness.mjs';

let R; // the module's exports
before(async () => {
  const esbuild = createRequire(createRequire(path.join(repo_root, 'web', 'package.json')).resolve('vite'))('esbuild');
  const out = await esbuild.build({
    stdin: { contents: "export * from './lib/retry.ts'; export { ApiError, is_retried } from './lib/api.ts';", resolveDir: path.join(repo_root, 'web/src'), loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
  });
  R = await import('data:text/javascript;base64,' + Buffer.from(out.outputFiles[0].text).toString('base64'));
});

const refused = (status, retry_after_s = null, details = {}) => new R.ApiError(status, status === 429 ? 'rate_limited' : 'unavailable', 'busy (test)', details, retry_after_s);
const fixed = (x) => () => x;

test('only 429 and 503 are waited out, and not a server that has no model to wait for', () => {
  assert.equal(R.refusal_of(refused(429, 12)).retry_after_s, 12);
  assert.equal(R.refusal_of(refused(503)).retry_after_s, null);
  assert.equal(R.refusal_of(refused(503, 2, { model_loaded: false })), null);
  for (const status of [0, 400, 404, 413, 500, 507]) assert.equal(R.refusal_of(new R.ApiError(status, 'x', 'm')), null, `status ${status}`);
  assert.equal(R.refusal_of(new Error('plain')), null);
  assert.equal(R.refusal_of(undefined), null);
});

test('Retry-After is read as seconds or as an HTTP date', () => {
  assert.equal(R.parse_retry_after('12'), 12);
  assert.equal(R.parse_retry_after(' 0 '), 0);
  const now = Date.parse('Mon, 07 Dec 2026 04:00:00 GMT');
  assert.equal(R.parse_retry_after('Mon, 07 Dec 2026 04:00:30 GMT', now), 30);
  assert.equal(R.parse_retry_after('Mon, 07 Dec 2026 03:59:00 GMT', now), 0);
  assert.equal(R.parse_retry_after('soon'), null);
  assert.equal(R.parse_retry_after('-3'), null);
  assert.equal(R.parse_retry_after(null), null);
});

test('a wait is never shorter than Retry-After, and forty learners refused together return spread over a second or more', () => {
  const refusal = R.refusal_of(refused(429, 2));
  const waits = Array.from({ length: 40 }, (_, i) => R.retry_wait_ms(refusal, 1, 0, fixed(i / 40)));
  assert.ok(Math.min(...waits) >= 2000, `shortest ${Math.min(...waits)} ms`);
  assert.ok(Math.max(...waits) - Math.min(...waits) >= 900, `spread ${Math.max(...waits) - Math.min(...waits)} ms`);
  assert.equal(new Set(waits.map((w) => Math.floor(w / 100))).size, 10, 'every tenth of a second of the spread is used');
  // a long Retry-After spreads by a fraction of itself
  const long = R.refusal_of(refused(503, 20));
  assert.equal(R.retry_wait_ms(long, 1, 0, fixed(0)), 20_000);
  assert.equal(R.retry_wait_ms(long, 1, 0, fixed(0.5)), 20_000 + 0.5 * 0.3 * 20_000);
});

test('without Retry-After the backoff doubles with each refusal, with jitter, up to its cap', () => {
  const refusal = R.refusal_of(refused(503));
  const p = R.CLASS_POLICY;
  const low = (attempt) => R.retry_wait_ms(refusal, attempt, 0, fixed(0));
  const high = (attempt) => R.retry_wait_ms(refusal, attempt, 0, fixed(0.999999));
  assert.equal(low(1), p.backoff_ms / 2);
  assert.equal(low(2), p.backoff_ms);
  assert.equal(low(3), 2 * p.backoff_ms);
  assert.ok(high(1) > low(1) && high(1) <= 1.5 * p.backoff_ms);
  assert.equal(R.retry_wait_ms(refusal, 5, 0, fixed(0), { ...p, max_attempts: 99 }), p.backoff_cap_ms / 2, 'the cap');
});

test('the retries stop at the cap on sends and on the time waited', () => {
  const p = R.CLASS_POLICY;
  const refusal = R.refusal_of(refused(429, 2));
  assert.notEqual(R.retry_wait_ms(refusal, p.max_attempts - 1, 0, fixed(0)), null);
  assert.equal(R.retry_wait_ms(refusal, p.max_attempts, 0, fixed(0)), null, 'max_attempts sends in all');
  assert.equal(R.retry_wait_ms(refusal, 1, p.max_total_wait_ms - 1000, fixed(0)), null, 'the time waited');
  assert.equal(R.retry_wait_ms(R.refusal_of(refused(429, 600)), 1, 0, fixed(0)), null, 'a wait of ten minutes is the learner’s choice');
});

// with_retry with waits of 0 ms (Retry-After 0, random 0) unless a test needs a pending wait
const quick = { random: fixed(0) };

test('with_retry sends again after each refusal until answered, showing each wait and hiding it as it ends', async () => {
  let sends = 0;
  const shown = [];
  const open = new Set();
  const answer = await R.with_retry(
    async () => {
      if (++sends <= 2) throw refused(429, 0);
      return 'answer';
    },
    { ...quick, report: (w) => (shown.push(w), open.add(w), () => open.delete(w)) },
  );
  assert.equal(answer, 'answer');
  assert.equal(sends, 3);
  assert.deepEqual(shown.map((w) => [w.status, w.attempt, w.message]), [[429, 1, 'busy (test)'], [429, 2, 'busy (test)']]);
  assert.equal(open.size, 0);
});

test('with_retry sends a 400 once and fails with it', async () => {
  let sends = 0;
  const bad = new R.ApiError(400, 'invalid_argument', 'no');
  await assert.rejects(R.with_retry(async () => (++sends, Promise.reject(bad)), quick), (e) => e === bad);
  assert.equal(sends, 1);
});

test('at the cap with_retry waits for the learner: Retry starts a new round, Cancel fails with the refusal', async () => {
  const policy = { ...R.CLASS_POLICY, max_attempts: 3 };
  let sends = 0;
  const waits = [];
  const call = R.with_retry(async () => (++sends, Promise.reject(refused(503, 0))), { ...quick, policy, report: (w) => (waits.push(w), () => {}) });
  const until_gave_up = async (n) => {
    while (waits.filter((w) => w.until === null).length < n) await new Promise((r) => setTimeout(r, 5));
  };
  await until_gave_up(1);
  assert.equal(sends, 3);
  waits.at(-1).try_now();
  await until_gave_up(2);
  assert.equal(sends, 6, 'a new round of sends');
  waits.at(-1).cancel();
  await assert.rejects(call, (e) => e.status === 503);
});

test('without a report to show it, with_retry fails at the cap instead of waiting for a choice nobody can make', async () => {
  let sends = 0;
  await assert.rejects(R.with_retry(async () => (++sends, Promise.reject(refused(503, 0))), { ...quick, policy: { ...R.CLASS_POLICY, max_attempts: 2 } }), (e) => e.status === 503);
  assert.equal(sends, 2);
});

test('a pending wait ends at once when its request is superseded, or on Cancel, and nothing more is sent', async () => {
  for (const how of ['abort', 'cancel']) {
    const controller = new AbortController();
    let sends = 0;
    let wait;
    const call = R.with_retry(async () => (++sends, Promise.reject(refused(429, 3600))), {
      ...quick,
      policy: { ...R.CLASS_POLICY, max_total_wait_ms: 1e9 },
      signal: controller.signal,
      report: (w) => ((wait = w), () => {}),
    });
    while (!wait) await new Promise((r) => setTimeout(r, 5));
    assert.ok(wait.until >= Date.now() + 3590_000, 'an hour’s Retry-After honoured');
    if (how === 'abort') controller.abort(new Error('superseded'));
    else wait.cancel();
    await assert.rejects(call, how === 'abort' ? /superseded/ : (e) => e.status === 429);
    assert.equal(sends, 1, how);
  }
});

test('the model’s routes and the progress writes retry; class joins, feedback and the queue poll do not', () => {
  for (const [m, p] of [
    ['POST', '/api/model/run?request_id=ab'],
    ['POST', '/api/model/patch'],
    ['POST', '/api/model/path-patch'],
    ['POST', '/api/model/intervene'],
    ['GET', '/api/model/scan'],
    ['POST', '/api/weights'],
    ['POST', '/api/positions/run'],
    ['POST', '/api/progress/check'],
    ['POST', '/api/lessons/word-order/check'],
    ['POST', '/api/lessons/causal-mask/induction'],
  ])
    assert.equal(R.is_retried(m, p), true, `${m} ${p}`);
  for (const [m, p] of [
    ['GET', '/api/model'],
    ['GET', '/api/model/queue?request_id=ab'],
    ['POST', '/api/class/join'],
    ['POST', '/api/classes'],
    ['POST', '/api/feedback'],
    ['GET', '/api/progress?learner=x&lesson=y'],
  ])
    assert.equal(R.is_retried(m, p), false, `${m} ${p}`);
});
