// The lesson passes axe-core's WCAG 2 A and AA checks (contrast, names, roles, labels),
// wide and at 360 px, before and after the learner has interacted with it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { open_browser, repo_root, start_server, temp_dir, test_model } from './harness.mjs';
import { lesson_page } from './lesson_page.mjs';

const axe_source = fs.readFileSync(
  createRequire(path.join(repo_root, 'web', 'package.json')).resolve('axe-core/axe.min.js'),
  'utf8',
);
let server, browser;

before(async () => {
  server = await start_server({ db: path.join(temp_dir('headlab-web-db-'), 'progress.db'), model: test_model() });
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
