// Issue 15: every check ticks on the learner's own evidence, and the smaller defects a new
// learner met. Each test is one claim; the numbers come from the server the page talks to.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_get, api_post, eventually, fresh_db, open_browser, screenshot, start_server, test_model, watch_console } from './harness.mjs';
import { lesson_page } from './lesson_page.mjs';

let server, browser, problems;
const pages = [];
const part = (page, n) => page.locator('section', { has: page.getByRole('heading', { level: 2, name: new RegExp(`^Part ${n} `) }) });
const verdict = (section) => section.locator('[data-correct]');
const challenges_count = (page) => page.getByRole('status').filter({ hasText: /of \d+ complete/ });

/** A fresh page with a new learner (a new id in storage), watched for console errors. */
async function fresh_page(url) {
  const page = await browser.newPage();
  const seen = watch_console(page);
  pages.push(seen);
  await page.goto(url);
  await page.evaluate(() => localStorage.removeItem('headlab.learner'));
  await page.reload();
  return page;
}

async function open_lesson2(url = server.url + '/#/lessons/trained-heads') {
  const page = await fresh_page(url);
  await part(page, 1).getByRole('table').waitFor({ timeout: 60_000 });
  await part(page, 2).locator('[data-figure]').first().waitFor({ timeout: 60_000 });
  return page;
}

before(async () => {
  server = await start_server({ db: fresh_db(), model: test_model() });
  browser = await open_browser();
  problems = [];
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('lesson 2: the default state meets no challenge, whichever check is pressed', async () => {
  const page = await open_lesson2();
  const model = (await api_get(server, '/api/model')).body;
  // Part 1: nothing chosen, nothing to check.
  assert.equal(await part(page, 1).getByRole('button', { name: 'Check my answer' }).isDisabled(), true);
  // Part 2: the pre-selected head (the first layer's first: no induction head can sit in the
  // first layer) on the lesson's text, which is already repeated so the stripe and the loss's
  // fall show at once.
  const p2 = part(page, 2);
  assert.equal(model.config.n_layer > 1, true);
  await p2.getByRole('button', { name: 'Is this the induction head? (0.0)' }).click();
  await eventually(async () => assert.equal(await verdict(p2).getAttribute('data-correct'), 'false'));
  assert.match(await verdict(p2).textContent(), /tokens sit in a repeated span/);
  assert.match(await page.getByTestId('copy-losses').textContent(), /On the second copy/);
  // Part 3: no answer picked, nothing to check.
  assert.equal(await part(page, 3).getByRole('button', { name: /^Check my answer/ }).isDisabled(), true);
  // Part 4: the pre-selected head on the part's text.
  const p4 = part(page, 4);
  await p4.getByRole('button', { name: /^Does this head matter here\?/ }).click();
  await eventually(async () => assert.ok((await verdict(p4).count()) > 0));
  const ablation_met = (await verdict(p4).getAttribute('data-correct')) === 'true';
  await eventually(async () => assert.match(await challenges_count(page).textContent(), ablation_met ? /^1 of 4/ : /^0 of 4 complete/));
  assert.equal(ablation_met, false, 'the default head of part 4 is not the one that matters: ' + (await verdict(p4).textContent()));
  await screenshot(page, '54-trained-heads-defaults');
});

test('lesson 2, part 2: at 1280 x 800 the default repeated text shows every row of both grids, none clipped', async () => {
  const page = await open_lesson2();
  await page.setViewportSize({ width: 1280, height: 800 });
  const p2 = part(page, 2);
  const grids = p2.locator('[data-figure]').getByRole('table');
  await eventually(async () => assert.ok((await grids.count()) >= 2));
  const model_tokens = await grids.first().locator('tbody tr').count();
  assert.ok(model_tokens >= 20, `a repeated default text: ${model_tokens} rows`);
  assert.equal(await p2.getByText(/more below/).count(), 0, 'no row is clipped');
  for (const g of await grids.all()) {
    const clipped = await g.evaluate((t) => {
      const box = t.closest('.weights-grid__scroll');
      return box ? box.scrollHeight - box.clientHeight : 0;
    });
    assert.ok(clipped <= 1, `the grid scrolls by ${clipped} px`);
  }
});

test('lesson 2: "Show the answer" then "Check" explains but earns no credit', async () => {
  const page = await open_lesson2();
  const p1 = part(page, 1);
  await p1.getByRole('button', { name: 'Show the answer' }).click();
  await p1.getByRole('radio', { name: /Just below the diagonal/ }).check();
  await p1.getByRole('button', { name: 'Check my answer' }).click();
  await eventually(async () => assert.equal(await verdict(p1).getAttribute('data-correct'), 'false'));
  assert.match(await verdict(p1).textContent(), /^No credit/);
  assert.match(await verdict(p1).textContent(), /no credit/);
  assert.doesNotMatch(await verdict(p1).textContent(), /Right Right/);
  assert.match(await page.locator('li[data-challenge="pattern-quiz"]').textContent(), /Not yet/);
  assert.match(await challenges_count(page).textContent(), /^0 of 4 complete/);
  // Issue 26: a reload forgets the page's flag, not the server's memory of the reveal.
  await page.reload();
  const again = part(page, 1);
  await again.getByRole('table').waitFor({ timeout: 60_000 });
  await again.getByRole('radio', { name: /Just below the diagonal/ }).check();
  await again.getByRole('button', { name: 'Check my answer' }).click();
  await eventually(async () => assert.equal(await verdict(again).getAttribute('data-correct'), 'false'));
  assert.match(await verdict(again).textContent(), /remembers that you looked/);
  assert.match(await challenges_count(page).textContent(), /^0 of 4 complete/);
});

test('lesson 2: the quiz verdict does not say "Right" twice', async () => {
  const page = await open_lesson2();
  const p1 = part(page, 1);
  await p1.getByRole('radio', { name: /Just below the diagonal/ }).check();
  await p1.getByRole('button', { name: 'Check my answer' }).click();
  await eventually(async () => assert.equal(await verdict(p1).getAttribute('data-correct'), 'true'));
  assert.doesNotMatch(await verdict(p1).textContent(), /Right\s+Right/);
});

test('lesson 2 keeps its texts and heads in the address, and a reload shows them again', async () => {
  const page = await open_lesson2();
  const p2 = part(page, 2);
  const text = 'the old mill stood by the river';
  await p2.getByRole('textbox', { name: 'Your text' }).fill(text);
  await p2.getByRole('button', { name: 'Repeat it' }).click();
  await p2.getByRole('button', { name: 'head 0.1', exact: true }).click();
  await eventually(async () => assert.equal(await p2.getByRole('button', { name: 'head 0.1', exact: true }).getAttribute('aria-pressed'), 'true'));
  await eventually(() => assert.match(page.url(), /induction_head=0\.1/));
  assert.equal(new URL(page.url()).searchParams.get('induction_text'), `${text} ${text}`);
  assert.match(page.url(), /#\/lessons\/trained-heads$/);
  await page.reload();
  await part(page, 2).locator('[data-figure]').first().waitFor({ timeout: 60_000 });
  assert.equal(await part(page, 2).getByRole('textbox', { name: 'Your text' }).inputValue(), `${text} ${text}`);
  await eventually(async () => assert.equal(await part(page, 2).getByRole('button', { name: 'head 0.1', exact: true }).getAttribute('aria-pressed'), 'true'));
  // Part 4's text lives there too.
  const p4 = part(page, 4);
  await p4.getByRole('textbox', { name: 'Text for this part' }).fill('the men came back');
  await p4.getByRole('button', { name: 'Run', exact: true }).click();
  await eventually(() => assert.equal(new URL(page.url()).searchParams.get('limits_text'), 'the men came back'));
  await page.reload();
  await part(page, 4).getByRole('textbox', { name: 'Text for this part' }).waitFor({ timeout: 60_000 });
  assert.equal(await part(page, 4).getByRole('textbox', { name: 'Text for this part' }).inputValue(), 'the men came back');
  // A fresh lesson: the address is clean.
  const plain = await open_lesson2();
  assert.doesNotMatch(plain.url(), /induction_text|sink_text/);
});

test('lesson 2: during a slow run the old figures are marked as stale and the page says it is working', async () => {
  const page = await open_lesson2();
  const p2 = part(page, 2);
  let release;
  const held = new Promise((r) => (release = r));
  await page.route('**/api/model/run', async (route) => {
    await held;
    await route.continue();
  });
  await p2.getByRole('textbox', { name: 'Your text' }).fill('a slow new text');
  await p2.getByRole('button', { name: 'Run', exact: true }).click();
  await eventually(async () => assert.match(await page.getByTestId('induction-busy').textContent(), /Running the model/));
  assert.equal(await p2.locator('.part__figures').first().getAttribute('aria-busy'), 'true');
  release();
  await eventually(async () => assert.equal(await page.getByTestId('induction-busy').count(), 0));
  assert.equal(await p2.locator('.part__figures').first().getAttribute('aria-busy'), 'false');
  await page.unroute('**/api/model/run');
});

test('lesson 2 splits the learner’s own text into the model’s tokens, with byte spans, and bytes instead of "�"', async () => {
  const page = await open_lesson2();
  const section = page.locator('section', { has: page.getByRole('heading', { level: 2, name: /pieces of words/ }) });
  const text = 'a café 😀';
  await section.getByRole('textbox', { name: 'Text to split into tokens' }).fill(text);
  await section.getByRole('button', { name: 'Run', exact: true }).click();
  const answer = (await api_post(server, '/api/model/run', { text, bos: false, heads: [], top_k: 0 })).body;
  const list = section.getByRole('list', { name: 'The tokens of your text, in order' });
  await eventually(async () => assert.equal(await list.locator('li').count(), answer.tokens.length));
  const shown = await list.locator('li').allTextContents();
  answer.tokens.forEach((t, i) => assert.ok(shown[i].includes(`bytes ${t.begin}–${t.end} · id ${t.id}`), shown[i]));
  assert.ok(!shown.some((s) => s.includes('\uFFFD')), 'no replacement characters: ' + shown.join(' | '));
  // the emoji is four bytes, F0 9F 98 80: each piece that holds only some of them shows its own
  if (answer.tokens.some((t) => t.text.includes('\uFFFD'))) assert.ok(shown.some((s) => /part of “😀” \(F0 9F 98 80\)/.test(s)), shown.join(' | '));
  const bytes = new TextEncoder().encode(text).length;
  assert.match(await page.getByTestId('token-count').textContent(), new RegExp(`${[...text].length} characters, ${bytes} bytes in UTF-8, ${answer.tokens.length} tokens`));
  await screenshot(page, '55-trained-heads-tokens');
});

test('a grid wider than its box says how many columns lie beyond the edge, and the cue follows the scroll', async () => {
  const page = await open_lesson2();
  const figure = part(page, 3).locator('[data-figure]').first();
  await figure.locator('table').waitFor({ timeout: 60_000 });
  const scroller = figure.locator('.weights-grid__scroll');
  const overflows = await scroller.evaluate((el) => el.scrollWidth > el.clientWidth + 1);
  const cue = figure.getByTestId('grid-more');
  if (!overflows) {
    assert.equal(await cue.count(), 0, 'a grid that fits has no cue');
    return;
  }
  await eventually(async () => assert.match(await cue.textContent(), /\d+ columns? more to the right →/));
  await scroller.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
  await eventually(async () => assert.match(await cue.textContent(), /← \d+ columns? to the left/));
  assert.doesNotMatch(await cue.textContent(), /to the right/);
});

test('lesson 1: with the mask off the caption no longer says each token sees only the tokens before it', async () => {
  const page = await fresh_page(server.url + '/');
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  assert.match(await page.getByTestId('mask-hint').textContent(), /only itself and the tokens before it/);
  await lesson.mask.click();
  // the switch flips at once; the caption follows the grid the server sends for the mask off
  await eventually(async () => assert.match(await page.getByTestId('mask-hint').textContent(), /also sees the tokens after it/));
  assert.doesNotMatch(await page.getByTestId('mask-hint').textContent(), /only itself/);
  assert.equal(await lesson.mask.isChecked(), false);
});

test('lesson 1: a sentence the server refuses costs one failing request, not one per head', async () => {
  const page = await fresh_page(server.url + '/');
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  const failed = [];
  page.on('response', (r) => {
    if (r.url().endsWith('/api/weights') && r.status() >= 400) failed.push(r.status());
  });
  await lesson.sentence_box.fill(Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '));
  await lesson.sentence_show.click();
  await eventually(async () => assert.match(await lesson.sentence_error.textContent(), /40 tokens/));
  await page.waitForTimeout(300);
  assert.equal(failed.length, 1, `failing requests: ${failed.join(', ')}`);
});

test('lesson 1: after a keyboard guess the focus is on the verdict, not the page body', async () => {
  const page = await fresh_page(server.url + '/');
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  const key = lesson.try_this.getByRole('group', { name: /Your prediction/ }).getByRole('button').first();
  await key.focus();
  await page.keyboard.press('Enter');
  const verdict = lesson.try_this.getByRole('status').filter({ hasText: /Right\.|Not this time\./ });
  await verdict.waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('predict__verdict')), true);
  assert.doesNotMatch(await verdict.textContent(), /looks most at splits/);
});

test('lesson 1: a guess on a tied row reads "it splits between …", never "looks most at splits between …"', async () => {
  const page = await fresh_page(server.url + '/');
  const lesson = lesson_page(page);
  await lesson.summary.looks_at.waitFor();
  const { heads, default_sentence } = (await api_get(server, '/api/heads')).body;
  // The first head whose last row, on the lesson's sentence with the mask on, is a tie.
  let tied = null;
  for (const h of heads) {
    const w = (await api_post(server, '/api/weights', { sentence: default_sentence, head: h.name, mask: true })).body;
    const last = w.summaries[w.tokens.length - 1];
    if (last.text.startsWith('splits between')) {
      tied = { head: h, text: last.text };
      break;
    }
  }
  assert.ok(tied, 'one of the five heads splits its last row on the lesson sentence');
  await lesson.try_this.getByRole('list', { name: 'Heads to predict' }).getByRole('button', { name: new RegExp(`^${tied.head.title}`) }).click();
  await lesson.try_this.getByRole('group', { name: /Your prediction/ }).getByRole('button').first().click();
  const verdict = lesson.try_this.getByRole('status').filter({ hasText: /Right\.|Not this time\./ });
  await verdict.waitFor();
  const said = (await verdict.textContent()).replace(/\s+/g, ' ');
  assert.ok(/[Ii]t splits between/.test(said) && said.includes(tied.text), said);
  assert.doesNotMatch(said, /looks most at splits/);
});

test('lesson 1: the calculator says "1 number", never "1 numbers"', async () => {
  const page = await fresh_page(server.url + '/');
  const calc = lesson_page(page).calculator;
  await calc.h.waitFor();
  await calc.d_model.fill('512');
  await calc.h.fill('512');
  await eventually(async () => assert.equal(await calc.d_k.textContent(), '1'));
  const story = await calc.section.locator('.head-split__story').textContent();
  assert.match(story, /outputs\s+of 1 number\s/);
  assert.doesNotMatch(story, /\b1 numbers/);
});

test('the explorer never tells a learner to send "truncate": true', async () => {
  const page = await fresh_page(server.url + '/#/explorer');
  const box = page.getByRole('textbox', { name: 'Text' });
  await box.waitFor({ timeout: 60_000 });
  await box.fill(Array.from({ length: 400 }, (_, i) => `word${i}`).join(' '));
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await eventually(async () => assert.match(await page.locator('body').innerText(), /too long|longer|more than|limit/i));
  assert.doesNotMatch(await page.locator('body').innerText(), /"truncate"/);
});

test('the pages logged no errors but the refusals the tests asked for', () => {
  // the browser logs each refused request (the too-long sentence and text above)
  const refused = /Failed to load resource: the server responded with a status of 4\d\d/;
  for (const seen of pages) assert.deepEqual(seen.filter((m) => !refused.test(m)), []);
});
