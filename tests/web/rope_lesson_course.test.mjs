// Lesson 3, part 4 and the rest: the three lesson models with the scanner's scores and the
// loss measured live, the quiz, the programs' build-time output, the course around the
// lesson (pager, overview, progress).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually } from './harness.mjs';
import { challenge, get, open_rope_lesson, post } from './rope_lesson_setup.mjs';

let server, browser, page, problems, close;

before(async () => ({ server, browser, page, problems, close } = await open_rope_lesson('order-grid')));
after(() => close?.());

test('Part 4 shows each lesson model’s best previous-token and induction heads as the scanner scores them', async () => {
  const models = (await get(server, '/api/positions/models')).body.models;
  assert.deepEqual(models.map((m) => m.positions), ['none', 'learned', 'rotary']);
  for (const m of models) {
    const card = page.getByTestId(`lesson-model-${m.positions}`);
    await card.getByTestId('model-previous').waitFor({ timeout: 60_000 });
    assert.ok(m.available, m.error);
    const prev = `${m.previous_token.layer}.${m.previous_token.head}: ${m.previous_token.score.toFixed(2)} (even spread ${m.previous_token.chance.toFixed(2)})`;
    assert.equal((await card.getByTestId('model-previous').textContent()).replace(/\s+/g, ' ').trim(), prev);
    const ind = `${m.induction.layer}.${m.induction.head}: ${m.induction.score.toFixed(2)} (even spread ${m.induction.chance.toFixed(2)})`;
    assert.equal((await card.getByTestId('model-induction').textContent()).replace(/\s+/g, ' ').trim(), ind);
    assert.equal(await card.getByTestId('model-positions').textContent(), m.config_positions);
    // the previous-token head by where the query sits, each band beside an even spread
    const bands = m.previous_by_position.map((b) => `queries ${b.from}–${b.to - 1}: ${b.share.toFixed(2)} (even spread ${b.chance.toFixed(2)})`);
    assert.deepEqual(await card.getByTestId('model-bands').locator('li').evaluateAll((lis) => lis.map((li) => li.textContent.replace(/\s+/g, ' ').trim())), bands);
  }
});

test('Part 4 measures the loss by position live, as the server computes it', async () => {
  const card = page.getByTestId('lesson-model-rotary');
  const started = Date.now();
  await card.getByTestId('measure-length').click();
  await card.getByTestId('length-result').waitFor({ timeout: 60_000 });
  const ms = Date.now() - started;
  const l = (await post(server, '/api/positions/length', { model: 'headlab-rope' })).body;
  const text = await card.getByTestId('length-result').textContent();
  assert.match(text, new RegExp(`Mean loss at positions 0–${l.trained_context - 1}: ${l.inside.toFixed(3)} nats`));
  if (l.beyond !== null) assert.match(text, new RegExp(`${l.beyond.toFixed(3)} nats`));
  else assert.match(text, /cannot run it there/);
  // the chart marks where the trained length ends
  assert.equal(await page.locator(`section[data-part="4"] svg line[data-mark="${l.trained_context}"]`).count(), 1);
  process.stderr.write(`click to measured loss: ${ms} ms\n`);
});

test('Part 4 interprets the measured losses with a sentence chosen by them: the lowest named, what loss does not tell', async () => {
  const models = (await get(server, '/api/positions/models')).body.models;
  const rows = [];
  for (const m of models) {
    const card = page.getByTestId(`lesson-model-${m.positions}`);
    if (!(await card.getByTestId('length-result').count())) {
      await card.getByTestId('measure-length').click();
      await card.getByTestId('length-result').waitFor({ timeout: 60_000 });
    }
    const l = (await post(server, '/api/positions/length', { model: m.name })).body;
    rows.push({ m, inside: l.inside });
  }
  rows.sort((a, b) => a.inside - b.inside);
  const said = (await page.getByTestId('loss-reading').textContent()).replace(/\s+/g, ' ');
  for (const r of rows) assert.ok(said.includes(`${r.m.title.toLowerCase()} ${r.inside.toFixed(3)}`), said);
  const gap = rows[1].inside - rows[0].inside;
  if (gap < 0.005) assert.match(said, /are level/);
  else if (rows[0].m.positions === 'none') {
    assert.match(said, /^The model with no positions has the lowest loss/);
    assert.match(said, /not which heads find order/);
  } else assert.ok(said.startsWith(`The ${rows[0].m.title.toLowerCase()} model has the lowest loss`), said);
  if (gap >= 0.005) assert.ok(said.includes(`${gap.toFixed(3)} below the next`), said);
});

test('the quiz: a wrong answer is not right, the right one is, and the answer can be shown', async () => {
  const quiz = page.getByTestId('quiz');
  await quiz.getByRole('radio', { name: /Nothing about position/ }).check();
  await quiz.getByRole('button', { name: 'Check' }).click();
  assert.equal(await quiz.locator('[data-correct]').getAttribute('data-correct'), 'false');
  await quiz.getByRole('radio', { name: /How many tokens came before/ }).check();
  await quiz.getByRole('button', { name: 'Check' }).click();
  assert.equal(await quiz.locator('[data-correct]').getAttribute('data-correct'), 'true');
  await quiz.getByRole('button', { name: 'Show the answer' }).click();
  assert.match(await page.getByTestId('quiz-answer').textContent(), /1\/\(t \+ 1\)/);
});

test('the programs show the output the build printed, and it states the engine’s q·k', async () => {
  const programs = (await get(server, '/api/lessons/word-order/programs')).body.programs;
  assert.deepEqual(programs.map((p) => p.id), ['numpy', 'cpp']);
  const engine = (await post(server, '/api/rope', { pairs: [[5, 2], [105, 102]] })).body.pairs;
  for (const p of programs) {
    assert.match(p.output, new RegExp(`q at    5, k at    2, offset 3: q\\.k = ${engine[0].dot.toFixed(4)}`));
    await eventually(async () => assert.ok((await page.locator('pre').allTextContents()).some((t) => t.includes(p.output.trim().split('\n')[0]))));
  }
});

test('the course: lesson 3 comes after lesson 2 in the pager and the overview, with its progress', async () => {
  const lessons = (await get(server, '/api/lessons')).body.lessons;
  assert.deepEqual(lessons.map((l) => [l.id, l.number, l.coming]), [['causal-mask', 1, false], ['trained-heads', 2, false], ['word-order', 3, false]]);
  assert.equal(await page.locator('a[rel="prev"]').textContent(), '2 · What trained heads learn');
  assert.equal(await page.locator('a[rel="next"]').count(), 0);
  await page.goto(server.url + '/#/lessons/trained-heads');
  await eventually(async () => assert.equal(await page.locator('a[rel="next"]').textContent(), '3 · Encoding word order and RoPE'));
  await page.goto(server.url + '/#/course');
  const item = page.locator('li[data-lesson="word-order"]');
  await item.getByRole('link', { name: 'Encoding word order and RoPE' }).waitFor();
  await eventually(async () => assert.match(await item.getByTestId('lesson-progress').textContent(), /of 3 challenges done/));
  await page.goto(server.url + '/#/lessons/word-order');
  await page.getByTestId('order-grid').waitFor();
  for (const id of ['shuffle-follows', 'wpe-neighbour', 'offset-only'])
    assert.equal(await challenge(page, id).evaluate((li) => li.classList.contains('done')), false, `${id} is not met by looking`);
});

test('the lesson keeps its state in the address: a link reproduces the sentence, head, pairs and θ', async () => {
  const p = await browser.newPage();
  const q = '?order_text=' + encodeURIComponent('the river by the mill') + '&order_head=1&pairs=5,2,905,902&rope_theta=500000&rope_hs=128';
  await p.goto(server.url + '/' + q + '#/lessons/word-order');
  await p.getByTestId('order-grid').waitFor({ timeout: 30_000 });
  assert.equal(await p.getByTestId('order-text').inputValue(), 'the river by the mill');
  assert.equal(await p.getByTestId('order-head').inputValue(), '1');
  const api = (await post(server, '/api/positions/content-only', { text: 'the river by the mill', head: 1 })).body;
  assert.equal(await p.getByTestId('order-grid').locator('tbody tr').count(), api.tokens.length);
  assert.equal(await p.getByTestId('offset-2').inputValue(), '905');
  await eventually(async () => assert.match(await p.getByTestId('calc-table').textContent(), /θ = 500,000, HS = 128/));
  // a change is written back; going back to a default removes its key
  await p.getByTestId('offset-3').fill('900');
  await eventually(async () => assert.match(await p.evaluate(() => location.search), /pairs=5%2C2%2C905%2C900/));
  await p.getByTestId('calc-theta').fill('10000');
  await p.getByTestId('calc-hs').fill('64');
  await eventually(async () => assert.doesNotMatch(await p.evaluate(() => location.search), /rope_theta|rope_hs/));
  await p.close();
});

// The page at 1280 and 360 px (axe, nothing cut off, the screenshots) is checked with the other
// lessons' in accessibility.test.mjs.

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
