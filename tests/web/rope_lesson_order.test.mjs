// Lesson 3, parts 1 and 2, as a learner does them: the content-only head on their sentence,
// a shuffle, a guess checked by the server on that shuffle, the model trained without
// positions, and the learned positions' nearest-neighbour guess. Every number the page shows
// is compared with what the test asks the server for itself; no challenge ticks on defaults.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually } from './harness.mjs';
import { challenge, get, open_rope_lesson, part, post } from './rope_lesson_setup.mjs';

let server, page, problems, close;
// Where the wrong pick's shuffle put the followed word's favourite (each copy of it): the
// server keeps the first answer on a shuffle's answer, so the right pick needs another place.
let spent_places = [];
const SENTENCE = 'the man sent his men to the mill by the river';

/** The values of a WeightsGrid table, row by row ("masked" where masked). */
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

/** The page's current shuffle, and the row it follows with that row's favourite key, from the server. */
async function shuffle_on_page(base) {
  await page.getByTestId('shuffle').click();
  await page.getByTestId('shuffled-text').waitFor();
  const order = (await page.getByTestId('shuffled-text').getAttribute('data-order')).split(',').map(Number);
  const follow = base.pattern.reduce((b, row, q) => (Math.max(...row) > Math.max(...base.pattern[b]) ? q : b), 0);
  const fav = base.pattern[follow].indexOf(Math.max(...base.pattern[follow]));
  return { order, follow, fav, now_at: order.indexOf(fav) };
}

/** Where the copies of base's token `fav` sit in the shuffle `order`. */
const places = (order, base, fav) =>
  order.map((o, i) => (base.tokens[o].id === base.tokens[fav].id ? i : -1)).filter((i) => i >= 0);

test('Part 1 draws a leading space, so “the” and “·the” (two tokens) look different in the grid’s labels', async () => {
  const base = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0 })).body;
  const texts = base.tokens.map((t) => t.text);
  assert.ok(texts.includes('the') && texts.includes(' the'), JSON.stringify(texts));
  const heads = await page.getByTestId('order-grid').locator('th.weights-grid__key .weights-grid__token').allTextContents();
  assert.deepEqual(heads, texts.map((t) => t.replace(/ /g, '·')));
  assert.match(await page.getByTestId('order-grid-for').textContent(), /“the” and “·the” are different tokens/);
});

test('Part 1: a wrong pick is not shown where the word went, nor the new grid, and the shuffle is spent', async () => {
  const section = part(page, 1);
  const base = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0 })).body;
  const { order, follow, fav, now_at } = await shuffle_on_page(base);
  spent_places = places(order, base, fav);
  assert.notEqual(base.tokens[order[fav]].id, base.tokens[fav].id, 'the page shuffles the favourite word away from its place');
  assert.equal(await page.getByTestId('shuffled-grid').count(), 0, 'the new grid waits for the guess');
  const choices = section.locator('label.chip');
  await choices.nth(fav).click(); // the old place: a different token now
  await page.getByTestId('shuffle-check').click();
  const verdict = section.locator('[data-correct]').first();
  await eventually(async () => assert.equal(await verdict.getAttribute('data-correct'), 'false'));
  const said = await verdict.textContent();
  assert.match(said, /\d+%/, 'the verdict quotes the numbers');
  assert.doesNotMatch(said, /now at position/);
  assert.doesNotMatch(said, new RegExp(`position ${now_at}\\b`), said);
  assert.equal(await page.getByTestId('shuffled-grid').count(), 0, 'a wrong pick does not see the grid that holds the answer');
  assert.equal(await page.getByTestId('shuffle-check').isDisabled(), true);
  await page.getByTestId('shuffle-spent').waitFor();
  void follow;
});

test('Part 1: the pick that follows the word ticks, and the sentence under the new grid is chosen by its numbers', async () => {
  const section = part(page, 1);
  const base = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0 })).body;
  // a shuffle sending the favourite where the wrong pick's did asks the same question again:
  // shuffle until it goes elsewhere
  let shuffle = await shuffle_on_page(base);
  for (let i = 0; i < 40 && places(shuffle.order, base, shuffle.fav).some((p) => spent_places.includes(p)); i++)
    shuffle = await shuffle_on_page(base);
  const { order, follow, now_at } = shuffle;
  await section.locator('label.chip').nth(now_at).click();
  const clicked = Date.now();
  await page.getByTestId('shuffle-check').click();
  const verdict = section.locator('[data-correct]').first();
  await eventually(async () => assert.equal(await verdict.getAttribute('data-correct'), 'true'));
  await page.getByTestId('shuffled-grid').waitFor();
  process.stderr.write(`click on Check to the verdict and the shuffled grid: ${Date.now() - clicked} ms\n`);
  const shuffled = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0, order })).body;
  assert.deepEqual(await grid_values(page.getByTestId('shuffled-grid')), fixed2(shuffled.pattern));
  let gap = 0;
  for (let i = 0; i < order.length; i++)
    for (let j = 0; j < order.length; j++) gap = Math.max(gap, Math.abs(shuffled.pattern[i][j] - base.pattern[order[i]][order[j]]));
  const reading = await page.getByTestId('shuffled-reading').textContent();
  if (gap < 0.005) assert.match(reading, /order is invisible to it/);
  else assert.match(reading, /is not the first one permuted/);
  assert.ok(reading.includes(gap < 0.005 ? `at most ${gap.toFixed(4)}` : gap.toFixed(2)), reading);
  const row = shuffled.pattern[order.indexOf(follow)];
  assert.ok(reading.includes(`${Math.round(Math.max(...row) * 100)}%`), reading);
  await eventually(async () => assert.equal(await challenge(page, 'shuffle-follows').evaluate((li) => li.classList.contains('done')), true));
});

test('Part 1: showing the new grid before guessing is a reveal the server is told of, and earns no credit', async () => {
  const section = part(page, 1);
  const base = (await post(server, '/api/positions/content-only', { text: SENTENCE, head: 0 })).body;
  const { order, now_at } = await shuffle_on_page(base);
  const req = page.waitForRequest((r) => r.url().endsWith('/api/lessons/word-order/check'));
  await page.getByTestId('shuffle-reveal').click();
  const body = JSON.parse((await req).postData());
  assert.equal(body.answer.revealed, true);
  assert.equal(body.answer.positions.length, 1, 'no pick goes with a reveal');
  await page.getByTestId('shuffled-grid').waitFor();
  const v = section.locator('[data-correct]').first();
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'false'));
  // the word may be in the text twice (“·the”): either copy holds the same share
  const copies = order.map((o, i) => (base.tokens[o].id === base.tokens[order[now_at]].id ? i : -1)).filter((i) => i >= 0);
  assert.match(await v.textContent(), new RegExp(`now at position (${copies.join('|')}) `));
  await section.locator('label.chip').nth(now_at).click();
  const again = page.waitForResponse((r) => r.url().endsWith('/api/lessons/word-order/check'));
  await page.getByTestId('shuffle-check').click();
  assert.equal((await (await again).json()).correct, false);
  await eventually(async () => assert.match(await v.textContent(), /earns no credit/));
  assert.equal(await v.getAttribute('data-correct'), 'false');
});

test('Part 1: a sentence that fails clears the previous sentence’s grid and scores', async () => {
  await page.getByTestId('order-grid').waitFor();
  await page.getByTestId('order-text').fill('   ');
  await page.getByTestId('order-text').press('Enter');
  await page.getByTestId('order-error').waitFor();
  assert.equal(await page.getByTestId('order-grid').count(), 0);
  assert.equal(await page.getByTestId('shuffled-text').count(), 0);
  assert.doesNotMatch(await page.getByTestId('order-error').textContent(), /'text'|field/i);
  // The twist below still shows the last sentence that ran, and says which.
  assert.match(await page.getByTestId('nopos-twist').textContent(), new RegExp(`On “${SENTENCE}”`));
  await page.getByTestId('order-text').fill(SENTENCE);
  await page.getByTestId('order-text').press('Enter');
  await page.getByTestId('order-grid').waitFor();
});

test('Part 1 draws a piece of a character as its bytes with the character it belongs to, never “�”', async () => {
  const text = 'the 𝔸 river';
  const run = (await post(server, '/api/positions/content-only', { text, head: 0 })).body;
  const bytes = new TextEncoder().encode(text);
  const pieces = run.tokens.filter((t) => t.text.includes('\uFFFD'));
  assert.ok(pieces.length > 0, 'the tokenizer cuts 𝔸 into bytes: ' + JSON.stringify(run.tokens));
  await page.getByTestId('order-text').fill(text);
  await page.getByTestId('order-text').press('Enter');
  await eventually(async () => assert.match(await page.getByTestId('order-grid-for').textContent(), /𝔸 river/));
  const heads = await page.getByTestId('order-grid').locator('th.weights-grid__key .weights-grid__token').allTextContents();
  for (const h of heads) assert.doesNotMatch(h, /\uFFFD/);
  const hex = (t) => [...bytes.slice(t.begin, t.end)].map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join(' ');
  for (const t of pieces) assert.ok(heads.includes(`⟨${hex(t)}⟩ of “𝔸”`), `${hex(t)} in ${JSON.stringify(heads)}`);
  await page.getByTestId('order-text').fill(SENTENCE);
  await page.getByTestId('order-text').press('Enter');
  await eventually(async () => assert.match(await page.getByTestId('order-grid-for').textContent(), new RegExp(SENTENCE)));
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

test('Part 2: a wrong nearest-position guess is not met and never told the answer; the row stays hidden; the right answer then earns nothing there, and a first right guess elsewhere is met', async () => {
  const pos = (await get(server, '/api/positions')).body;
  assert.ok(pos.learned, pos.learned_note);
  const p = 20;
  const row = pos.learned[p].map((v, j) => (j === p ? -Infinity : v));
  const best = row.indexOf(Math.max(...row));
  // the least like it among the others (not p itself: "most like itself" tells nothing, and spends nothing)
  const wrong = pos.learned[p].reduce((w, x, j) => (j !== p && (w < 0 || x < pos.learned[p][w]) ? j : w), -1);
  const section = part(page, 2);
  await page.getByTestId('wpe-position').fill(String(p));
  await page.getByTestId('wpe-guess').fill(String(wrong));
  await page.getByTestId('wpe-check').click();
  const v = section.locator('[data-correct]');
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'false'));
  const said = await v.textContent();
  assert.ok(said.includes(`cosine ${pos.learned[p][wrong].toFixed(2)}`), said);
  assert.doesNotMatch(said, new RegExp(`\\b${best}\\b(?!%)`), 'the answer is not named: ' + said);
  // the row is still hidden: it would show the answer
  assert.equal(await page.getByTestId('wpe-matrix').getAttribute('data-hidden'), String(p));
  // Steered there by "how far off": the server keeps the first answer on a position.
  await page.getByTestId('wpe-guess').fill(String(best));
  await page.getByTestId('wpe-check').click();
  await eventually(async () => assert.match(await v.textContent(), /only the first answer on a position counts/));
  assert.equal(await v.getAttribute('data-correct'), 'false');
  assert.equal(await challenge(page, 'wpe-neighbour').evaluate((li) => li.classList.contains('done')), false);
  // A first guess on another position is a fresh one.
  const p2 = 40;
  const row2 = pos.learned[p2].map((x, j) => (j === p2 ? -Infinity : x));
  const best2 = row2.indexOf(Math.max(...row2));
  await page.getByTestId('wpe-position').fill(String(p2));
  await page.getByTestId('wpe-guess').fill(String(best2));
  await page.getByTestId('wpe-check').click();
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'true'));
  assert.equal(await page.getByTestId('wpe-matrix').getAttribute('data-hidden'), null, 'a right guess shows the row');
  // The reading is chosen by the numbers: a neighbour or not.
  const right = await v.textContent();
  assert.match(right, Math.abs(best2 - p2) === 1 ? /It is a neighbour/ : /It is not a neighbour/);
  await eventually(async () => assert.equal(await challenge(page, 'wpe-neighbour').evaluate((li) => li.classList.contains('done')), true));
});

test('Part 2: the guess fields take whole positions only, with one plain message per field', async () => {
  const pos = (await get(server, '/api/positions')).body;
  const N = pos.positions.length;
  await page.getByTestId('wpe-position').fill('1.5');
  await eventually(async () =>
    assert.equal(await page.getByTestId('wpe-position-error').textContent(), `Position must be a whole number from 0 to ${N - 1}; “1.5” is not one.`),
  );
  await page.getByTestId('wpe-position').fill(String(N));
  await eventually(async () => assert.match(await page.getByTestId('wpe-position-error').textContent(), new RegExp(`${N} is above that\\.$`)));
  await page.getByTestId('wpe-position').fill('3');
  await page.getByTestId('wpe-guess').fill('');
  const sent = [];
  page.on('request', (r) => r.url().endsWith('/api/lessons/word-order/check') && sent.push(r));
  await page.getByTestId('wpe-check').click();
  await eventually(async () => assert.match(await page.getByTestId('wpe-guess-error').textContent(), /^Your guess must be a whole number from 0 to \d+; it is empty\.$/));
  assert.equal(sent.length, 0, 'nothing is sent until the fields are valid');
  assert.doesNotMatch(await part(page, 2).textContent(), /Answer field|'positions'/);
});

test('Part 2: after “Show the answer” the right guess earns no credit, even after a reload', async () => {
  // A new learner, who has not earned it yet.
  await page.evaluate(() => localStorage.removeItem('headlab.learner'));
  await page.reload();
  await page.getByTestId('wpe-position').waitFor();
  const pos = (await get(server, '/api/positions')).body;
  const p = 30;
  const row = pos.learned[p].map((v, j) => (j === p ? -Infinity : v));
  const best = row.indexOf(Math.max(...row));
  const v = part(page, 2).locator('[data-correct]');
  await page.getByTestId('wpe-position').fill(String(p));
  await page.getByTestId('wpe-reveal').click();
  await eventually(async () => assert.match(await v.textContent(), new RegExp(`position ${p} is ${best} \\(cosine`)));
  await page.getByTestId('wpe-guess').fill(String(best));
  await page.getByTestId('wpe-check').click();
  await eventually(async () => assert.match(await v.textContent(), /earns no credit/));
  assert.equal(await v.getAttribute('data-correct'), 'false');
  await page.reload();
  await page.getByTestId('wpe-position').fill(String(p));
  await page.getByTestId('wpe-guess').fill(String(best));
  await page.getByTestId('wpe-check').click();
  await eventually(async () => assert.match(await v.textContent(), /earns no credit/));
  assert.equal(await challenge(page, 'wpe-neighbour').evaluate((li) => li.classList.contains('done')), false);
});

test('Part 1’s grids are the course’s shared weights grid with its colour legend, as in lessons 1 and 2', async () => {
  for (const id of ['order-grid', 'nopos-grid']) {
    const grid = page.getByTestId(id);
    assert.equal(await grid.locator('figure.weights-grid').count(), 1, id);
    assert.equal(await grid.locator('.legend').count(), 1, `${id} has the colour legend`);
    assert.match(await grid.locator('figcaption').textContent(), /each row adds up to 1/);
  }
  assert.match(await page.getByTestId('nopos-grid').locator('figcaption').textContent(), /Hatched cells are masked/);
  assert.match(await page.getByTestId('order-grid').locator('figcaption').textContent(), /The causal mask is off/);
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
