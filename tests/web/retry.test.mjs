// retry.test.mjs — a model request refused for now (429 with Retry-After, 503) is sent again by
// the page itself (web/src/lib/retry.ts), on the model explorer: the countdown with the server's
// words, no send before Retry-After, Cancel, the cap and its Retry, no retry of a 400, a new
// text superseding a waiting run, the queue place still shown. The refusals are the page's
// requests answered by playwright's route interception, except the last test's: a real 429 of
// the server's model-time budget (--client-model-seconds), drawn by another client's run.
// tests/web/retry_policy.test.mjs tests the waits themselves without a browser.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { eventually, open_browser, start_server, fresh_db, repo_root, screenshot, watch_console, test_model } from './harness.mjs';
import { run } from './model_api.mjs';

let server, browser, page, problems;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  // a tiny model-time budget: the browser is never refused while alone with the model (every
  // test but the last); the last test brings in another client
  server = await start_server({ db: fresh_db(), model: test_model(), args: ['--client-model-seconds', '1e-9'] });
  browser = await open_browser();
  page = await browser.newPage();
  problems = watch_console(page);
  await page.goto(server.url + '/#/explorer');
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
  await eventually(async () => assert.ok((await tokens().getByRole('button').count()) > 0), 30_000);
});

// a test that fails before its own unroute must not leave its refusals for the tests after it
afterEach(async () => {
  await page?.unrouteAll({ behavior: 'ignoreErrors' });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const tokens = () => page.getByRole('group', { name: /^Tokens/ });
const notice = () => page.getByTestId('retry-notice');
const text_box = () => page.getByRole('textbox', { name: 'Text' });
const run_button = () => page.getByRole('button', { name: 'Run', exact: true });
const is_run = (url) => url.pathname === '/api/model/run';
const envelope = (status, message) => ({ error: { code: status === 429 ? 'rate_limited' : status === 503 ? 'unavailable' : 'invalid_argument', message } });

const axe_source = fs.readFileSync(createRequire(path.join(repo_root, 'web', 'package.json')).resolve('axe-core/axe.min.js'), 'utf8');
async function axe_violations(selector) {
  await page.evaluate(axe_source); // outside the page's Content-Security-Policy
  const result = await page.evaluate((s) => globalThis.axe.run(s, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }), selector);
  return result.violations.map((v) => `${v.id}: ${v.help}`);
}

/** Answers the page's runs with `answer(n, text)`: a refusal {status, retry_after, message},
 *  'hold' (a promise: sent on once it resolves) or null (sent on to the server). Records when
 *  each run arrived and when each refusal left, and the text each run was for. */
async function intercept(answer) {
  const log = { arrived: [], refused: [], texts: [] };
  await page.route(is_run, async (route) => {
    const n = log.arrived.push(Date.now());
    const text = JSON.parse(route.request().postData() ?? '{}').text;
    log.texts.push(text);
    const a = await answer(n, text);
    if (a && a.status) {
      log.refused.push(Date.now());
      return route.fulfill({ status: a.status, headers: a.retry_after === null ? {} : { 'Retry-After': String(a.retry_after) }, json: envelope(a.status, a.message) });
    }
    return route.continue();
  });
  return log;
}

/** Records in the page every text the retry notice shows, from now on (and on every page load
 *  after, for a test that navigates): a notice up for only a second or two, on a CI machine
 *  whose two cores also run the fuzzers, can come and go between two polls of the driver. */
function record_notices() {
  globalThis.__notices = [];
  const seen = () => {
    const n = document.querySelector('[data-testid="retry-notice"]');
    if (n) globalThis.__notices.push(n.textContent);
  };
  new MutationObserver(seen).observe(document.documentElement, { subtree: true, childList: true, characterData: true });
}
const notices_seen = () => page.evaluate(() => globalThis.__notices ?? []);
async function saw_notice(pattern, ms = 20_000) {
  await eventually(async () => assert.ok((await notices_seen()).some((t) => pattern.test(t)), `the notice showed ${pattern}`), ms);
}

/** The text's tokens are drawn (the strip holds as many as the API gives, up to the window). */
async function drawn(text) {
  const answer = await run(server, { text, heads: [[0, 0]], views: ['pattern'] });
  await eventually(async () => assert.equal(await tokens().getByRole('button').count(), Math.min(answer.tokens.length, 48)), 20_000);
}

async function send(text) {
  await text_box().fill(text);
  await run_button().click();
}

test('a 429 with Retry-After: 2 shows a countdown with the server’s words, is sent again no sooner, and the answer is drawn', async () => {
  const log = await intercept((n) => (n <= 2 ? { status: 429, retry_after: 2, message: 'Your share of the model is used up for now (test).' } : null));
  const text = 'the lamp by the door . the lamp by the door .';
  await send(text);
  await eventually(async () => assert.match(await notice().textContent(), /trying again in [23]\s+s\..*Your share of the model is used up for now \(test\)\./s));
  await screenshot(page, '95-retry-notice');
  await eventually(async () => assert.equal(await notice().count(), 0), 20_000);
  await drawn(text);
  assert.ok(log.arrived.length >= 3);
  for (const i of [0, 1]) assert.ok(log.arrived[i + 1] - log.refused[i] >= 2000, `send ${i + 2} came ${log.arrived[i + 1] - log.refused[i]} ms after the refusal`);
  await page.unroute(is_run);
});

test('Cancel stops the retries and the server’s message is shown where the explorer shows errors', async () => {
  const log = await intercept(() => ({ status: 503, retry_after: 2, message: 'The model is busy with 8 requests already (test).' }));
  await send('a cancelled text');
  await eventually(async () => assert.match(await notice().textContent(), /The model is busy; trying again in/));
  assert.deepEqual(await axe_violations('[data-testid="retry-notice"]'), [], 'the notice passes axe-core’s WCAG A/AA checks');
  await notice().getByRole('button', { name: 'Cancel' }).click();
  await eventually(async () => assert.equal(await notice().count(), 0));
  await eventually(async () => assert.match(await page.locator('.model-text-input').getByRole('alert').textContent(), /busy with 8 requests already \(test\)/));
  const sent = log.arrived.length;
  await sleep(3_500); // past Retry-After and its largest jitter
  assert.equal(log.arrived.length, sent, 'nothing is sent after Cancel');
  await page.unroute(is_run);
});

test('a 400 is not sent again', async () => {
  const log = await intercept(() => ({ status: 400, retry_after: null, message: 'Bad request (test).' }));
  await send('a refused text');
  await eventually(async () => assert.match(await page.locator('.model-text-input').getByRole('alert').textContent(), /Bad request \(test\)/));
  await sleep(1_500);
  assert.equal(log.arrived.length, 1);
  assert.equal(await notice().count(), 0);
  await page.unroute(is_run);
});

test('after six refused sends the notice says so and offers Retry, which sends again and draws the answer', async () => {
  let open = false;
  const log = await intercept(() => (open ? null : { status: 503, retry_after: 0, message: 'Still busy (test).' }));
  const text = 'the cap on tries . the cap on tries .';
  await send(text);
  await eventually(async () => assert.match(await notice().textContent(), /not sent again after 6 tries\..*Still busy \(test\)\./s), 20_000);
  await sleep(1_500);
  assert.equal(log.arrived.length, 6, 'no more sends until the learner asks');
  open = true;
  await notice().getByRole('button', { name: 'Retry' }).click();
  await eventually(async () => assert.equal(await notice().count(), 0));
  await drawn(text);
  await page.unroute(is_run);
});

test('a new text takes the place of a run waiting to be sent again: the old one is never sent again', async () => {
  const old_text = 'the old text waits';
  const log = await intercept((n, text) => (text === old_text ? { status: 429, retry_after: 30, message: 'Wait (test).' } : null));
  await send(old_text);
  await eventually(async () => assert.match(await notice().textContent(), /trying again in (3[0-9])\s+s\./));
  assert.equal(await run_button().isDisabled(), false, 'a new text may be sent while the old one waits');
  const text = 'the new text . the new text .';
  await send(text);
  await eventually(async () => assert.equal(await notice().count(), 0));
  await drawn(text);
  assert.equal(log.texts.filter((t) => t === old_text).length, 1);
  await page.unroute(is_run);
});

test('a run sent again after a wait still shows its place in the model’s queue', async () => {
  let release;
  const held = new Promise((r) => (release = r));
  const log = await intercept(async (n) => {
    if (n === 1) return { status: 503, retry_after: 1, message: 'Full queue (test).' };
    if (n === 2) await held;
    return null;
  });
  const is_queue = (url) => url.pathname === '/api/model/queue';
  await page.route(is_queue, (route) => route.fulfill({ json: { state: 'waiting', ahead: 3, waiting: 12 } }));
  try {
    await page.evaluate(record_notices);
    await send('a place in the queue');
    await saw_notice(/Full queue \(test\)/);
    await eventually(async () => assert.match(await page.getByTestId('explorer-waiting').textContent(), /3 ahead of you/), 15_000);
    assert.equal(log.arrived.length, 2, 'the refused run was sent again, and is held in the queue');
    assert.equal(await notice().count(), 0);
    release();
    await eventually(async () => assert.equal(await page.getByTestId('explorer-waiting').count(), 0), 15_000);
  } finally {
    release(); // a failure here must not leave a run held for the tests after
    await page.unroute(is_run);
    await page.unroute(is_queue);
  }
});

test('leaving the explorer ends its run’s wait: the notice goes and nothing more is sent', async () => {
  const log = await intercept(() => ({ status: 429, retry_after: 30, message: 'Wait (test).' }));
  await send('a text left behind');
  await eventually(async () => assert.match(await notice().textContent(), /Wait \(test\)/));
  await page.getByRole('navigation', { name: 'Lessons' }).getByRole('link', { name: 'Course' }).click();
  await eventually(async () => assert.equal(await notice().count(), 0));
  assert.equal(log.arrived.length, 1);
  await page.unroute(is_run);
});

test('a lesson’s model requests are sent again too, under the same notice', async () => {
  const is_model_post = (url) => url.pathname.startsWith('/api/model/') && url.pathname !== '/api/model/queue';
  const arrived = [];
  await page.route(is_model_post, (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    arrived.push(route.request().url());
    return arrived.length === 1
      ? route.fulfill({ status: 503, headers: { 'Retry-After': '1' }, json: envelope(503, 'A lesson waits (test).') })
      : route.continue();
  });
  await page.addInitScript(record_notices);
  await page.goto(server.url + '/#/lessons/trained-heads');
  await saw_notice(/The model is busy; trying again in \d\s+s\..*A lesson waits \(test\)/s);
  await eventually(async () => assert.equal(await notice().count(), 0), 20_000);
  const first = arrived[0];
  assert.ok(arrived.slice(1).includes(first), 'the refused request is sent again');
  assert.equal(await page.getByText('A lesson waits (test).').count(), 0, 'and its refusal is never shown as an error');
  await page.unroute(is_model_post);
});

// POST /api/model/run from another address of this machine: another client of the model
function run_from(address, body) {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const r = http.request(
      { host: '127.0.0.1', port: server.port, localAddress: address, method: 'POST', path: '/api/model/run', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    r.on('error', reject);
    r.end(data);
  });
}

test('a real 429 of the model-time budget, once another client uses the model, is waited out with the server’s Retry-After and words', async () => {
  await page.goto(server.url + '/#/explorer');
  await eventually(async () => assert.ok((await tokens().getByRole('button').count()) > 0), 30_000);
  assert.equal(await run_from('127.0.0.2', { text: 'another learner of the class', heads: [] }), 200);
  const refused = page.waitForResponse((r) => is_run(new URL(r.url())) && r.status() === 429);
  await send('past my budget now');
  const response = await refused;
  const retry_after = Number(response.headers()['retry-after']);
  assert.ok(retry_after >= 1, `Retry-After: ${response.headers()['retry-after']}`);
  await eventually(async () => assert.match(await notice().textContent(), /slow down; trying again in \d+\s+s\..*--client-model-seconds/s));
  const shown = Number(await notice().getByTestId('retry-seconds').textContent());
  assert.ok(shown >= retry_after - 2, `shown ${shown} s, Retry-After ${retry_after} s`);
  await notice().getByRole('button', { name: 'Cancel' }).click();
  await eventually(async () => assert.match(await page.locator('.model-text-input').getByRole('alert').textContent(), /--client-model-seconds/));
});

test('the page logged no errors but the refusals it was sent', () => {
  assert.deepEqual(problems.filter((p) => !/status of (400|429|503)/.test(p)), []);
});
