// Issue 15, "views that teach": the step-through in both lessons, lesson 1's rule-built
// induction head beside the model's, grids that fit, charts with round ticks. Every number
// the page shows is compared with what the test asks the same server for.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_get, api_post, click_to_redraw, eventually, fresh_db, open_browser, screenshot, start_server, test_model, watch_console } from './harness.mjs';
import { lesson_page } from './lesson_page.mjs';
import { pick, run, scan_report } from './model_api.mjs';

let server, browser, scan;
const pages = [];
const LESSON_SENTENCE = 'the cat chased the dog . the cat chased the';

before(async () => {
  server = await start_server({ db: fresh_db(), model: test_model() });
  scan = await scan_report(server);
  browser = await open_browser();
});

after(async () => {
  for (const seen of pages) assert.deepEqual(seen, [], 'no console errors');
  await browser?.close();
  await server?.stop();
});

async function fresh_page(url, { width = 1280, reduced_motion } = {}) {
  const page = await browser.newPage();
  pages.push(watch_console(page));
  await page.setViewportSize({ width, height: 900 });
  if (reduced_motion) await page.emulateMedia({ reducedMotion: reduced_motion });
  await page.goto(url);
  return page;
}

const step_through = (page) => page.getByTestId('step-through').first();
const step_button = (st, n) => st.getByRole('button', { name: new RegExp(`^${n} · `) });
const values = (st) => st.getByTestId('step-value').allTextContents();
const sr_label = /^(score|after the mask|weight|q·k\/√\d+): ?/;
const shown = async (st) => (await values(st)).map((v) => v.replace(sr_label, ''));
const fixed = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2));
const pct = (x) => `${(100 * x).toFixed(x > 0 && x < 0.001 ? 2 : 1)}%`;

test('lesson 1: the step-through shows the rule’s score and clause for every key, then −∞ after the query, then the server’s weights', async () => {
  const page = await fresh_page(server.url + '/');
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  const api = (await api_post(server, '/api/weights', { sentence: LESSON_SENTENCE, head: 'induction', mask: true })).body;
  const q = 7; // the lesson's worked example, the second "cat"
  const st = step_through(page);
  await eventually(async () => assert.deepEqual(await shown(st), api.scores[q].map(fixed)));
  const text = await st.textContent();
  assert.ok(text.includes(api.clauses[q][2]), `the clause for key 2: ${api.clauses[q][2]}`);
  assert.equal(api.scores[q][2], 5);

  await step_button(st, 2).click();
  const masked = api.scores[q].map((s, k) => (k > q ? '−∞' : fixed(s)));
  await eventually(async () => assert.deepEqual(await shown(st), masked));
  assert.match(await st.getByTestId('step-explain').textContent(), /sets the score of the 2 keys after position 7 to −∞/);

  // Softmax: the weights are the server's, and the explanation's sum is Σ exp(s − max).
  const ms = await click_to_redraw(st, '3 · ');
  console.log(`# lesson 1 step-through: a click on "3 · Softmax" to the redrawn step: ${ms.toFixed(1)} ms`);
  await eventually(async () => assert.deepEqual(await shown(st), api.weights[q].map((w) => (w === null ? '0' : pct(w)))));
  const query_ms = await click_to_redraw(page.getByRole('toolbar', { name: 'Query token' }), 'dog', st);
  console.log(`# lesson 1: a click on another query to the redrawn step-through: ${query_ms.toFixed(1)} ms`);
  await page.getByRole('toolbar', { name: 'Query token' }).getByRole('button', { name: 'cat 7', exact: true }).click();
  await eventually(async () => assert.deepEqual(await shown(st), api.weights[q].map((w) => (w === null ? '0' : pct(w)))));
  const visible = api.scores[q].slice(0, q + 1);
  const max = Math.max(...visible);
  const sum = visible.reduce((a, s) => a + Math.exp(s - max), 0);
  assert.ok((await st.getByTestId('step-explain').textContent()).includes(`divided by the sum of them all, ${fixed(sum)}`));
});

test('lesson 1: with the mask off the mask step hides nothing and says so', async () => {
  const page = await fresh_page(server.url + '/?head=induction&query=2&mask=off');
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  const st = step_through(page);
  await step_button(st, 2).click();
  await eventually(async () => assert.match(await st.getByTestId('step-explain').textContent(), /The mask is off/));
  assert.ok(!(await shown(st)).includes('−∞'));
});

test('the step-through is keyboard usable and skippable: arrows move between steps, Skip goes to the weights', async () => {
  const page = await fresh_page(server.url + '/');
  await lesson_page(page).summary.looks_at.waitFor();
  const st = step_through(page);
  await step_button(st, 1).focus();
  await page.keyboard.press('ArrowRight');
  await eventually(async () => assert.equal(await st.getAttribute('data-step'), '1'));
  assert.equal(await step_button(st, 2).evaluate((el) => el === document.activeElement), true, 'focus follows the step');
  await page.keyboard.press('End');
  await eventually(async () => assert.equal(await st.getAttribute('data-step'), '2'));
  await page.keyboard.press('Home');
  await eventually(async () => assert.equal(await st.getAttribute('data-step'), '0'));
  await st.getByRole('button', { name: 'Skip to the weights' }).click();
  await eventually(async () => assert.equal(await st.getAttribute('data-step'), '2'));
  assert.equal(await st.getByRole('button', { name: 'Skip to the weights' }).isDisabled(), true);
  // Play walks through the steps by itself.
  await step_button(st, 1).click();
  await st.getByRole('button', { name: 'Play the steps' }).click();
  await eventually(async () => assert.equal(await st.getAttribute('data-step'), '2'), 6_000);
});

test('the step-through animates its bars, and not under prefers-reduced-motion', async () => {
  const duration = async (page) => {
    await lesson_page(page).summary.looks_at.waitFor();
    return step_through(page).locator('.step-through__fill').first().evaluate((el) => getComputedStyle(el).transitionDuration);
  };
  assert.equal(await duration(await fresh_page(server.url + '/', { reduced_motion: 'no-preference' })), '0.45s');
  assert.equal(await duration(await fresh_page(server.url + '/', { reduced_motion: 'reduce' })), '0s');
});

test('lesson 2: the step-through shows the engine’s q·k/√HS for every key, −∞ after the query, then the pattern', async () => {
  const page = await fresh_page(server.url + '/#/lessons/trained-heads');
  const model = (await api_get(server, '/api/model')).body;
  const prev = pick(scan, 'previous_token');
  const answer = await run(server, { text: 'the cat sat on the mat', heads: [[prev.layer, prev.head]], views: ['pattern', 'scores'] });
  const { scores, pattern } = answer.heads[0];
  const T = answer.tokens.length;
  const st = step_through(page);
  await st.waitFor({ timeout: 60_000 });
  const hs = model.config.n_embd / model.config.n_head;
  assert.ok((await st.textContent()).includes(`q·k/√${hs}`));
  for (const q of [1, 2]) {
    if (q === 2) await page.getByRole('button', { name: 'Next row' }).click();
    await step_button(st, 1).click();
    // Every key has its score, the later ones too (from /api/model/query-scores, which agrees with the run up to q).
    const all = (await api_post(server, '/api/model/query-scores', { text: 'the cat sat on the mat', layer: prev.layer, head: prev.head, query: q })).body.scores;
    for (let k = 0; k <= q; ++k) assert.ok(Math.abs(all[k] - scores[q][k]) < 1e-4, `key ${k}: ${all[k]} vs ${scores[q][k]}`);
    const expect_scores = Array.from({ length: T }, (_, k) => fixed(k <= q ? scores[q][k] : all[k]));
    await eventually(async () => assert.deepEqual(await shown(st), expect_scores));
    await step_button(st, 2).click();
    await eventually(async () => assert.deepEqual(await shown(st), Array.from({ length: T }, (_, k) => (k <= q ? fixed(scores[q][k]) : '−∞'))));
    await step_button(st, 3).click();
    await eventually(async () => assert.deepEqual(await shown(st), Array.from({ length: T }, (_, k) => (k <= q ? pct(pattern[q][k]) : '0'))));
  }
});

test('lesson 1: the rule-built induction head beside the model’s, both scored by the scanner on the same sentence', async () => {
  const page = await fresh_page(server.url + '/');
  const section = page.locator('section', { has: page.getByRole('heading', { level: 2, name: 'The rule beside a trained head' }) });
  const sentence = await section.getByRole('textbox', { name: 'A sentence that repeats' }).inputValue();
  const api = (await api_post(server, '/api/lessons/causal-mask/induction', { sentence })).body;
  await eventually(async () => assert.match(await section.getByTestId('rule-score').textContent(), new RegExp(`Scanner score ${api.rule_built.score.toFixed(2)} `)), 60_000);
  assert.match(await section.getByTestId('model-score').textContent(), new RegExp(`Scanner score ${api.model_head.score.toFixed(2)} \\(an even spread would score ${api.model_head.chance.toFixed(2)}\\)`));
  assert.ok((await section.textContent()).includes(api.model_head.name));
  assert.equal(await section.locator('[data-figure]').count(), 2);
  assert.equal(await section.locator('[data-figure]').first().locator('tbody tr').count(), api.tokens.length);
  // The model's head is the scanner's: labelled induction, or its top induction scorer.
  const top = pick(scan, 'induction');
  assert.equal(api.model_head.name, top.name);

  // The learner's own lesson sentence, twice (timed: a click to the redrawn scores).
  const ms = await click_to_redraw(section, 'Use my sentence, twice', section.getByTestId('rule-score'));
  console.log(`# lesson 1 comparison: a click on "Use my sentence, twice" to the redrawn scores: ${ms.toFixed(1)} ms`);
  const twice = (await api_post(server, '/api/lessons/causal-mask/induction', { sentence: `${LESSON_SENTENCE} ${LESSON_SENTENCE}` })).body;
  await eventually(async () => assert.match(await section.getByTestId('rule-score').textContent(), new RegExp(`Scanner score ${twice.rule_built.score.toFixed(2)} `)));
  assert.equal(await section.getByRole('textbox').inputValue(), `${LESSON_SENTENCE} ${LESSON_SENTENCE}`);
  // Issue 26: the sentence under the scores is chosen by them (as shown, two decimals): "finds
  // it too" only when the trained head clearly beats an even spread, never at or below it.
  const [r2, m2, c2] = [twice.rule_built.score, twice.model_head.score, twice.rule_built.chance].map((x) => Number(x.toFixed(2)));
  const want = m2 <= c2 ? /does not find it/ : m2 < 2 * c2 ? /finds it only weakly/ : m2 < r2 ? /finds it too/ : /matches the rule or beats it/;
  await eventually(async () => assert.match(await section.getByTestId('compare-reading').textContent(), want));
  const reading = await section.getByTestId('compare-reading').textContent();
  assert.match(reading, twice.queries_scored === 1 ? /scored 1 token that/ : new RegExp(`scored ${twice.queries_scored} tokens that`));

  // A sentence with nothing repeated has nothing to score, and the page says so.
  await section.getByRole('textbox').fill('one two three');
  await section.getByRole('button', { name: 'Compare' }).click();
  await eventually(async () => assert.match(await section.getByRole('alert').textContent(), /type it again/));
  // The browser logs the refused request (400) itself; nothing else may be logged.
  const seen = pages.at(-1);
  assert.ok(seen.every((e) => /status of 400/.test(e)), seen.join('\n'));
  seen.length = 0;
  await screenshot(page, '20-causal-mask-induction-comparison');
});

test('grids fit their box: a 12-token sentence in lesson 1 shows every column at 1280 px, with no cue', async () => {
  const sentence = 'one two three four five six seven eight nine ten eleven twelve';
  const page = await fresh_page(server.url + '/?sentence=' + encodeURIComponent(sentence));
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  await eventually(async () => assert.equal(await lesson.grid_columns.count(), 13));
  const scroller = page.locator('.weights-grid__scroll').first();
  assert.equal(await scroller.evaluate((el) => el.scrollWidth <= el.clientWidth + 1), true, 'nothing hidden');
  assert.equal(await page.getByTestId('grid-more').count(), 0);
});

test('at 360 px a wide grid keeps its row and column labels in view while it scrolls, and the zoom reads out the cell under the pointer', async () => {
  const page = await fresh_page(server.url + '/', { width: 360 });
  const section = page.locator('section', { has: page.getByRole('heading', { level: 2, name: 'The rule beside a trained head' }) });
  const figure = section.locator('[data-figure]').first();
  await figure.locator('tbody tr').first().waitFor({ timeout: 60_000 });
  const scroller = figure.locator('.weights-grid__scroll');
  const fits = await scroller.evaluate((el) => el.scrollWidth <= el.clientWidth + 1);
  if (!fits) {
    await eventually(async () => assert.match(await figure.getByTestId('grid-more').textContent(), /more to the right →/));
    await scroller.evaluate((el) => el.scrollTo({ left: el.scrollWidth, top: el.scrollHeight }));
    await page.waitForTimeout(100);
    const [box, row_label, col_label] = await Promise.all([
      scroller.boundingBox(),
      figure.locator('tbody th').first().boundingBox(),
      figure.locator('thead th').last().boundingBox(),
    ]);
    assert.ok(row_label.x >= box.x - 1, `the row labels stay at the left edge (${row_label.x} ≥ ${box.x})`);
    assert.ok(col_label.y >= box.y - 1, `the column labels stay at the top (${col_label.y} ≥ ${box.y})`);
  }
  // Cells scale: none is narrower than 13 px, and the grid is no wider than it must be.
  const cell = await figure.locator('td').first().evaluate((el) => el.getBoundingClientRect().width);
  assert.ok(cell >= 12.5, `cell width ${cell}`);
  const target = figure.locator('tbody tr').nth(3).locator('td').nth(1);
  const title = await target.getAttribute('title');
  await target.hover();
  await eventually(async () => assert.equal(await figure.getByTestId('grid-zoom').textContent(), title));
});

test('charts have round ticks (1, 2 or 5 × 10^k) and 11-px labels at 360 px', async () => {
  const page = await fresh_page(server.url + '/#/lessons/trained-heads', { width: 360 });
  const plot = page.locator('.line-plot svg').first();
  await plot.waitFor({ timeout: 60_000 });
  await page.waitForTimeout(300);
  for (const axis of ['x', 'y']) {
    const ticks = (await plot.locator(`text[data-tick="${axis}"]`).allTextContents()).map((t) => Number(t.replace(/,/g, '')));
    assert.ok(ticks.length >= 2, `${axis}: ${ticks}`);
    const step = ticks[1] - ticks[0];
    const k = Math.floor(Math.log10(step) + 1e-9);
    const m = Math.round(step / 10 ** k);
    assert.ok([1, 2, 5].includes(m) && Math.abs(step - m * 10 ** k) < 1e-9 * step, `${axis} step ${step}`);
    ticks.forEach((t) => assert.ok(Math.abs(t / step - Math.round(t / step)) < 1e-6, `${axis} tick ${t} is a multiple of ${step}`));
  }
  const px = await plot.evaluate((svg) => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    return Number(svg.getAttribute('font-size')) * scale;
  });
  assert.ok(px >= 11 - 1e-6, `tick labels are ${px.toFixed(1)} px`);
});
