// The example notebooks in a live Jupyter (Debian's jupyter-notebook, the classic Notebook 6),
// run cell by cell from its page in Chromium as a researcher would: every cell ends without an
// error, and the headlab views the cells return are drawn inline by the Notebook's own output
// area — the attention patterns, the patching heatmaps, attribution's comparison with its
// sentences and the lens table, each with the numbers of its cell. (tests/web/notebook_views
// opens the same HTML from a file; this is the frontend the views are written for.)
//
// Run by tests/python/run.sh after pytest: PYTHONPATH is the installed module (WORK/site) and
// HEADLAB_ROOT the checkout; the notebooks are copied to a temporary folder, so nothing in the
// checkout is written (the Notebook saves as it goes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { open_browser, repo_root, temp_dir } from '../web/harness.mjs';

const python = process.env.HEADLAB_PYTHON || '/usr/bin/python3';
const token = 'headlab-live-test';
let server, port, browser, log = '';

const free_port = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });

before(async () => {
  assert.ok(process.env.PYTHONPATH, 'PYTHONPATH must name the installed module (tests/python/run.sh sets it)');
  const dir = temp_dir('headlab-jupyter-');
  for (const nb of fs.readdirSync(path.join(repo_root, 'examples', 'notebooks')).filter((f) => f.endsWith('.ipynb')))
    fs.copyFileSync(path.join(repo_root, 'examples', 'notebooks', nb), path.join(dir, nb));
  port = await free_port();
  server = spawn(python, ['-m', 'notebook', '--no-browser', '--allow-root', `--port=${port}`, '--port-retries=0', '--ip=127.0.0.1',
    `--NotebookApp.token=${token}`, `--notebook-dir=${dir}`], {
    env: { ...process.env, HEADLAB_ROOT: process.env.HEADLAB_ROOT || repo_root, JUPYTER_CONFIG_DIR: path.join(dir, '.jupyter'),
      JUPYTER_RUNTIME_DIR: path.join(dir, '.runtime'), IPYTHONDIR: path.join(dir, '.ipython') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout.on('data', (d) => (log += d));
  server.stderr.on('data', (d) => (log += d));
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/status?token=${token}`);
      if (r.ok) break;
    } catch {}
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`Jupyter did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  browser = await open_browser({ width: 1400, height: 1000 });
});

after(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
});

// Opens NAME in the Notebook, runs every cell from a fresh kernel, waits for the last one, and
// returns the page. Fails with the first error output's traceback, or Jupyter's log.
async function run_notebook(name) {
  const page = await browser.newPage();
  const page_errors = [];
  page.on('pageerror', (e) => page_errors.push(e.message));
  await page.goto(`http://127.0.0.1:${port}/notebooks/${name}?token=${token}`);
  await page.waitForFunction(() => window.Jupyter?.notebook?.kernel?.is_connected?.(), null, { timeout: 60_000 });
  await page.evaluate(() => Jupyter.notebook.execute_all_cells());
  try {
    // done when every code cell has its execution count and the kernel is idle
    await page.waitForFunction(
      () =>
        Jupyter.notebook.get_cells().every((c) => c.cell_type !== 'code' || typeof c.input_prompt_number === 'number') &&
        !Jupyter.notebook.kernel_busy,
      null, { timeout: 180_000, polling: 250 });
  } catch (e) {
    throw new Error(`${name} did not finish: ${e.message}\n${log.slice(-3000)}`);
  }
  const errors = await page.evaluate(() =>
    Jupyter.notebook.get_cells().flatMap((c) => (c.output_area?.outputs ?? []).filter((o) => o.output_type === 'error')
      .map((o) => `${o.ename}: ${o.evalue}`)));
  assert.deepEqual(errors, [], `${name}: error outputs`);
  assert.deepEqual(page_errors.filter((m) => /headlab|svelte/i.test(m)), [], `${name}: errors in the views' scripts`);
  return page;
}

test('the induction notebook draws its pattern and lens views inline in a live Notebook', async () => {
  const page = await run_notebook('induction_head.ipynb');
  const pattern = page.locator('.output_area .headlab-view[data-kind=pattern]');
  await pattern.first().waitFor({ timeout: 30_000 });
  assert.equal(await pattern.count(), 1);
  // the one head the cell asked for, drawn with its causal mask: 41 tokens, so 41·40/2 masked cells
  const figure = pattern.locator('.head-pattern-figure');
  assert.equal(await figure.count(), 1);
  assert.match(await figure.locator('h4').textContent(), /^Head \d\.\d$/);
  assert.equal(await figure.locator('td.weights-grid__cell--masked').count(), (41 * 40) / 2);
  // the printed induction head is the one drawn
  const printed = await page.evaluate(() =>
    Jupyter.notebook.get_cells().flatMap((c) => (c.output_area?.outputs ?? []).map((o) => o.text ?? '')).join(''));
  const m = printed.match(/strongest induction head: L(\d)H(\d)/);
  assert.ok(m, printed.slice(0, 500));
  assert.equal(await figure.locator('h4').textContent(), `Head ${m[1]}.${m[2]}`);
  const lens = page.locator('.output_area .headlab-view[data-kind=lens]');
  assert.equal(await lens.count(), 1);
  const probs = await lens.locator('td[data-prob]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.prob)));
  assert.ok(probs.length > 0 && probs.every((p) => p >= 0 && p <= 1), `lens probabilities ${probs}`);
  await page.close();
});

test('the IOI notebook draws its heatmaps and the comparison whose sentences match its printed numbers', async () => {
  const page = await run_notebook('ioi_patching.ipynb');
  const heatmaps = page.locator('.output_area .headlab-view[data-kind=patching]');
  await heatmaps.first().waitFor({ timeout: 30_000 });
  assert.equal(await heatmaps.count(), 3); // resid_pre, heads, path patching
  for (let i = 0; i < 3; i++) {
    const values = await heatmaps.nth(i).locator('td[data-value]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
    assert.ok(values.length > 0 && values.every(Number.isFinite), `heatmap ${i}: ${values.length} cells`);
  }
  const compare = page.locator('.output_area .headlab-view[data-kind=patch_compare]');
  assert.equal(await compare.count(), 1);
  // the view's correlation is the one the cell printed from numpy (three decimals)
  const r = Number(await compare.locator('[data-testid=compare-correlation]').getAttribute('data-correlation'));
  const printed = await page.evaluate(() =>
    Jupyter.notebook.get_cells().flatMap((c) => (c.output_area?.outputs ?? []).map((o) => o.text ?? '')).join(''));
  const m = printed.match(/r = (-?\d\.\d+)/);
  assert.ok(m, `no "r = " in the printed output: ${printed.slice(0, 800)}`);
  assert.ok(Math.abs(r - Number(m[1])) < 0.0015, `view r=${r}, printed ${m[1]}`);
  assert.ok((await compare.locator('[data-testid=compare-top]').textContent()).length > 20);
  await page.close();
});
