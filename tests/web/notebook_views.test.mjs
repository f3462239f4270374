// The notebook views (python/headlab/views.py) are the explorer's own components: the HTML the
// Python functions return, opened in Chromium from a file (no server, no network), draws every
// cell of the data it was given, tokens with HTML in them stay text, and several views share a page;
// the comparison of attribution patching's estimates with the measured sweep says what the numbers choose.
// Needs `npm run build --prefix web` (web/dist-notebook/headlab_views.js) and Debian's python3 with
// numpy; views.py is loaded from the checkout by its path, so the compiled module is not needed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { open_browser, repo_root, temp_dir, watch_console } from './harness.mjs';

const python = process.env.HEADLAB_PYTHON || '/usr/bin/python3';
const views_py = path.join(repo_root, 'python', 'headlab', 'views.py');

// The data: small, made here, every number known. A token that would end the script and open a tag.
const tokens = ['<|endoftext|>', ' the', '</script><b>bold</b>', ' "quote\'', ' & amp'];
const T = tokens.length;
let seed = 7;
const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
const causal_row = (q) => {
  const w = Array.from({ length: T }, (_, k) => (k <= q ? rand() + 0.05 : 0));
  const s = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / s);
};
const pattern = [0, 1].map(() => Array.from({ length: T }, (_, q) => causal_row(q))); // (NH=2, T, T)
const patch = {
  what: 'resid_pre', metric: 'logit_diff', noising: false, axes: ['layer', 'pos'],
  values: [[0.1, -0.25, 1.5, 0.0, 0.75], [-1.25, 0.5, 0.3333333, 2.0, -0.125]], // (2 layers, T positions)
  layers: [0, 1], positions: [0, 1, 2, 3, 4], heads: 4, clean: 2.0, corrupted: -1.0,
  clean_tokens: tokens, corrupted_tokens: [...tokens.slice(0, 3), ' Mary', tokens[4]],
  clean_ids: [0, 1, 2, 3, 4], corrupted_ids: [0, 1, 2, 9, 4],
};
// attribution patching's estimates of the same sweep: its top cell (layer 0, position 2) is not the measured one
// (layer 1, position 3), and the two differ most at layer 1, position 3 (2.0 against 1.5)
const estimate = { ...patch, method: 'attribution', pairs: 1, values: [[0.2, -0.3, 1.75, 0.1, 0.5], [-1.0, 0.4, 0.25, 1.5, -0.25]] };
// path patching's answer: (layer, head), NaN where a head was no sender
const path_patch = {
  what: 'path patching into the logits', metric: 'logit_diff', noising: true, axes: ['layer', 'head'],
  values: [[0.5, 'nan', -0.5], ['nan', 1.0, 0.25]], layers: [0, 1], positions: [], clean: 1.0, corrupted: 0.0,
};
const E = 3; // lens entries
const K = 2;
const lens = {
  labels: ['0_pre', '1_pre', 'final_post'], tokens, ids: [0, 1, 2, 3, 4],
  top_ids: Array.from({ length: E }, (_, e) => Array.from({ length: T }, (_, p) => [10 + e * T + p, 50])),
  top_probs: Array.from({ length: E }, () => Array.from({ length: T }, () => { const a = rand(); return [a, a / 2]; })),
  top_logits: Array.from({ length: E }, () => Array.from({ length: T }, () => [3.5, 1.25])),
  top_tokens: Array.from({ length: E }, (_, e) => Array.from({ length: T }, (_, p) => [p === 2 ? '</script><b>x' : ` t${e}.${p}`, ' other'])),
  entropy: Array.from({ length: E }, () => Array.from({ length: T }, () => 1.5)),
  kl_final: Array.from({ length: E }, (_, e) => Array.from({ length: T }, () => (E - 1 - e) * 0.5)),
  answers: [42], answer_tokens: [' Mary'],
  answer_rank: Array.from({ length: E }, (_, e) => Array.from({ length: T }, () => [E - 1 - e])),
  answer_prob: Array.from({ length: E }, () => Array.from({ length: T }, () => [0.125])),
  answer_logit: Array.from({ length: E }, () => Array.from({ length: T }, () => [2.0])),
  answer_logprob: Array.from({ length: E }, () => Array.from({ length: T }, () => [Math.log(0.125)])),
};

// views.py, run as a notebook runs it: each function's snippet, several on one page.
const driver = `
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("headlab_views", sys.argv[1])
views = importlib.util.module_from_spec(spec); spec.loader.exec_module(views)
d = json.load(sys.stdin)
arrays = ("top_ids", "top_probs", "top_logits", "entropy", "kl_final", "answer_rank", "answer_prob", "answer_logit",
          "answer_logprob")  # as model.lens returns them; the rest lists
lens = {k: np.array(v) if k in arrays else v for k, v in d["lens"].items()}
path = dict(d["path"], values=np.array(d["path"]["values"], dtype=float))
parts = [views.attention_patterns(np.array(d["pattern"]), d["tokens"], layer=1),
         views.patching_heatmap(dict(d["patch"], values=np.array(d["patch"]["values"]))),
         views.patching_heatmap(path),
         views.patching_comparison(dict(d["patch"], values=np.array(d["patch"]["values"])),
                                   dict(d["estimate"], values=np.array(d["estimate"]["values"]))),
         views.lens_table(lens, position=-1)]
print("<!doctype html><html><head><meta charset=utf-8><title>views</title></head><body>"
      + "".join(str(p) for p in parts) + "</body></html>")
`;

// one more pattern snippet, for the notebook that runs a script before its output is in the page
const late_driver = `
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("headlab_views", sys.argv[1])
views = importlib.util.module_from_spec(spec); spec.loader.exec_module(views)
print(views.attention_patterns(np.array([[1.0, 0.0], [0.25, 0.75]]), ["a", "b"]))
`;

let browser;
let page;
let errors;
before(async () => {
  const r = spawnSync(python, ['-c', driver, views_py], {
    input: JSON.stringify({ tokens, pattern, patch, estimate, path: path_patch, lens }),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  assert.equal(r.status, 0, `python views failed: ${r.stderr}`);
  const file = path.join(temp_dir('headlab-notebook-views-'), 'views.html');
  fs.writeFileSync(file, r.stdout);
  browser = await open_browser();
  page = await browser.newPage();
  errors = watch_console(page);
  // nothing leaves the page: every request but the file itself fails the test
  const requests = [];
  page.on('request', (q) => q.url().startsWith('file://') || requests.push(q.url()));
  await page.goto(`file://${file}`);
  await page.locator('.headlab-view[data-kind=lens] td').first().waitFor();
  assert.deepEqual(requests, [], 'the views fetch nothing');
});
after(async () => {
  if (process.env.HEADLAB_VIEWS_SCREENSHOT) await page?.screenshot({ path: process.env.HEADLAB_VIEWS_SCREENSHOT, fullPage: true });
  await browser?.close();
});

test('every view drew, with one headlabViews for the page and no script error', async () => {
  for (const kind of ['pattern', 'patching', 'patch_compare', 'lens']) assert.ok((await page.locator(`.headlab-view[data-kind=${kind}]`).count()) >= 1, kind);
  assert.equal(await page.locator('.headlab-view').count(), 5);
  assert.equal(typeof (await page.evaluate(() => window.headlabViews?.sha)), 'string');
  assert.deepEqual(errors.filter((e) => !/favicon/.test(e)), []);
});

test('a token holding </script> and a tag stays text: no element made of it', async () => {
  assert.equal(await page.locator('b').count(), 0);
  const keys = await page.locator('.headlab-view[data-kind=pattern] .weights-grid__key .weights-grid__token').allTextContents();
  assert.deepEqual(keys.slice(0, T), tokens);
});

test('the pattern view is the lessons grid: each head a figure, every weight in its cell, the future masked', async () => {
  const figures = page.locator('.headlab-view[data-kind=pattern] .head-pattern-figure');
  assert.equal(await figures.count(), 2);
  for (let h = 0; h < 2; ++h) {
    const fig = figures.nth(h);
    assert.equal(await fig.locator('h4').textContent(), `Head 1.${h}`);
    assert.equal(await fig.locator('td.weights-grid__cell--masked').count(), (T * (T - 1)) / 2);
    const titles = await fig.locator('td.weights-grid__cell:not(.weights-grid__cell--masked)').evaluateAll((tds) => tds.map((td) => td.title));
    const want = [];
    for (let q = 0; q < T; ++q) for (let k = 0; k <= q; ++k) want.push(`${tokens[q]} (${q}) → ${tokens[k]} (${k}): ${pattern[h][q][k].toFixed(2)}`);
    assert.deepEqual(titles, want);
  }
});

test('the patching view is the explorer heatmap: every value in its cell, the changed token marked, NaN left empty', async () => {
  const [sweep, paths] = [0, 1].map((i) => page.locator('.headlab-view[data-kind=patching]').nth(i));
  const values = await sweep.locator('td[data-value]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(values, patch.values.flat());
  assert.deepEqual(await sweep.locator('.patch-heatmap__note').allTextContents(), ['≠  Mary']);
  assert.match(await sweep.getByTestId('diverging-legend').textContent(), /−2\.0000.*\+2\.0000/);
  assert.match(await sweep.getByTestId('patch-header').textContent(), /clean run 2\.0000, corrupted run\s+-1\.0000/);
  // the largest restoration, chosen by the numbers: layer 1, position 3, (2 − −1)/3 = 100%
  assert.match(await sweep.getByTestId('patch-summary').textContent(), /layer 1, position 3 .*value 2\.0000, 100%/);
  const drawn = await paths.locator('td[data-value]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(drawn, [0.5, -0.5, 1.0, 0.25]);
  assert.equal(await paths.locator('td.patch-heatmap__cell:not([data-value])').count(), 2);
});

test('the comparison view sets the estimates beside the measured sweep on one scale, its sentences chosen by the numbers', async () => {
  const view = page.locator('.headlab-view[data-kind=patch_compare]');
  const sides = { measured: patch, estimated: estimate };
  for (const [side, r] of Object.entries(sides)) {
    const figure = view.getByTestId(`compare-${side}`);
    const values = await figure.locator('td[data-value]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
    assert.deepEqual(values, r.values.flat(), side);
    for (const caption of await figure.locator('caption').allTextContents()) assert.match(caption, new RegExp(`^${side} logit_diff after patching`));
    // one colour scale for both, the larger (the measured 2.0 over the estimated 1.75)
    assert.match(await figure.getByTestId('diverging-legend').textContent(), /−2\.0000.*\+2\.0000/, side);
  }
  assert.match(await view.getByTestId('compare-estimated').getByTestId('patch-summary').textContent(), /^These are first-order estimates/);
  // Pearson's r of the two grids, computed here
  const a = patch.values.flat();
  const b = estimate.values.flat();
  const mean = (x) => x.reduce((s, v) => s + v, 0) / x.length;
  const [ma, mb] = [mean(a), mean(b)];
  const dot = (x, mx, y, my) => x.reduce((s, v, i) => s + (v - mx) * (y[i] - my), 0);
  const r = dot(a, ma, b, mb) / Math.sqrt(dot(a, ma, a, ma) * dot(b, mb, b, mb));
  const drawn = Number(await view.getByTestId('compare-correlation').getAttribute('data-correlation'));
  assert.ok(Math.abs(drawn - r) < 1e-6, `correlation ${drawn} vs ${r}`);
  assert.match(await view.getByTestId('compare-correlation').textContent(), new RegExp(`Over 10 cells .* at ${r.toFixed(4)}`));
  // its words by the band of patch_compare_bands.json r falls in (headlab.views.correlation_words reads the same file)
  const bands = JSON.parse(fs.readFileSync(path.join(repo_root, 'web', 'src', 'explorer', 'research', 'patch_compare_bands.json'), 'utf8'));
  const words = bands.find((b) => b.at_least === null || r >= b.at_least).words;
  assert.ok((await view.getByTestId('compare-correlation').textContent()).includes(`: ${words}, whatever their sizes.`), words);
  assert.match(await view.getByTestId('compare-disagree').textContent(), /differ most at layer 1, position 3 .*measured 2\.0000, estimated 1\.5000/);
  assert.match(await view.getByTestId('compare-top').textContent(), /^The top cells differ: .* at layer 1, position 3 .*attribution patching at layer 0, position 2 /);
});

test('the lens view is the explorer lens table: each cell the top token and its probability', async () => {
  const view = page.locator('.headlab-view[data-kind=lens]');
  const probs = await view.locator('td[data-prob]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.prob)));
  const want = lens.top_probs.flat().map((x) => x[0]);
  assert.equal(probs.length, E * T);
  probs.forEach((p, i) => assert.ok(Math.abs(p - want[i]) < 1e-6 * Math.max(1, want[i]), `cell ${i}: ${p} vs ${want[i]}`));
  assert.deepEqual(await view.locator('.lens__token').allTextContents(), lens.top_tokens.flat().map((x) => x[0]));
  assert.deepEqual(await view.locator('tbody th').allTextContents(), lens.labels);
  // read out first: the last entry at the last position, the answer's rank and probability there
  assert.match(await view.getByTestId('lens-readout').textContent(), /final_post, position 4 .*answer “ Mary” rank 0, p 0\.125/);
  assert.equal(await view.locator('.lens__mark').count(), T); // the answer is the top token in the last row
});

test('a view whose script runs before its output is attached (the classic notebook, jQuery) draws once it is', async () => {
  const r = spawnSync(python, ['-c', late_driver, views_py], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const drawn = await page.evaluate(async (html) => {
    const host = document.createElement('div'); // the output, not yet in the page
    host.innerHTML = html;
    const code = host.querySelector('script').textContent;
    const run = document.createElement('script'); // jQuery runs a snippet's scripts from <head>
    run.textContent = code;
    document.head.appendChild(run).remove();
    await new Promise((ok) => setTimeout(ok, 200));
    const before = host.querySelectorAll('td').length;
    document.body.appendChild(host);
    for (let i = 0; i < 50 && host.querySelectorAll('td').length === 0; ++i) await new Promise((ok) => setTimeout(ok, 50));
    return { before, after: [...host.querySelectorAll('td.weights-grid__cell:not(.weights-grid__cell--masked)')].map((td) => td.title) };
  }, r.stdout);
  assert.equal(drawn.before, 0);
  assert.deepEqual(drawn.after, ['a (0) → a (0): 1.00', 'b (1) → a (0): 0.25', 'b (1) → b (1): 0.75']);
});
