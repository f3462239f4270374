// "Try this": the learner predicts where position 9 looks for each head by clicking a
// key, then sees the real row and whether the guess was right (right = the guessed key
// is among the row's favourite keys, ties included).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_get, api_post, eventually, screenshot } from './harness.mjs';
import { open_causal_mask_lesson } from './lesson_page.mjs';

const SENTENCE = 'the cat chased the dog . the cat chased the';
const Q = 9;
let server, browser, page, lesson, try_this, problems, heads, close;

before(async () => {
  ({ server, browser, page, problems, lesson, close } = await open_causal_mask_lesson());
  try_this = lesson.try_this;
  heads = (await api_get(server, '/api/heads')).body.heads;
});
after(() => close?.());

const key_button = (token, key) =>
  try_this.getByRole('group', { name: /Your prediction/ }).getByRole('button', { name: `${token} ${key}`, exact: true });

test('each head is guessed, then revealed with its real row and a verdict', async () => {
  const tokens = SENTENCE.split(' ');
  let right = 0;
  for (const [i, head] of heads.entries()) {
    const w = (await api_post(server, '/api/weights', { sentence: SENTENCE, head: head.name, mask: true })).body;
    const favourites = w.summaries[Q].keys;
    // Guess right on even rounds, wrong on odd ones.
    const guess = i % 2 === 0 ? favourites[0] : [...tokens.keys()].find((k) => !favourites.includes(k));
    const should_be_right = favourites.includes(guess);
    if (should_be_right) right += 1;

    await eventually(async () => assert.match(await try_this.textContent(), new RegExp(`with the ${head.title} head`)));
    assert.equal(await try_this.getByText('Right.').count(), 0, 'nothing is revealed before the guess');
    await key_button(tokens[guess], guess).click();

    const verdict = try_this.getByRole('status').filter({ hasText: /Right\.|Not this time\./ });
    await verdict.waitFor();
    const text = await verdict.textContent();
    assert.match(text, should_be_right ? /^\s*Right\./ : /^\s*Not this time\./);
    assert.ok(text.includes(w.summaries[Q].text), `the verdict names where it really looks: ${w.summaries[Q].text}`);
    // The real row is shown, cell by cell.
    const cells = await try_this.locator('.weights-row li').evaluateAll((lis) =>
      lis.map((li) => li.querySelector('.weights-row__cell')?.textContent.trim()),
    );
    assert.deepEqual(cells, w.weights[Q].map((x) => (x === null ? 'masked' : x.toFixed(2))));
    await screenshot(page, `3${i}-predict-${head.name}`);

    if (i < heads.length - 1) await try_this.getByRole('button', { name: 'Next head' }).click();
  }
  const score = try_this.getByRole('status').filter({ hasText: /You predicted/ });
  await eventually(async () => assert.match(await score.textContent(), new RegExp(`You predicted ${right} of ${heads.length} heads right`)));
});

test('"Show it in the grid" points the lesson at that head and position 9', async () => {
  await try_this.getByRole('button', { name: 'Show it in the grid' }).click();
  const last = heads[heads.length - 1];
  await eventually(async () => {
    assert.equal(await lesson.summary.head.textContent(), last.title);
    assert.equal(await lesson.summary.query.textContent(), 'the (9)');
  });
  assert.match(page.url(), new RegExp(`head=${last.name}&query=9`));
  // ...and brings the grid into view.
  await eventually(async () => {
    const box = await page.getByRole('heading', { name: 'Five heads, one sentence' }).boundingBox();
    assert.ok(box && box.y > -10 && box.y < 900, `the section's heading is at y = ${box?.y}`);
  });
});

test('"Start over" clears the guesses', async () => {
  await try_this.getByRole('button', { name: 'Start over' }).click();
  await key_button('the', 0).waitFor();
  assert.equal(await try_this.getByRole('status').filter({ hasText: /You predicted/ }).count(), 0);
});

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
