// The lessons pass axe-core's WCAG 2 A and AA checks (contrast, names, roles, labels),
// wide and at 360 px, before and after the learner has interacted with them; nothing on them
// is cut off; a screenshot of each lesson at each width is kept in tests/web/artifacts/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fresh_db, open_browser, repo_root, screenshot, start_server, test_model } from './harness.mjs';
import { lesson_page } from './lesson_page.mjs';
import { LESSON_MODELS_DIR } from './rope_lesson_setup.mjs';

const axe_source = fs.readFileSync(
  createRequire(path.join(repo_root, 'web', 'package.json')).resolve('axe-core/axe.min.js'),
  'utf8',
);
let server, browser;

before(async () => {
  server = await start_server({ db: fresh_db(), model: test_model(), args: ['--models-dir', LESSON_MODELS_DIR] });
  browser = await open_browser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function violations(page) {
  // evaluate() runs outside the page's Content-Security-Policy, which forbids inline scripts.
  await page.evaluate(axe_source);
  const result = await page.evaluate(() =>
    globalThis.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
  );
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length}×, e.g. ${v.nodes[0].target.join(' ')})`);
}

for (const width of [1280, 360]) {
  test(`no WCAG A/AA violations at ${width} px`, async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width, height: 900 });
    const lesson = lesson_page(page);
    await page.goto(server.url + '/');
    await lesson.summary.looks_at.waitFor();
    await lesson.calculator.d_k.waitFor();
    assert.deepEqual(await violations(page), []);

    // After some use: mask off, a prediction revealed, a calculator error on screen.
    await lesson.mask.uncheck();
    await lesson.try_this.getByRole('button', { name: 'dog 4', exact: true }).click();
    await lesson.calculator.h.fill('7');
    await lesson.calculator.error.waitFor();
    assert.deepEqual(await violations(page), []);
    await page.close();
  });
}

// The pages around the model: lesson 2, the explorer and the course overview (they need a
// model for their content; without one they show only their message, checked too).
for (const width of [1280, 360]) {
  test(`lesson 2, the explorer and the course: no WCAG A/AA violations at ${width} px`, async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width, height: 900 });
    await page.goto(server.url + '/#/lessons/trained-heads');
    await page.getByRole('status').filter({ hasText: /of \d+ complete/ }).waitFor();
    await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]') && !document.body.textContent.includes('Waiting for the head scanner'), null, { timeout: 60_000 });
    await page.waitForTimeout(1500); // the parts' first runs
    await page.getByRole('button', { name: 'Spotted a mistake? Tell us.' }).click();
    assert.deepEqual(await violations(page), []);

    await page.goto(server.url + '/#/explorer');
    await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
    await page.waitForTimeout(2000);
    assert.deepEqual(await violations(page), []);

    await page.goto(server.url + '/#/course');
    await page.locator('li[data-lesson]').first().waitFor();
    assert.deepEqual(await violations(page), []);
    await page.close();
  });
}

// Nothing is cut off: no element's own text runs past its box or the viewport, except inside
// the grids' own scrollers (which say what lies beyond). Returns one line per offender.
function clipped_text() {
  const vw = document.documentElement.clientWidth;
  const out = [];
  const name = (el) => `${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/)[0] : ''} “${el.textContent.trim().slice(0, 40)}”`;
  if (document.documentElement.scrollWidth > vw + 1) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${vw}`);
  for (const el of document.querySelectorAll('#app *, main *, article *')) {
    if (el.closest('.weights-grid__scroll, .sr-only, [hidden]')) continue;
    if (['INPUT', 'TEXTAREA', 'SELECT', 'OPTION', 'SCRIPT', 'STYLE'].includes(el.tagName)) continue;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden') continue;
    if (el.closest('[style*="clip-path"]') || cs.clipPath !== 'none') continue; // visually hidden on purpose, for screen readers
    const texts = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim());
    if (texts.length === 0) continue;
    // Spaces at the end of a wrapped line hang past it (CSS Text 3): such text is held to its box below.
    const wraps_with_spaces = /^(pre-wrap|break-spaces)$/.test(cs.whiteSpace);
    for (const t of wraps_with_spaces ? [] : texts) {
      const range = document.createRange();
      range.selectNodeContents(t);
      const r = range.getBoundingClientRect();
      if (r.width > 0 && (r.right > vw + 1 || r.left < -1)) out.push(`${name(el)} runs past the viewport (${Math.round(r.left)}..${Math.round(r.right)} of ${vw})`);
    }
    // A text cut with an ellipsis on purpose is allowed when its full text is the title of it or
    // of a link around it (the navigation's other lessons at 1280 px).
    const cut_on_purpose = cs.textOverflow === 'ellipsis' && el.closest('[title]')?.getAttribute('title') === el.textContent.trim();
    if (el instanceof HTMLElement && cs.display !== 'inline' && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && !cut_on_purpose)
      out.push(`${name(el)} overflows its box (${el.scrollWidth} > ${el.clientWidth})`);
  }
  return [...new Set(out)];
}

const lesson_pages = [
  {
    name: 'causal-mask',
    url: '/',
    ready: async (page) => {
      await lesson_page(page).summary.looks_at.waitFor();
      await page.getByTestId('rule-score').waitFor({ timeout: 60_000 });
    },
  },
  {
    name: 'trained-heads',
    url: '/#/lessons/trained-heads',
    ready: async (page) => {
      await page.getByTestId('step-through').waitFor({ timeout: 60_000 });
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]') && !document.body.textContent.includes('Waiting for the head scanner'), null, { timeout: 60_000 });
      await page.locator('.line-plot svg').first().waitFor({ timeout: 60_000 });
    },
  },
  {
    name: 'word-order',
    url: '/#/lessons/word-order',
    no_step_through: true,
    // Everything drawn: the three lesson models with a loss chart, the dial, and a shuffle
    // revealed (the widest grids).
    ready: async (page) => {
      await page.getByTestId('order-grid').waitFor({ timeout: 30_000 });
      await page.getByTestId('lesson-model-none').getByTestId('model-previous').waitFor({ timeout: 60_000 });
      await page.getByTestId('nopos-grid').waitFor({ timeout: 60_000 });
      await page.getByTestId('dial-dot').waitFor();
      await page.getByTestId('lesson-model-rotary').getByTestId('measure-length').click();
      await page.getByTestId('lesson-model-rotary').getByTestId('length-result').waitFor({ timeout: 60_000 });
      await page.getByTestId('shuffle').click();
      await page.getByTestId('shuffle-reveal').click();
      await page.getByTestId('shuffled-grid').waitFor();
      // the grids' labels keep a readable size and stay whole
      const smallest = await page.evaluate(() => Math.min(...[...document.querySelectorAll('[data-testid="order-grid"] th')].map((th) => parseFloat(getComputedStyle(th).fontSize))));
      assert.ok(smallest >= 11, `grid labels are ${smallest}px`);
      const cut_labels = await page.evaluate(() =>
        [...document.querySelectorAll('[data-testid="order-grid"] th.row')].filter((th) => th.scrollWidth > th.clientWidth + 1).map((th) => th.textContent),
      );
      assert.deepEqual(cut_labels, [], 'row labels stay whole');
    },
  },
];

// The explorer at 360 px: every head's thumbnail is on the screen (a layer's row wraps, so no
// head hides past the edge without a cue); anything else that does not fit sits in a sideways
// scroller that itself fits; no text is cut off.
test('the explorer at 360 px: every head thumbnail is on the screen, charts fit or scroll inside it', async () => {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 360, height: 900 });
  await page.goto(server.url + '/#/explorer');
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
  await page.locator('main canvas, main svg').first().waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1500);
  const outside = await page.evaluate(() => {
    const vw = window.innerWidth;
    const scroller = (el) => {
      for (let e = el.parentElement; e && e.tagName !== 'MAIN'; e = e.parentElement)
        if (/auto|scroll/.test(getComputedStyle(e).overflowX)) return e;
      return null;
    };
    const fits = (r) => r.right <= vw + 1 && r.left >= -1;
    return [...document.querySelectorAll('main canvas, main svg, main span, main p, main td, main th')]
      .filter((el) => !el.closest('[hidden], .sr-only'))
      .map((el) => [el, el.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && !fits(r))
      .filter(([el]) => {
        const s = scroller(el);
        return !s || !fits(s.getBoundingClientRect());
      })
      .map(([el, r]) => `${el.tagName.toLowerCase()} “${(el.getAttribute('aria-label') ?? el.textContent).trim().slice(0, 30)}” at ${Math.round(r.left)}..${Math.round(r.right)}`);
  });
  assert.deepEqual(outside, []);
  const thumbs_off_screen = await page.evaluate(() =>
    [...document.querySelectorAll('.explorer__thumb')]
      .filter((b) => { const r = b.getBoundingClientRect(); return r.left < -1 || r.right > window.innerWidth + 1; })
      .map((b) => b.getAttribute('aria-label')),
  );
  assert.ok((await page.locator('.explorer__thumb').count()) >= 8, 'the built-in model has 8 heads');
  assert.deepEqual(thumbs_off_screen, [], 'every head thumbnail is on the screen');
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0, 'no sideways scrolling of the page');
  await page.close();
});

for (const { name, url, ready, no_step_through } of lesson_pages) {
  for (const width of [1280, 360]) {
    test(`${name} at ${width} px: no WCAG A/AA violations, nothing clipped, a screenshot saved`, async () => {
      const page = await browser.newPage();
      await page.setViewportSize({ width, height: 900 });
      await page.goto(server.url + url);
      await ready(page);
      await page.waitForTimeout(800); // the last runs and the charts' first measure
      assert.deepEqual(await violations(page), []);
      assert.deepEqual(await page.evaluate(clipped_text), []);
      if (!no_step_through) {
        // The step-through's last step, with its extra column, must fit too.
        await page.getByTestId('step-through').first().getByRole('button', { name: 'Skip to the weights' }).click();
        assert.deepEqual(await page.evaluate(clipped_text), []);
        assert.deepEqual(await violations(page), []);
      }
      const file = await screenshot(page, `lesson-${name}-${width}`);
      assert.ok(fs.statSync(file).size > 10_000, file);
      // The check itself finds a cut-off text when there is one.
      await page.evaluate(() => {
        const probe = document.createElement('p');
        probe.style.cssText = 'width: 6rem; overflow: hidden; white-space: nowrap';
        probe.textContent = 'a line of text far too long for its narrow box';
        document.querySelector('article').append(probe);
      });
      assert.equal((await page.evaluate(clipped_text)).length, 1);
      await page.close();
    });
  }
}
