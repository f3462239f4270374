// The model explorer: every head as a small multiple, one opened in full next to the
// scanner's scores and the model's predictions, hover/lock of a token row, the heads
// finder, and the exports (SVG, PNG, JSON, CSV) checked against the server's numbers.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_get, eventually, open_browser, screenshot, start_server, temp_dir, watch_console, test_model } from './harness.mjs';
import { pick, run, scan_report } from './model_api.mjs';

let server, browser, page, problems, model, scan;
const db = path.join(temp_dir('headlab-web-db-'), 'progress.db');
const TEXT = 'the mill by the river . the mill by the river .';

before(async () => {
  server = await start_server({ db, model: test_model() });
  const m = await api_get(server, '/api/model');
  assert.equal(m.status, 200, 'these tests need a server with a model: ' + JSON.stringify(m.body));
  model = m.body;
  scan = await scan_report(server);
  browser = await open_browser();
  page = await browser.newPage();
  problems = watch_console(page);
  await page.goto(server.url + '/');
  await page.getByRole('navigation', { name: 'Lessons' }).getByRole('link', { name: 'Explorer' }).click();
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
  await page.getByRole('textbox', { name: 'Text' }).fill(TEXT);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const thumbs = () => page.locator('.explorer__thumb');
const tokens = () => page.getByRole('group', { name: /^Tokens/ });

test('every head of the model is drawn as a small multiple, layer by layer', async () => {
  const { n_layer, n_head } = model.config;
  await eventually(async () => assert.equal(await thumbs().locator('canvas').count(), n_layer * n_head), 30_000);
  for (let l = 0; l < n_layer; ++l)
    for (let h = 0; h < n_head; ++h) assert.equal(await page.getByRole('img', { name: `Pattern of head ${l}.${h}`, exact: true }).count(), 1);
  const answer = await run(server, { text: TEXT, heads: [[0, 0]], views: ['pattern'] });
  await eventually(async () => assert.equal(await tokens().getByRole('button').count(), Math.min(answer.tokens.length, 48)));
  await screenshot(page, '70-explorer');
});

test('the token strip shows the BOS token first, marked and explained', async () => {
  const answer = await run(server, { text: TEXT, heads: [[0, 0]], views: ['pattern'] });
  assert.equal(answer.tokens[0].id, model.bos_token.id, 'the API puts BOS first by default');
  const first = tokens().getByRole('button').first();
  await eventually(async () => assert.match(await first.textContent(), /^⟨start⟩BOS0$/));
  assert.equal(await first.getAttribute('title'), 'BOS: the start token the model reads first (bos_token_id)');
  assert.equal(await tokens().locator('.token-strip__bos').count(), 1);
  assert.match(await page.getByTestId('explorer-bos-note').textContent(), /BOS token/);
});

test('the heads finder ranks heads by a score; picking one opens it with the scanner’s scores', async () => {
  await page.getByRole('combobox', { name: 'Rank every head by' }).selectOption('induction');
  const ranked = page.getByRole('list', { name: 'Heads ranked by induction' }).getByRole('button');
  const want = [...scan.heads].sort((a, b) => (b.scores.induction ?? -1) - (a.scores.induction ?? -1));
  const names = await ranked.evaluateAll((bs) => bs.map((b) => b.querySelector('.heads-finder__name').textContent));
  assert.deepEqual(names, want.map((h) => h.name));
  const best = pick(scan, 'induction');
  await ranked.filter({ hasText: new RegExp(`^${best.name.replace('.', '\\.')}`) }).first().click();
  await page.getByRole('heading', { level: 2, name: `Head ${best.name}` }).waitFor();
  const table = page.getByRole('table', { name: `Scanner scores of head ${best.name}` });
  const shown = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.dataset.score, tr.querySelectorAll('td')[0].textContent]));
  assert.deepEqual(shown, Object.entries(best.scores).map(([k, v]) => [k, v === null ? '–' : v.toFixed(2)]));
  const labels = await page.getByTestId('head-labels').textContent();
  for (const l of best.labels) assert.match(labels, new RegExp(l.name.replace(/_/g, ' ')));
});

test('hovering a token highlights its row and shows the predictions there; a click locks it until unlocked', async () => {
  const answer = await run(server, { text: TEXT, top_k: 5, heads: [[0, 0]], views: ['pattern'] });
  const q = 3;
  const token = tokens().getByRole('button').nth(q);
  await token.hover();
  const predictions = page.locator('figure', { has: page.getByText(/^Predicted after/) });
  await eventually(async () => assert.match(await predictions.locator('figcaption').textContent(), new RegExp(`\\(${q}\\)$`)));
  const probs = await predictions.locator('.top-predictions__prob').allTextContents();
  assert.deepEqual(probs, answer.top_next[q].map((p) => `${Math.round(100 * p.prob)}%`));

  await token.click();
  assert.equal(await token.getAttribute('aria-pressed'), 'true');
  await tokens().getByRole('button').nth(q + 2).hover();
  await page.mouse.move(0, 0);
  assert.match(await predictions.locator('figcaption').textContent(), new RegExp(`\\(${q}\\)$`), 'locked: moving away keeps the row');
  const unlock = page.getByRole('button', { name: /^Unlock/ });
  assert.ok(await unlock.isVisible());
  await unlock.click();
  assert.equal(await token.getAttribute('aria-pressed'), 'false');
  assert.equal(await unlock.count(), 0);
});

test('the opened head exports as SVG (its cells are the server’s weights), PNG, JSON and CSV', async () => {
  await thumbs().filter({ hasText: '0.1' }).first().click();
  await page.getByRole('heading', { level: 2, name: 'Head 0.1' }).waitFor();
  const answer = await run(server, { text: TEXT, heads: [[0, 1]], views: ['pattern'] });
  const rows = answer.heads[0].pattern;
  const save = async (kind) => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: `Save the pattern of head 0.1 as ${kind}` }).click()]);
    return { name: download.suggestedFilename(), file: await download.path() };
  };

  const svg = await save('SVG');
  assert.equal(svg.name, 'head-0-1-pattern.svg');
  const text = fs.readFileSync(svg.file, 'utf8');
  assert.match(text, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  const titles = [...text.matchAll(/<title>[^<]*: (\d\.\d\d)<\/title>/g)].map((m) => m[1]);
  assert.deepEqual(titles, rows.flatMap((row) => row.map((w) => w.toFixed(2))), 'one cell per visible weight, in order');
  // It opens: the browser parses and draws it.
  const size = await page.evaluate(async (src) => {
    const img = new Image();
    img.src = 'data:image/svg+xml;base64,' + btoa(unescape(encodeURIComponent(src)));
    await img.decode();
    return [img.width, img.height];
  }, text);
  assert.ok(size[0] > 50 && size[1] > 50, `drawn at ${size}`);

  const png = fs.readFileSync((await save('PNG')).file);
  assert.deepEqual([...png.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], 'a PNG file');

  const json = JSON.parse(fs.readFileSync((await save('JSON')).file, 'utf8'));
  assert.deepEqual(json.pattern, rows);
  const csv = fs.readFileSync((await save('CSV')).file, 'utf8').trim().split('\n');
  assert.equal(csv[0], 'query,query_token,key,key_token,weight');
  assert.equal(csv.length - 1, rows.reduce((n, r) => n + r.length, 0));
  await screenshot(page, '71-explorer-head');
});

test('a text longer than the window is drawn a window at a time', async () => {
  const long = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
  await page.getByRole('textbox', { name: 'Text' }).fill(long);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const answer = await run(server, { text: long, heads: [[0, 0]], views: ['pattern'], truncate: true });
  const T = answer.tokens.length;
  if (T <= 48) return;
  await eventually(async () => assert.match(await page.getByText(/^Showing tokens/).textContent(), new RegExp(`Showing tokens ${T - 48} to ${T - 1} of ${T}`)));
  assert.equal(await tokens().getByRole('button').count(), 48);
  await page.getByRole('button', { name: '← Earlier tokens' }).click();
  const earlier = Math.max(0, T - 48 - 24);
  await eventually(async () => assert.match(await page.getByText(/^Showing tokens/).textContent(), new RegExp(`Showing tokens ${earlier} to ${earlier + 47} of ${T}`)));
});

test('on a long text the explorer asks only for the window it draws, and asks again when the window moves', async () => {
  const long = Array.from({ length: 14 }, () => 'the mill by the river .').join(' ');
  // What the explorer fetched before windows: every head's whole pattern.
  const full_raw = await (await fetch(server.url + '/api/model/run', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ text: long, views: ['pattern'], top_k: 0 }) })).text();
  const full = { body: JSON.parse(full_raw) };
  const T = full.body.tokens.length;
  assert.ok(T > 60, `the text has ${T} tokens, more than the 48 drawn`);
  const full_bytes = Buffer.byteLength(full_raw);
  const answers = [];
  const on_response = (r) => {
    if (new URL(r.url()).pathname === '/api/model/run') answers.push({ asked: r.request().postDataJSON(), body: r.text() });
  };
  page.on('response', on_response);
  const showing = (from, to) => eventually(async () => assert.match(await page.getByText(/^Showing tokens/).textContent(), new RegExp(`Showing tokens ${from} to ${to - 1} of ${T}`)));
  // Every answer that carries heads was asked for with a window [from, to) and sends only its cells.
  const check = async (from, to) => {
    const patterns = [];
    for (const a of answers.splice(0)) {
      if (a.asked.text !== long || !a.asked.heads?.length) continue;
      assert.deepEqual(a.asked.window, { queries: [from, to], keys: [from, to] }, 'the request asks for the window drawn');
      const body = JSON.parse(await a.body);
      assert.deepEqual(body.window, a.asked.window, 'the answer says which window it carries');
      patterns.push({ bytes: Buffer.byteLength(await a.body), heads: body.heads });
    }
    assert.ok(patterns.length > 0, 'the heads were asked for');
    const heads = patterns.flatMap((p) => p.heads);
    assert.equal(heads.length, model.config.n_layer * model.config.n_head, 'every head, once');
    for (const h of heads) {
      const whole = full.body.heads.find((f) => f.layer === h.layer && f.head === h.head).pattern;
      assert.deepEqual(h.pattern, whole.slice(from, to).map((row) => row.slice(from)), `head ${h.layer}.${h.head}: the window’s cells`);
    }
    return patterns.reduce((n, p) => n + p.bytes, 0);
  };
  try {
    await page.getByRole('textbox', { name: 'Text' }).fill(long);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await showing(T - 48, T);
    const bytes = await check(T - 48, T);
    assert.ok(bytes < full_bytes / 2, `the window’s answers are ${bytes} bytes, the whole text’s ${full_bytes}`);
    await page.getByRole('button', { name: '← Earlier tokens' }).click();
    const earlier = Math.max(0, T - 48 - 24);
    await showing(earlier, earlier + 48);
    await check(earlier, earlier + 48);
  } finally {
    page.off('response', on_response);
  }
});

test('the address keeps the text, the opened head and the held row, and a copied link reopens them', async () => {
  await page.getByRole('textbox', { name: 'Text' }).fill(TEXT);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await eventually(async () => assert.equal(await tokens().getByRole('button').count(), (await run(server, { text: TEXT, heads: [[0, 0]], views: ['pattern'] })).tokens.length));
  const last = { layer: model.config.n_layer - 1, head: model.config.n_head - 1 };
  await thumbs().filter({ hasText: `${last.layer}.${last.head}` }).first().click();
  await tokens().getByRole('button').nth(4).click();
  await eventually(async () => {
    const u = new URL(page.url());
    assert.equal(u.searchParams.get('text'), TEXT);
    assert.equal(u.searchParams.get('lh'), `${last.layer}.${last.head}`);
    assert.equal(u.searchParams.get('row'), '4');
    assert.equal(u.hash, '#/explorer');
  });
  const link = page.url();
  const other = await browser.newPage();
  const other_problems = watch_console(other);
  await other.goto(link);
  await other.getByRole('heading', { level: 2, name: `Head ${last.layer}.${last.head}` }).waitFor();
  assert.equal(await other.getByRole('textbox', { name: 'Text' }).inputValue(), TEXT);
  const held = other.getByRole('group', { name: /^Tokens/ }).getByRole('button').nth(4);
  await eventually(async () => assert.equal(await held.getAttribute('aria-pressed'), 'true'));
  assert.ok(await other.getByRole('button', { name: /^Unlock/ }).isVisible());
  assert.equal(await other.getByTestId('explorer-link-notice').count(), 0);
  // a link to a head the model lacks, and a text the server refuses, say why and show the default
  const bad = new URL(link);
  bad.searchParams.set('lh', '99.0');
  bad.searchParams.set('text', Array.from({ length: 400 }, () => 'word').join(' '));
  await other.goto(bad.toString());
  const notice = other.getByTestId('explorer-link-notice');
  await eventually(async () => assert.match(await notice.textContent(), /no head 99\.0.*could not be shown/s));
  assert.match(await other.getByRole('textbox', { name: 'Text' }).inputValue(), /^The committee met/);
  // leaving the explorer takes its keys out of the address
  await other.getByRole('navigation', { name: 'Lessons' }).getByRole('link', { name: 'Course' }).click();
  await eventually(async () => assert.equal(new URL(other.url()).searchParams.get('lh'), null));
  assert.deepEqual(other_problems.filter((p) => !/status of 413/.test(p)), []);
  await other.close();
});

test('while its run waits behind other learners the explorer says how many are ahead, and stops saying it once answered', async () => {
  let release;
  const held = new Promise((r) => (release = r));
  const is_run = (url) => url.pathname === '/api/model/run' && url.searchParams.has('request_id');
  const is_queue = (url) => url.pathname === '/api/model/queue';
  const asked = [];
  await page.route(is_run, async (route) => {
    asked.push(new URL(route.request().url()).searchParams.get('request_id'));
    await held;
    await route.continue();
  });
  await page.route(is_queue, (route) => {
    const id = new URL(route.request().url()).searchParams.get('request_id');
    assert.ok(asked.includes(id), 'the page asks for the place of the run it sent');
    return route.fulfill({ json: { state: 'waiting', ahead: 3, waiting: 12 } });
  });
  await page.getByRole('textbox', { name: 'Text' }).fill('a class of forty clicks at once');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const waiting = page.getByTestId('explorer-waiting');
  await eventually(async () => assert.match(await waiting.textContent(), /3 ahead of you/));
  release();
  await eventually(async () => assert.equal(await waiting.count(), 0));
  await page.unroute(is_run);
  await page.unroute(is_queue);
  await page.getByRole('textbox', { name: 'Text' }).fill(TEXT);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await eventually(async () => assert.equal(await page.getByRole('button', { name: 'Run', exact: true }).isDisabled(), false));
});

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
