// The "Splitting the model width into heads" calculator: presets, typed values, and
// the server's own explanation, inline, for values that do not split.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { eventually, open_page, screenshot } from './harness.mjs';
import { lesson_page } from './lesson_page.mjs';

let server, browser, page, calc, problems, close;

before(async () => {
  ({ server, browser, page, problems, close } = await open_page());
  calc = lesson_page(page).calculator;
  await calc.d_k.waitFor();
});

after(() => close?.());

const shapes = () => calc.shapes.locator('li').allTextContents();

test('it opens on the Transformer base: d_k 64 and 1,048,576 projection weights', async () => {
  assert.equal(await calc.h.inputValue(), '8');
  assert.equal(await calc.d_model.inputValue(), '512');
  assert.equal(await calc.d_k.textContent(), '64');
  assert.equal(await calc.projection_weights.textContent(), '1,048,576');
  assert.equal(await calc.preset('Transformer base').getAttribute('aria-pressed'), 'true');
});

test('the GPT-2 small preset gives d_k 64, 2,359,296 weights, and the shapes of W_Q, W_K, W_V and W_O', async () => {
  await calc.preset('GPT-2 small').click();
  await eventually(async () => assert.equal(await calc.projection_weights.textContent(), '2,359,296'));
  assert.equal(await calc.d_k.textContent(), '64');
  assert.equal(await calc.h.inputValue(), '12');
  assert.equal(await calc.d_model.inputValue(), '768');
  const s = (await shapes()).map((t) => t.replace(/\s+/g, ' ').trim());
  assert.match(s[0], /^W_Q 768 × 64/);
  assert.match(s[1], /^W_K 768 × 64/);
  assert.match(s[2], /^W_V 768 × 64/);
  assert.match(s[3], /^W_O 768 × 768/);
  assert.equal(await calc.drawing.getAttribute('aria-label'), "One token's vector of 768 numbers, cut into 12 heads of 64 numbers each.");
  assert.equal(await calc.drawing.locator('rect').count(), 12, 'twelve heads, twelve segments');
  await calc.section.screenshot({ path: path.join(path.dirname(await screenshot(page, '10-calculator-gpt2-small')), '10-calculator-gpt2-small-section.png') });
});

test('GPT-3 175B draws a readable number of its 96 heads', async () => {
  await calc.preset('GPT-3 175B').click();
  await eventually(async () => assert.equal(await calc.d_k.textContent(), '128'));
  const drawn = await calc.drawing.locator('rect').count();
  assert.ok(drawn >= 8 && drawn <= 16, `drew ${drawn} segments for 96 heads`);
  assert.match(await calc.drawing.textContent(), /more/);
  await calc.section.screenshot({ path: path.join(path.dirname(await screenshot(page, '11-calculator-gpt3')), '11-calculator-gpt3-section.png') });
});

test('h = 7 with d_model 768 shows the server’s message inline, never NaN', async () => {
  await calc.preset('GPT-2 small').click();
  await eventually(async () => assert.equal(await calc.d_k.textContent(), '64'));
  await calc.h.fill('7');
  const expected = (await (await fetch(`${server.url}/api/head-split?d_model=768&h=7`)).json()).error.message;
  await eventually(async () => assert.equal(await calc.error.textContent(), expected));
  assert.equal(await calc.h.getAttribute('aria-invalid'), 'true');
  assert.equal(await calc.d_k.count(), 0, 'no stale d_k beside an error');
  assert.doesNotMatch(await page.locator('body').innerText(), /NaN|undefined/);
  await screenshot(page, '12-calculator-h7-error');
});

test('zero, negative, non-numeric and absurd values each get an inline message', async () => {
  for (const [h, d_model] of [['0', '768'], ['-4', '768'], ['twelve', '768'], ['12', '99999999999'], ['', '768']]) {
    await calc.h.fill(h);
    await calc.d_model.fill(d_model);
    await eventually(async () => assert.ok((await calc.error.textContent()).length > 10, `a message for h=${h}, d_model=${d_model}`));
    assert.doesNotMatch(await page.locator('body').innerText(), /NaN|undefined|Infinity/);
  }
  await calc.h.fill('12');
  await calc.d_model.fill('768');
  await eventually(async () => assert.equal(await calc.projection_weights.textContent(), '2,359,296'));
  assert.equal(await calc.error.count(), 0);
});

test('the page logged no errors', () => {
  // A 400 from the API is logged by chromium as a failed resource; that is the point of these requests.
  assert.deepEqual(problems.filter((p) => !/status of 400/.test(p)), []);
});
