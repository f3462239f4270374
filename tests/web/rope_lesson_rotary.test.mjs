// Lesson 3, part 3 (RoPE), as a learner does it: the dial moved by keys and by dragging shows
// the engine's rotation; the offset challenge does not tick on its starting pairs and does on
// two far-apart pairs of one offset; the wavelength calculator's presets; every field's own
// message (dial, offset finder, calculator); the decay sentence from the chart's numbers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually } from './harness.mjs';
import { challenge, get, open_rope_lesson, part, post } from './rope_lesson_setup.mjs';

let server, page, problems, close;

before(async () => ({ server, page, problems, close } = await open_rope_lesson('dial-dot')));
after(() => close?.());

const dot_at = async (m, n) => (await post(server, '/api/rope', { pairs: [[m, n]] })).body.pairs[0].dot.toFixed(4);

test('the dial starts with the engine’s q·k at m = 3, n = 0', async () => {
  assert.equal(await page.getByTestId('dial-dot').textContent(), await dot_at(3, 0));
});

test('the arrow keys move q along the text and the numbers follow the engine', async () => {
  await page.getByTestId('dial-slider').focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  const expected = await dot_at(15, 0);
  const pressed = Date.now();
  await page.keyboard.press('PageUp');
  assert.equal(await page.getByTestId('dial-slider').getAttribute('aria-valuenow'), '15');
  await page.waitForFunction((want) => document.querySelector('[data-testid="dial-dot"]')?.textContent === want, expected);
  process.stderr.write(`key press to the redrawn dial: ${Date.now() - pressed} ms\n`);
  // pair 0 turns one radian per token: the change of angle is 15 rad, wrapped into (−π, π]
  const wrapped = Math.atan2(Math.sin(15), Math.cos(15));
  await eventually(async () => assert.equal(await page.getByTestId('dial-turned').textContent(), wrapped.toFixed(3)));
  await page.keyboard.press('Home');
  assert.equal(await page.getByTestId('dial-slider').getAttribute('aria-valuenow'), '0');
});

test('dragging the q dot round the circle moves m', async () => {
  await page.getByTestId('dial-m').fill('3');
  // the dot is drawn from the engine's answer for m = 3: wait for it before aiming at the dot
  // (aiming at where it was for m = 0 misses it once the answer lands)
  const at_3 = await dot_at(3, 0);
  await eventually(async () => assert.equal(await page.getByTestId('dial-dot').textContent(), at_3));
  const handle = page.getByTestId('rope-dial').locator('circle.dial__handle');
  const svg = await page.getByTestId('rope-dial').locator('svg').boundingBox();
  const cx = svg.x + svg.width / 2, cy = svg.y + svg.height / 2, r = svg.width * 0.35;
  const box = await handle.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  // a quarter turn anticlockwise in steps, from wherever the dot is
  const start = Math.atan2(-(box.y + box.height / 2 - cy), box.x + box.width / 2 - cx);
  for (let s = 1; s <= 8; s++) {
    const a = start + (s / 8) * (Math.PI / 2);
    await page.mouse.move(cx + r * Math.cos(a), cy - r * Math.sin(a));
  }
  await page.mouse.up();
  const m = Number(await page.getByTestId('dial-slider').getAttribute('aria-valuenow'));
  assert.ok(m >= 4 && m <= 5, `a quarter turn of pair 0 (1 rad per token) is about 1.6 tokens: m went from 3 to ${m}`);
  await eventually(async () => assert.equal(await page.getByTestId('dial-dot').textContent(), await dot_at(m, 0)));
});

test('the frequency ladder lists the server’s 32 wavelengths', async () => {
  const w = (await get(server, '/api/rope/wavelengths?theta=10000&head_size=64')).body;
  const items = page.getByTestId('frequency-ladder').locator('li');
  assert.equal(await items.count(), w.pairs.length);
  assert.match(await items.last().textContent(), new RegExp(Math.round(w.pairs.at(-1).wavelength).toLocaleString('en')));
});

test('the offset challenge does not tick on its starting pairs, and does on one offset far apart', async () => {
  const section = part(page, 3);
  const finder = page.getByTestId('offset-finder');
  await eventually(async () => assert.match(await page.getByTestId('offset-row-1').textContent(), new RegExp((await dot_at(9, 3)).replace('.', '\\.'))));
  await page.getByTestId('offset-check').click();
  const v = finder.locator('[data-correct]');
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'false'));
  assert.equal(await challenge(page, 'offset-only').evaluate((li) => li.classList.contains('done')), false);
  // the same offset, too close together: still not
  await page.getByTestId('offset-2').fill('6');
  await page.getByTestId('offset-3').fill('3');
  await page.getByTestId('offset-check').click();
  await eventually(async () => assert.match(await v.textContent(), /at least 10/));
  assert.equal(await v.getAttribute('data-correct'), 'false');
  // far apart, offset 3 both: the engine's numbers agree
  await page.getByTestId('offset-2').fill('405');
  await page.getByTestId('offset-3').fill('402');
  await eventually(async () => assert.match(await page.getByTestId('offset-row-1').textContent(), new RegExp((await dot_at(405, 402)).replace('.', '\\.'))));
  assert.equal(await dot_at(405, 402), await dot_at(5, 2));
  await page.getByTestId('offset-check').click();
  await eventually(async () => assert.equal(await v.getAttribute('data-correct'), 'true'));
  assert.match(await v.textContent(), /offsets 3 and 3/);
  await eventually(async () => assert.equal(await challenge(page, 'offset-only').evaluate((li) => li.classList.contains('done')), true));
  void section;
});

test('the offset finder refuses 1.5, −1 and nothing with a plain message per field, never the API’s field names', async () => {
  const finder = page.getByTestId('offset-finder');
  const sent = [];
  const watch = (r) => r.url().endsWith('/api/lessons/word-order/check') && sent.push(r);
  page.on('request', watch);
  for (const [typed, why] of [['1.5', '“1\\.5” is not one'], ['-1', '-1 is below that'], ['', 'it is empty']]) {
    await page.getByTestId('offset-2').fill(typed);
    await eventually(async () =>
      assert.match(await page.getByTestId('offset-2-error').textContent(), new RegExp(`^Position m₂ must be a whole number from 0 to 8,192; ${why}`)),
    );
    assert.equal(await page.getByTestId('offset-check').isDisabled(), true);
    assert.equal(await page.getByTestId('offset-row-1').count(), 0, 'no q·k for positions that are not valid');
  }
  page.off('request', watch);
  assert.equal(sent.length, 0);
  assert.doesNotMatch(await finder.textContent(), /Answer field|'positions'|Field '/);
  await page.getByTestId('offset-2').fill('405');
  await page.getByTestId('offset-row-1').waitFor();
});

test('the wavelength calculator: the Llama 3 preset shows the server’s figures', async () => {
  const calc = page.getByTestId('wavelength-calculator');
  await calc.getByRole('button', { name: /^Llama 3/ }).click();
  const w = (await get(server, '/api/rope/wavelengths?theta=500000&head_size=128')).body;
  await eventually(async () => assert.match(await page.getByTestId('calc-table').textContent(), /θ = 500,000, HS = 128: 64 pairs/));
  const slowest = w.pairs.at(-1).wavelength;
  assert.match(await page.getByTestId('calc-table').textContent(), new RegExp(`${(slowest / 1e6).toFixed(2)} million`));
  const beyond = w.pairs.filter((p) => p.wavelength > 8192).length;
  assert.match(await page.getByTestId('calc-beyond').textContent(), new RegExp(`^${beyond} of 64 pairs take longer than 8,192 tokens`));

  await page.getByTestId('calc-hs').fill('64');
  await page.getByTestId('calc-table').waitFor();
});

test('the wavelength calculator checks each field as typed, one plain message per field stating its limits', async () => {
  const calc = page.getByTestId('wavelength-calculator');
  await calc.getByRole('button', { name: /^GPT-NeoX/ }).click();
  await page.getByTestId('calc-table').waitFor();
  const msg = (id) => page.getByTestId(id).textContent();
  await page.getByTestId('calc-context').fill('0');
  await eventually(async () => assert.equal(await msg('calc-context-error'), 'Context length must be a whole number from 1 to 10,000,000; 0 is below that.'));
  assert.equal(await page.getByTestId('calc-beyond').count(), 0, 'no count of pairs for a context of 0');
  await page.getByTestId('calc-context').fill('');
  await eventually(async () => assert.match(await msg('calc-context-error'), /^Context length must be a whole number from 1 to 10,000,000; it is empty\.$/));
  await page.getByTestId('calc-context').fill('2.5');
  await eventually(async () => assert.match(await msg('calc-context-error'), /“2\.5” is not one/));
  await page.getByTestId('calc-context').fill('2048');
  await eventually(async () => assert.equal(await page.getByTestId('calc-context-error').count(), 0));
  await page.getByTestId('calc-theta').fill('abc');
  await eventually(async () => assert.equal(await msg('calc-theta-error'), 'Base θ must be a number above 1 and at most 1,000,000,000, like 10000; “abc” is not a number.'));
  assert.equal(await page.getByTestId('calc-table').count(), 0, 'the table of the last valid θ is cleared');
  await page.getByTestId('calc-theta').fill('0.5');
  await eventually(async () => assert.match(await msg('calc-theta-error'), /0\.5 is not above 1\.$/));
  await page.getByTestId('calc-hs').fill('63');
  await eventually(async () => assert.match(await msg('calc-hs-error'), /even whole number from 2 to 1024.*63 is odd\./));
  assert.equal(await calc.locator('[role="alert"]').count(), 2, 'one message per wrong field');
  await page.getByTestId('calc-theta').fill('10000');
  await page.getByTestId('calc-hs').fill('64');
  await eventually(async () => assert.match(await page.getByTestId('calc-table').textContent(), /HS = 64: 32 pairs/));
  assert.equal(await calc.locator('[role="alert"]').count(), 0);
});

test('the dial refuses m = −3, 1.5 and nothing with one message per field, and its reading names the m it was computed for', async () => {
  await page.getByTestId('dial-m').fill('7');
  await eventually(async () => assert.equal(await page.getByTestId('dial-dot').textContent(), await dot_at(7, 0)));
  for (const [typed, why] of [['-3', '−3 is below that|-3 is below that'], ['1.5', '“1\\.5” is not one'], ['', 'it is empty']]) {
    await page.getByTestId('dial-m').fill(typed);
    await eventually(async () =>
      assert.match(await page.getByTestId('dial-m-error').textContent(), new RegExp(`^Position m must be a whole number from 0 to 8,192; (${why})`)),
    );
    assert.equal(await page.getByTestId('dial-reading').count(), 0, 'no reading while m is wrong');
  }
  await page.getByTestId('dial-n').fill('x');
  await eventually(async () => assert.match(await page.getByTestId('dial-n-error').textContent(), /^Position n must be a whole number from 0 to 8,192/));
  await page.getByTestId('dial-n').fill('2');
  await page.getByTestId('dial-m').fill('9');
  // wait for the reading of (9, 2) itself: its dot alone equals (7, 0)'s, the reading before it,
  // since q·k depends on m − n only
  await eventually(async () => assert.match(await page.getByTestId('dial-reading').textContent(), /at m = 9 is/));
  assert.equal(await page.getByTestId('dial-dot').textContent(), await dot_at(9, 2));
  const reading = await page.getByTestId('dial-reading').textContent();
  assert.match(reading, /at m = 9 is/);
  assert.match(reading, /at n = 2 it is/);
  assert.doesNotMatch(reading, /at m = is/);
});

test('the decay sentence states the number the chart starts at: twice the number of pairs for q = k = all ones', async () => {
  const ones = Array(64).fill(1);
  const r = (await post(server, '/api/rope', { q: ones, k: ones, pairs: [[0, 0], [1020, 0]] })).body;
  const said = (await page.getByTestId('decay-text').textContent()).replace(/\s+/g, ' ');
  assert.ok(said.includes(`over the ${r.head_size / 2} pairs`), said);
  assert.ok(said.includes(`starts at 2 × ${r.head_size / 2} = ${r.pairs[0].dot.toFixed(2)}`), said);
  assert.equal(r.pairs[0].dot.toFixed(2), (r.head_size).toFixed(2), 'the engine agrees: 2 per pair');
  assert.ok(said.includes(`at offset 1020 it is ${r.pairs[1].dot.toFixed(2)}`), said);
  assert.doesNotMatch(said, /q·k after the rotation is the sum of cos/);
});

test('the page logged no errors, and sent no input its fields refused (no 400)', () => {
  assert.deepEqual(problems, []);
});
