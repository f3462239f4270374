// Lesson 3, parts 1 and 2, as a learner does them: the content-only head on their sentence,
// a shuffle, a guess checked by the server on that shuffle, the model trained without
// positions, and the learned positions' nearest-neighbour guess. Every number the page shows
// is compared with what the test asks the server for itself; no challenge ticks on defaults.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually } from './harness.mjs';
import { challenge, get, open_rope_lesson, part, post } from './rope_lesson_setup.mjs';

let server, page, problems, close;
const SENTENCE = 'the man sent his men to the mill by the river';

/** The values of a Heatmap table, row by row ("masked" where masked). */
const grid_values = (locator) =>
  locator.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.querySelector('.sr-only')?.textContent ?? '')));
const fixed2 = (rows) => rows.map((r) => r.map((v) => (v === null ? 'masked' : v.toFixed(2))));

before(async () => ({ server, page, problems, close } = await open_rope_lesson('order-grid')));
after(() => close?.());

test('no challenge of the lesson is met when the page opens', async () => {
  for (const id of ['shuffle-follows', 'wpe-neighbour', 'offset-only']) {
    await challenge(page, id).waitFor();
    assert.equal(await challenge(page, id).evaluate((li) => li.classList.contains('done')), false, id);
  }
  // nothing to check before a shuffle
  assert.equal(await page.getByTestId('shuffle-check').count(), 0);
});

test('Part 1 shows the content-only pattern the server computes for the sentence', async () => {
  const api = await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0 });
  assert.equal(api.status, 200);
  assert.deepEqual(await grid_values(page.getByTestId('order-grid')), fixed2(api.body.pattern));
});

test('Part 1: after a shuffle the old place is wrong, the word followed is right, and the new grid is the old one permuted', async () => {
  const section = part(page, 1);
  await page.getByTestId('shuffle').click();
  await page.getByTestId('shuffled-text').waitFor();
  assert.equal(await page.getByTestId('shuffled-grid').count(), 0, 'the new grid waits for the guess');
  const base = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0 })).body;
  // The page follows the token with the most peaked row; read its shuffle from the page's own request.
  const follow = base.pattern.reduce((b, row, q) => (Math.max(...row) > Math.max(...base.pattern[b]) ? q : b), 0);
  const order_req = page.waitForRequest((r) => r.url().endsWith('/api/lessons/word-order/check'));
  const choices = section.locator('label.chip'); // the learner clicks the word
  const T = base.tokens.length;
  // Guess the old place of the favourite key: under a real shuffle that is a different word.
  const fav = base.pattern[follow].indexOf(Math.max(...base.pattern[follow]));
  await choices.nth(fav).click();
  const clicked = Date.now();
  await page.getByTestId('shuffle-check').click();
  const sent = JSON.parse((await order_req).postData());
  const order = sent.answer.order;
  assert.equal(order.length, T);
  const now_at = order.indexOf(fav);
  const verdict = section.locator('[data-correct]').first();
  await verdict.waitFor();
  // The shuffled grid is the server's, and it is the first grid with rows and columns permuted.
  await page.getByTestId('shuffled-grid').waitFor();
  process.stderr.write(`click on Check to the verdict and the shuffled grid: ${Date.now() - clicked} ms\n`);
  const shuffled = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0, order })).body;
  assert.deepEqual(await grid_values(page.getByTestId('shuffled-grid')), fixed2(shuffled.pattern));
  for (let i = 0; i < T; i++)
    for (let j = 0; j < T; j++) assert.ok(Math.abs(shuffled.pattern[i][j] - base.pattern[order[i]][order[j]]) < 2e-5);
  // The guess (shuffled position fav) is right only when it holds the row's largest weight.
  const row = shuffled.pattern[order.indexOf(follow)];
  const expected_right = row[fav] >= Math.max(...row) - 2e-5;
  assert.equal(await verdict.getAttribute('data-correct'), String(expected_right), await verdict.textContent());
  assert.match(await verdict.textContent(), /\d+%/, 'the verdict quotes the numbers');
  // Now the right answer: where the favourite key went.
  if (!expected_right) {
    await choices.nth(now_at).click();
    await page.getByTestId('shuffle-check').click();
    await eventually(async () => assert.equal(await verdict.getAttribute('data-correct'), 'true'));
  }
  await eventually(async () => assert.equal(await challenge(page, 'shuffle-follows').evaluate((li) => li.classList.contains('done')), true));
});

test('Part 1: showing the new grid before guessing earns no credit', async () => {
  const section = part(page, 1);
  await page.getByTestId('shuffle').click();
  await page.getByTestId('shuffle-reveal').click();
  await page.getByTestId('shuffled-grid').waitFor();
  const req = page.waitForRequest((r) => r.url().endsWith('/api/lessons/word-order/check'));
  await section.locator('label.chip').first().click();
  await page.getByTestId('shuffle-check').click();
  const body = JSON.parse((await req).postData());
  assert.equal(body.answer.revealed, true);
  const v = section.locator('[data-correct]').first();
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'false'));
});

test('the twist: the no-positions model’s previous-token head, its score and its share on the learner’s sentence are the server’s', async () => {
  const models = (await get(server, '/api/positions/models')).body.models;
  const nopos = models.find((m) => m.positions === 'none');
  assert.ok(nopos.available, nopos.error);
  await page.getByTestId('nopos-grid').waitFor();
  assert.equal(await page.getByTestId('nopos-score').textContent(), nopos.previous_token.score.toFixed(2));
  const run = (await post(server, '/api/positions/run', { model: nopos.name, text: SENTENCE, layer: nopos.previous_token.layer, head: nopos.previous_token.head })).body;
  const masked = run.pattern.map((row, q) => row.map((v, k) => (k > q ? null : v)));
  assert.deepEqual(await grid_values(page.getByTestId('nopos-grid')), fixed2(masked));
  // what the head does on this sentence, beside an even spread, in the server's numbers
  const pct = (x) => `${Math.round(x * 100)}%`;
  const said = (await page.getByTestId('nopos-sentence-share').textContent()).replace(/\s+/g, ' ');
  assert.ok(said.includes(`gives the token just before ${pct(run.previous_token.share)} of each token’s attention`), said);
  assert.ok(said.includes(`an even spread would give ${pct(run.previous_token.chance)}`), said);
  // the caption says how to read the grid, not that a stripe is there
  assert.doesNotMatch(await page.getByTestId('nopos-twist').textContent(), /bright cells one step below the diagonal are the word before/);
});

test('Part 2: a wrong nearest-position guess is not met, the right one is, with the cosine in the reason', async () => {
  const pos = (await get(server, '/api/positions')).body;
  assert.ok(pos.learned, pos.learned_note);
  const p = 20;
  const row = pos.learned[p].map((v, j) => (j === p ? -Infinity : v));
  const best = row.indexOf(Math.max(...row));
  const wrong = row.indexOf(Math.min(...row));
  const section = part(page, 2);
  await page.getByTestId('wpe-position').fill(String(p));
  await page.getByTestId('wpe-guess').fill(String(wrong));
  await page.getByTestId('wpe-check').click();
  const v = section.locator('[data-correct]');
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'false'));
  assert.match(await v.textContent(), new RegExp(`is ${best} \\(cosine ${pos.learned[p][best].toFixed(2)}\\)`));
  await page.getByTestId('wpe-guess').fill(String(best));
  await page.getByTestId('wpe-check').click();
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'true'));
  await eventually(async () => assert.equal(await challenge(page, 'wpe-neighbour').evaluate((li) => li.classList.contains('done')), true));
});

test('Part 2: the matrices read out the server’s cosines from the keyboard', async () => {
  const pos = (await get(server, '/api/positions')).body;
  const fig = page.getByTestId('sin-matrix');
  await fig.locator('[role="application"]').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await eventually(async () =>
    assert.equal(await page.getByTestId('sin-matrix-reading').textContent(), `Positions ${pos.positions[1]} and ${pos.positions[2]}: cosine ${pos.sinusoidal[1][2].toFixed(2)}`),
  );
});

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
