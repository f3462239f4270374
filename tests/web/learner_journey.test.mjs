// A learner works through "Five heads, one sentence": picks heads and queries, toggles
// the causal mask, meets all three challenges by doing them, and keeps that progress
// across a reload and a restart of the server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_post, eventually, fresh_db, screenshot, start_server, update_readme_screenshot } from './harness.mjs';
import { expected_row, grid_row_values, open_causal_mask_lesson } from './lesson_page.mjs';

const SENTENCE = 'the cat chased the dog . the cat chased the';
let server, browser, page, lesson, problems, close;
const db = fresh_db();

async function weights(head, mask) {
  const r = await api_post(server, '/api/weights', { sentence: SENTENCE, head, mask });
  assert.equal(r.status, 200);
  return r.body;
}

before(async () => ({ server, browser, page, problems, lesson, close } = await open_causal_mask_lesson({ db })));
// close() stops the first server; the test that restarts it leaves another in `server`.
after(async () => {
  await close?.();
  await server?.stop();
});

test('the lesson opens on the Induction head, where cat (7) looks most at chased (2), 92%', async () => {
  await assert.equal(await lesson.head('Induction').isChecked(), true);
  assert.equal(await lesson.summary.head.textContent(), 'Induction');
  assert.equal(await lesson.summary.query.textContent(), 'cat (7)');
  assert.equal(await lesson.summary.looks_at.textContent(), 'chased (2), 92%');
  assert.equal(await lesson.grid_rows.count(), 10);
  assert.equal(await lesson.grid_columns.count(), 11);
  assert.equal(await lesson.masked_cells.count(), 45, 'with the mask on, every cell above the diagonal is masked');
  assert.match(await lesson.highlighted_row.locator('th').textContent(), /7\s*cat/);
  const caption = await lesson.caption.textContent();
  assert.match(caption, /Induction/);
  assert.match(caption, /Rows are queries/);
  assert.match(caption, /columns are keys/);
  assert.match(caption, /masked/);
  assert.deepEqual(await grid_row_values(lesson, 7), expected_row((await weights('induction', true)).weights[7]));
  await screenshot(page, '01-lesson-opens');
  await update_readme_screenshot(page);
});

test('picking another head and query changes the grid and the summary', async () => {
  const previous = await weights('previous', true);
  await lesson.head('Previous token').check();
  await lesson.query('dog', 4).click();
  await eventually(async () => {
    assert.equal(await lesson.summary.head.textContent(), 'Previous token');
    assert.equal(await lesson.summary.query.textContent(), 'dog (4)');
    assert.equal(await lesson.summary.looks_at.textContent(), previous.summaries[4].text);
  });
  assert.match(previous.summaries[4].text, /^the \(3\)/, 'the previous-token head reads the token just before');
  assert.match(await lesson.caption.textContent(), /Previous token/);
  assert.match(await lesson.highlighted_row.locator('th').textContent(), /4\s*dog/);
  for (const q of [0, 4, 9]) assert.deepEqual(await grid_row_values(lesson, q), expected_row(previous.weights[q]));
  await screenshot(page, '02-previous-token-dog');

  // Arrow keys move the query (on this head no challenge can be met by passing through).
  await lesson.selected_query.focus();
  await page.keyboard.press('ArrowRight'); // 5
  await page.keyboard.press('ArrowRight'); // 6
  await page.keyboard.press('ArrowRight'); // 7
  await eventually(async () => {
    assert.equal(await lesson.summary.query.textContent(), 'cat (7)');
    assert.equal(await lesson.summary.looks_at.textContent(), previous.summaries[7].text);
  });
  assert.equal(await lesson.selected_query.textContent(), await lesson.query('cat', 7).textContent());
  assert.equal(await lesson.query('cat', 7).evaluate((b) => b === document.activeElement), true, 'focus follows the query');
  await page.keyboard.press('ArrowLeft');
  await eventually(async () => assert.equal(await lesson.summary.query.textContent(), 'the (6)'));
  await page.keyboard.press('End');
  await eventually(async () => assert.equal(await lesson.summary.query.textContent(), 'the (9)'));
  await page.keyboard.press('Home');
  await eventually(async () => assert.equal(await lesson.summary.query.textContent(), 'the (0)'));

  // Back to the worked example.
  await lesson.query('cat', 7).click();
  await lesson.head('Induction').check();
  await eventually(async () => {
    assert.equal(await lesson.summary.head.textContent(), 'Induction');
    assert.equal(await lesson.summary.looks_at.textContent(), 'chased (2), 92%');
  });
});

test('turning the causal mask off shows every cell, turning it on hides the future again', async () => {
  await lesson.mask.uncheck();
  await eventually(async () => assert.equal(await lesson.masked_cells.count(), 0));
  assert.match(await lesson.caption.textContent(), /mask is off/);
  const unmasked = await weights('induction', false);
  assert.deepEqual(await grid_row_values(lesson, 0), expected_row(unmasked.weights[0]));
  assert.equal(await lesson.summary.looks_at.textContent(), unmasked.summaries[7].text);
  assert.match(page.url(), /mask=off/);
  await screenshot(page, '03-mask-off');

  await lesson.mask.check();
  await eventually(async () => assert.equal(await lesson.masked_cells.count(), 45));
  assert.equal(await lesson.summary.looks_at.textContent(), 'chased (2), 92%');
  assert.doesNotMatch(page.url(), /mask=off/);
});

test('the three challenges tick themselves off as the learner does them', async () => {
  // Everything so far (including the worked example, cat 7) met none of them.
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '0 of 3 complete'));

  // 1: Induction, mask on, the second "chased" (8) looks at the (3), and "the" comes next.
  await lesson.query('chased', 8).click();
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '1 of 3 complete'));
  assert.match(await lesson.challenge('induction-next-word').textContent(), /Done/);
  await screenshot(page, '04-challenge-1');

  // 2: Same word, mask on, the first "cat" (1) has no earlier copy of itself.
  await lesson.head('Same word').check();
  await lesson.query('cat', 1).click();
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '2 of 3 complete'));
  assert.match(await lesson.challenge('same-word-first-copy').textContent(), /Done/);

  // 3: mask off, a query whose favourite key comes after it; found from the API, not assumed.
  let found = null;
  const heads = (await (await fetch(server.url + '/api/heads')).json()).heads;
  for (const head of heads) {
    const w = await weights(head.name, false);
    const q = w.summaries.findIndex((s, query) => s.keys.every((k) => k > query));
    if (q >= 0) {
      found = { title: head.title, token: w.tokens[q], q };
      break;
    }
  }
  assert.ok(found, 'some head, unmasked, has a query whose favourite key lies ahead');
  await lesson.mask.uncheck();
  await lesson.head(found.title).check();
  await lesson.query(found.token, found.q).click();
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '3 of 3 complete'));
  assert.match(await lesson.challenge('future-favourite').textContent(), /Done/);
  await screenshot(page, '05-three-of-three');
});

test('progress survives a reload of the page', async () => {
  await page.reload();
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '3 of 3 complete'));
  // The URL kept the view too: mask off, the head and query of challenge 3.
  assert.equal(await lesson.mask.isChecked(), false);
});

test('progress survives a restart of the server', async () => {
  // The page is closed while the server is down (as a learner's tab would be reopened
  // after it), so a request it sends in that window is not counted as the page's error.
  const url = page.url();
  await page.waitForLoadState('networkidle');
  await page.goto('about:blank');
  const port = server.port;
  await server.stop();
  server = await eventually(() => start_server({ db, port }), 15_000);
  await page.goto(url);
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '3 of 3 complete'));
  for (const id of ['induction-next-word', 'same-word-first-copy', 'future-favourite']) {
    assert.match(await lesson.challenge(id).textContent(), /Done/);
  }
  await screenshot(page, '06-after-restart');
});

test('"Start the challenges over" asks first, keeps the progress on "Keep", and empties it on "Yes"', async () => {
  await page.getByRole('button', { name: 'Start the challenges over' }).click();
  assert.match(await page.getByRole('alertdialog').textContent(), /clears the 3 challenges/);
  await page.getByRole('button', { name: 'Keep my progress' }).click();
  assert.equal(await lesson.challenges_count.textContent(), '3 of 3 complete');
  await page.getByRole('button', { name: 'Start the challenges over' }).click();
  await page.getByRole('button', { name: 'Yes, clear them' }).click();
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '0 of 3 complete'));
  await page.reload();
  await eventually(async () => assert.equal(await lesson.challenges_count.textContent(), '0 of 3 complete'));
});

test('the page logged no errors (CSP included)', () => {
  assert.deepEqual(problems, []);
});
