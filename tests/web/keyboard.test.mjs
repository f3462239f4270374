// The lesson works from the keyboard alone, with a visible focus ring: skip link, head
// radios, the query toolbar's arrow keys, the mask switch, the sentence box.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually, screenshot } from './harness.mjs';
import { open_causal_mask_lesson } from './lesson_page.mjs';

let server, browser, page, lesson, problems, close;

before(async () => ({ server, browser, page, problems, lesson, close } = await open_causal_mask_lesson()));
after(() => close?.());

/** Presses Tab until `locator` has focus; fails after `limit` presses. */
async function tab_to(locator, limit = 40) {
  for (let i = 0; i < limit; i++) {
    if (await locator.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  assert.fail(`Tab never reached ${locator}`);
}

const focus_ring = () =>
  page.evaluate(() => {
    const s = getComputedStyle(document.activeElement);
    return { style: s.outlineStyle, width: parseFloat(s.outlineWidth) };
  });

test('the skip link is the first stop and moves focus to the lesson', async () => {
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to the lesson' });
  assert.equal(await skip.evaluate((el) => el === document.activeElement), true);
  assert.ok((await skip.boundingBox()).y >= 0, 'visible once focused');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
  assert.equal(new URL(page.url()).hash, '', 'the router’s hash is left alone');
});

test('arrow keys change the head, then the query; Space turns the mask off', async () => {
  await tab_to(lesson.head('Induction'));
  await page.keyboard.press('ArrowRight');
  await eventually(async () => assert.equal(await lesson.summary.head.textContent(), 'Punctuation'));

  await tab_to(lesson.selected_query);
  const ring = await focus_ring();
  assert.equal(ring.style, 'solid');
  assert.ok(ring.width >= 2, 'a focus ring at least 2px wide');
  await page.keyboard.press('ArrowLeft');
  await eventually(async () => assert.equal(await lesson.summary.query.textContent(), 'the (6)'));
  await screenshot(page, '40-keyboard-focus');

  await tab_to(lesson.mask);
  await page.keyboard.press('Space');
  await eventually(async () => assert.equal(await lesson.masked_cells.count(), 0));
  assert.equal(await lesson.mask.isChecked(), false);
});

test('a sentence typed and submitted with Enter updates the lesson', async () => {
  await tab_to(lesson.sentence_box);
  await page.keyboard.press('Control+A');
  await page.keyboard.type('one two one two');
  await page.keyboard.press('Enter');
  await eventually(async () => assert.equal(await lesson.grid_rows.count(), 4));
  assert.equal(await lesson.summary.query.textContent(), 'two (3)');
});

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
