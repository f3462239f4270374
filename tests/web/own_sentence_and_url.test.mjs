// A learner types a sentence of their own (every part of the page follows it), sees
// the server's error for one that is too long, and shares a link that reproduces the
// view. Also: the page reads at 360 px wide.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_post, eventually, screenshot } from './harness.mjs';
import { expected_row, grid_row_values, lesson_page, open_causal_mask_lesson } from './lesson_page.mjs';

const OWN = 'a bird sang , a dog barked , a bird flew';
let server, browser, page, lesson, problems, close;

before(async () => ({ server, browser, page, problems, lesson, close } = await open_causal_mask_lesson()));
after(() => close?.());

test('a sentence of your own redraws the grid, the query picker and the summary', async () => {
  const w = (await api_post(server, '/api/weights', { sentence: OWN, head: 'induction', mask: true })).body;
  const T = w.tokens.length;
  await lesson.sentence_box.fill(OWN);
  await lesson.sentence_show.click();
  await eventually(async () => assert.equal(await lesson.grid_columns.count(), T + 1));
  assert.equal(await lesson.grid_rows.count(), T);
  assert.equal(await lesson.query_buttons.count(), T);
  // A new sentence starts on its last token, the one the "Try this" predictions ask about.
  assert.equal(await lesson.summary.query.textContent(), `${w.tokens[T - 1]} (${T - 1})`);
  assert.equal(await lesson.summary.looks_at.textContent(), w.summaries[T - 1].text);
  assert.deepEqual(await grid_row_values(lesson, T - 1), expected_row(w.weights[T - 1]));
  assert.match(await lesson.try_this.textContent(), new RegExp(`position ${T - 1}, the last token`));
  assert.match(page.url(), /sentence=a\+bird\+sang/);
  await screenshot(page, '20-own-sentence');
});

test('a 40-token sentence shows the server’s error inline and keeps the last good grid', async () => {
  const before_columns = await lesson.grid_columns.count();
  const long = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
  await lesson.sentence_box.fill(long);
  await lesson.sentence_show.click();
  const expected = (await api_post(server, '/api/weights', { sentence: long, head: 'induction', mask: true })).body.error.message;
  await eventually(async () => assert.equal(await lesson.sentence_error.textContent(), expected));
  assert.match(expected, /40 tokens/);
  assert.equal(await lesson.grid_columns.count(), before_columns);
  await screenshot(page, '21-too-long-error');
  // Submitting a good sentence clears the error.
  await lesson.sentence_box.fill(OWN);
  await lesson.sentence_show.click();
  await eventually(async () => assert.equal(await lesson.sentence_error.count(), 0));
});

test('the URL reproduces the view: sentence, head, query and mask', async () => {
  await lesson.head('Same word').check();
  await lesson.query('dog', 5).click(); // a bird sang , a dog ...
  await lesson.mask.uncheck();
  await eventually(async () => assert.match(page.url(), /mask=off/));
  const url = page.url();
  assert.match(url, /head=same-word/);
  assert.match(url, /query=5/);
  const shown = await lesson.summary.looks_at.textContent();

  const other = await browser.newPage();
  const again = lesson_page(other);
  await other.goto(url);
  await eventually(async () => assert.equal(await again.summary.looks_at.textContent(), shown));
  assert.equal(await again.head('Same word').isChecked(), true);
  assert.equal(await again.summary.query.textContent(), 'dog (5)');
  assert.equal(await again.mask.isChecked(), false);
  assert.equal(await again.sentence_box.inputValue(), OWN);
  assert.equal(await again.masked_cells.count(), 0);
  await other.close();
});

test('a link whose sentence the server refuses says why and shows the lesson’s sentence', async () => {
  const other = await browser.newPage();
  const again = lesson_page(other);
  const long = Array.from({ length: 33 }, () => 'la').join(' ');
  await other.goto(`${server.url}/?sentence=${encodeURIComponent(long)}&head=first&query=2`);
  await again.sentence_error.waitFor();
  assert.match(await again.sentence_error.textContent(), /33 tokens/);
  assert.equal(await again.grid_rows.count(), 10);
  assert.equal(await again.summary.head.textContent(), 'First token');
  assert.equal(await again.summary.query.textContent(), 'chased (2)');
  await other.close();
});

test('at 360 px wide the lesson fits the screen; only the grid may scroll sideways', async () => {
  const narrow = await browser.newPage();
  await narrow.setViewportSize({ width: 360, height: 780 });
  const small = lesson_page(narrow);
  await narrow.goto(server.url + '/');
  await small.summary.looks_at.waitFor();
  await small.calculator.d_k.waitFor();
  const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  const grid_box = await small.grid.boundingBox();
  assert.ok(grid_box && grid_box.width <= 360, `the lesson grid is ${grid_box?.width}px wide`);
  await screenshot(narrow, '22-narrow-360px');
  await narrow.close();
});

test('the page logged no errors', () => {
  assert.deepEqual(problems.filter((p) => !/status of 413/.test(p)), []);
});
