// The explorer's research views (issue 27): activation patching as a layer × position or
// layer × head heatmap (a sweep over the server's work limit offered narrower), attribution
// patching's estimates in the same heatmap and compared with activation patching, path patching
// over the layer × head grid, the logit lens as a layer × position table of top tokens, the
// composition circuit over the head grid with a head's OV and QK circuits, and the open view
// kept in the address. Every number the page shows is compared with what
// this test gets from the same API for the same request.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_get, api_post, eventually, open_page, repo_root, screenshot, test_model } from './harness.mjs';

const axe_source = fs.readFileSync(createRequire(path.join(repo_root, 'web', 'package.json')).resolve('axe-core/axe.min.js'), 'utf8');
async function violations() {
  await page.evaluate(axe_source); // evaluate() runs outside the page's Content-Security-Policy
  const result = await page.evaluate(() => globalThis.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }));
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length}×, e.g. ${v.nodes[0].target.join(' ')})`);
}

// The page's defaults: the built-in model's induction story (docs/research.md).
const CLEAN = ' gray whale ink crown plum fog violin arch gray whale ink crown plum fog';
const CORRUPTED = ' gray whale ink crown plum fog arch violin gray whale ink crown plum fog';
const LONG = 4; // copies of the story in each prompt of the batch the work limit refuses (121 tokens with BOS)
const PATCH = { clean: CLEAN, corrupted: CORRUPTED, answer: ' viol', wrong: ' ar', what: 'resid_pre', metric: 'normalized', noising: false };

let server, page, problems, close, model;
before(async () => {
  ({ server, page, problems, close } = await open_page({ route: '/#/explorer', model: test_model() }));
  model = (await api_get(server, '/api/model')).body;
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
});
after(() => close?.());

const tab = (name) => page.getByRole('tablist', { name: 'Explorer views' }).getByRole('tab', { name, exact: true });
const heatmap_cells = () => page.getByTestId('patch-heatmap').locator('td[data-value]');
const flat = (x) => (Array.isArray(x) ? x.flatMap(flat) : [x]);

async function patch(body) {
  const r = await api_post(server, '/api/model/patch', body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

test('the patching view opens on the induction story: one cell per value of the API, layer × position', async () => {
  await tab('Patching').click();
  assert.equal(await tab('Patching').getAttribute('aria-selected'), 'true');
  const want = await patch(PATCH);
  assert.deepEqual(want.axes, ['layer', 'pos']);
  await eventually(async () => assert.equal(await heatmap_cells().count(), flat(want.values).length), 30_000);
  const shown = await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(shown, flat(want.values), 'cells in the API’s order, row by row');
  // Columns: one per position, each labelled with its index; the corrupted token where it differs.
  const heads = page.getByTestId('patch-heatmap').locator('thead th');
  assert.equal(await heads.count(), want.positions.length + 1);
  const differ = want.positions.filter((p) => want.tokens[p].id !== want.corrupted_tokens[p].id);
  assert.equal(await page.getByTestId('patch-heatmap').locator('.patch-heatmap__note').count(), differ.length);
  // The header states both runs' metrics.
  const header = await page.getByTestId('patch-header').textContent();
  assert.match(header, new RegExp(`clean run ${want.clean.toFixed(4)}, corrupted run ${want.corrupted.toFixed(4)}`));
  // The legend runs from −max|v| to +max|v|.
  const m = Math.max(...flat(want.values).map(Math.abs));
  assert.match(await page.getByTestId('diverging-legend').textContent(), new RegExp(`−${m.toFixed(4)}.*\\+${m.toFixed(4)}`));
  await screenshot(page, '90-research-patching');
});

test('hovering or focusing a patching cell reads out the API’s value; the sentence names the largest restoration', async () => {
  const want = await patch(PATCH);
  // The largest restoration, from the numbers.
  let best = { l: 0, j: 0, v: -Infinity };
  want.values.forEach((row, l) => row.forEach((v, j) => v > best.v && (best = { l, j, v })));
  const pos = want.positions[best.j];
  const cell = heatmap_cells().nth(best.l * want.positions.length + best.j);
  await cell.hover();
  const readout = page.getByTestId('patch-readout');
  await eventually(async () => assert.match(await readout.textContent(), new RegExp(`layer ${want.layers[best.l]}, position ${pos} .*: ${best.v.toFixed(4)}`)));
  // The keyboard: Tab from the hovered cell focuses the next one, and the read-out follows.
  await page.mouse.move(0, 0);
  await cell.focus();
  await page.keyboard.press('Tab');
  const next = want.values[best.l][best.j + 1];
  await eventually(async () => assert.match(await readout.textContent(), new RegExp(`position ${want.positions[best.j + 1]} .*: ${next.toFixed(4)}`)));
  const summary = await page.getByTestId('patch-summary').textContent();
  assert.match(summary, new RegExp(`^The largest restoration: layer ${want.layers[best.l]}, position ${pos} \\(“${want.tokens[pos].text}”`));
  assert.match(summary, new RegExp(`value ${best.v.toFixed(4)}, ${Math.round(100 * best.v)}% of the clean–corrupted range`));
  if (!process.env.HEADLAB_MODEL) assert.equal(want.tokens[pos].text, ' viol', 'the built-in model: the first copy’s token after “fog”');
});

test('the patching sweep exports as SVG (one cell per value), CSV (one row per value) and PNG', async () => {
  const want = await patch(PATCH);
  const save = async (kind) => {
    const [d] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: `Save the patching sweep as ${kind}` }).click()]);
    return { name: d.suggestedFilename(), file: await d.path() };
  };
  const svg = await save('SVG');
  assert.equal(svg.name, 'patch-resid_pre-normalized.svg');
  const text = fs.readFileSync(svg.file, 'utf8');
  const titles = [...text.matchAll(/<title>[^<]*: (-?\d+\.\d{4})<\/title>/g)].map((m) => m[1]);
  assert.deepEqual(titles, flat(want.values).map((v) => v.toFixed(4)));
  const csv = fs.readFileSync((await save('CSV')).file, 'utf8').trim().split('\n');
  assert.equal(csv[0], 'layer,pos,clean_token,corrupted_token,value');
  assert.equal(csv.length - 1, flat(want.values).length);
  assert.equal(Number(csv[1].split(',').at(-1)), want.values[0][0]);
  const png = await save('PNG');
  assert.equal(fs.readFileSync(png.file).subarray(1, 4).toString(), 'PNG');
});

test('heads over all positions draw as layer × head', async () => {
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('z_all_pos');
  await page.getByRole('button', { name: 'Run patching' }).click();
  const want = await patch({ ...PATCH, what: 'z_all_pos' });
  assert.deepEqual(want.axes, ['layer', 'head']);
  await eventually(async () => assert.equal(await heatmap_cells().count(), model.config.n_layer * model.config.n_head), 30_000);
  const shown = await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(shown, flat(want.values));
  const headers = await page.getByTestId('patch-heatmap').locator('tbody th').allTextContents();
  assert.deepEqual(headers, want.layers.map((l) => `layer ${l}`));
  await heatmap_cells().nth(model.config.n_head + 2).hover();
  await eventually(async () => assert.match(await page.getByTestId('patch-readout').textContent(), new RegExp(`layer 1, head 2: ${want.values[1][2].toFixed(4)}`)));
});

test('noising reverses the sweep: the sentence names the largest damage, from the numbers', async () => {
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('resid_pre');
  await page.getByRole('checkbox', { name: /^Noising/ }).check();
  await page.getByRole('button', { name: 'Run patching' }).click();
  const want = await patch({ ...PATCH, noising: true });
  assert.equal(want.direction, 'noising');
  await eventually(async () => assert.match(await page.getByTestId('patch-header').textContent(), /noising: corrupted activations into the clean run/), 30_000);
  const shown = await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(shown, flat(want.values));
  let worst = { l: 0, j: 0, v: Infinity };
  want.values.forEach((row, l) => row.forEach((v, j) => v < worst.v && (worst = { l, j, v })));
  assert.match(
    await page.getByTestId('patch-summary').textContent(),
    new RegExp(`^The largest damage: layer ${want.layers[worst.l]}, position ${want.positions[worst.j]} .*value ${worst.v.toFixed(4)}, taking away ${Math.round(100 * (1 - worst.v))}%`),
  );
  await page.getByRole('checkbox', { name: /^Noising/ }).uncheck();
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('z_all_pos');
});

test('the API’s errors are shown in its own words: prompts of different lengths, an answer of two tokens', async () => {
  const corrupted = page.getByRole('textbox', { name: 'Corrupted prompt' });
  await corrupted.fill(' gray whale');
  await page.getByRole('button', { name: 'Run patching' }).click();
  const bad = await api_post(server, '/api/model/patch', { ...PATCH, corrupted: ' gray whale', what: 'z_all_pos' });
  assert.equal(bad.status, 400);
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').textContent(), bad.body.error.message));
  await corrupted.fill(CORRUPTED);
  await page.getByRole('textbox', { name: 'Answer token' }).fill(' violin');
  await page.getByRole('button', { name: 'Run patching' }).click();
  const two = await api_post(server, '/api/model/patch', { ...PATCH, answer: ' violin', what: 'z_all_pos' });
  assert.equal(two.status, 400);
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').textContent(), two.body.error.message));
  assert.match(two.body.error.message, /2 tokens/);
  await page.getByRole('textbox', { name: 'Answer token' }).fill(' viol');
  await page.getByRole('button', { name: 'Run patching' }).click();
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').count(), 0));
});

// Attribution patching (docs/research.md, "Attribution patching"): the same route with
// "method": "attribution", each cell a first-order estimate.
const ATTRIBUTION = { ...PATCH, method: 'attribution' };
const method_box = () => page.getByRole('combobox', { name: 'Method' });
// the cell top_cell picks: the largest value (denoising; the first in the answer's order on a tie)
const top_index = (values) => flat(values).reduce((best, v, i, all) => (v > all[best] ? i : best), 0);
function pearson(a, b) {
  const n = a.length;
  const ma = a.reduce((s, x) => s + x, 0) / n;
  const mb = b.reduce((s, x) => s + x, 0) / n;
  let sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) ** 2;
    sbb += (b[i] - mb) ** 2;
  }
  return sab / Math.sqrt(saa * sbb);
}

test('attribution patching on the induction story draws the API’s estimates cell for cell, and says they are first-order estimates naming the largest', async () => {
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('resid_pre');
  await page.getByRole('combobox', { name: 'Metric' }).selectOption('normalized');
  await method_box().selectOption('attribution');
  await page.getByRole('button', { name: 'Run patching' }).click();
  const want = await patch(ATTRIBUTION);
  assert.equal(want.method, 'attribution');
  assert.equal(want.cost.forwards, 2, 'two forwards (and a backward) for the one pair, whatever the cells');
  await eventually(async () => assert.match(await page.getByTestId('patch-header').textContent(), /^\s*Estimated \(attribution patching\)/), 30_000);
  const shown = await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(shown, flat(want.values), 'the estimates in the API’s order, row by row');
  assert.match(await page.getByTestId('patch-header').textContent(), /2 forwards and 1 backward, however many cells/);
  const i = top_index(want.values);
  const [l, j] = [Math.floor(i / want.positions.length), i % want.positions.length];
  const pos = want.positions[j];
  const summary = await page.getByTestId('patch-summary').textContent();
  assert.match(summary, /^These are first-order estimates \(attribution patching: one backward per pair, one pair\), not patched runs\. /);
  assert.match(summary, new RegExp(`The largest estimated restoration: layer ${want.layers[l]}, position ${pos} \\(“${want.tokens[pos].text}”.*value ${want.values[l][j].toFixed(4)}, ${Math.round(100 * want.values[l][j])}% of the clean–corrupted range`));
  if (!process.env.HEADLAB_MODEL) assert.equal(want.tokens[pos].text, ' viol', 'the built-in model: the estimate finds the position activation patching finds');
});

test('comparing with activation patching shows the correlation of the two API answers, the cell they differ most at with both values, and whether the top cells agree', async () => {
  await page.getByRole('button', { name: 'Compare with activation patching' }).click();
  const estimated = await patch(ATTRIBUTION);
  const measured = await patch(PATCH);
  const [a, b] = [flat(measured.values), flat(estimated.values)];
  const r = pearson(a, b);
  const correlation = page.getByTestId('compare-correlation');
  await eventually(async () => assert.match(await correlation.textContent(), new RegExp(`^Over ${a.length} cells the estimates correlate with the measured values at ${r.toFixed(4)}: `)), 30_000);
  assert.ok(Math.abs(Number(await correlation.getAttribute('data-correlation')) - r) < 1e-9, 'the page’s correlation is the one computed here');
  // the estimates stay drawn first; the measured grid follows, cell for cell the API's
  const grids = page.getByTestId('patch-heatmap');
  assert.equal(await grids.count(), 2);
  assert.deepEqual(await grids.nth(0).locator('td[data-value]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value))), b);
  assert.deepEqual(await grids.nth(1).locator('td[data-value]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value))), a);
  // the largest difference
  const d = a.reduce((best, _, i) => (Math.abs(a[i] - b[i]) > Math.abs(a[best] - b[best]) ? i : best), 0);
  const dpos = measured.positions[d % measured.positions.length];
  assert.match(
    await page.getByTestId('compare-disagree').textContent(),
    new RegExp(`^They differ most at layer ${measured.layers[Math.floor(d / measured.positions.length)]}, position ${dpos} .*: measured ${a[d].toFixed(4)}, estimated ${b[d].toFixed(4)}`),
  );
  // the top cells, by the numbers
  const [ta, tb] = [top_index(measured.values), top_index(estimated.values)];
  const top = await page.getByTestId('compare-top').textContent();
  if (ta === tb) assert.match(top, new RegExp(`^The top cells agree: .*measured ${a[ta].toFixed(4)}, estimated ${b[ta].toFixed(4)}`));
  else assert.match(top, new RegExp(`^The top cells differ: activation patching .*measured ${a[ta].toFixed(4)}.*attribution patching .*estimated ${b[tb].toFixed(4)}`));
  if (!process.env.HEADLAB_MODEL) assert.equal(ta, tb, 'the built-in model: both put the top cell at layer 0, position 14 (docs/research.md)');
  assert.deepEqual(await violations(), [], 'the comparison');
  await screenshot(page, '95-research-attribution-compare');
});

test('attribution patching refuses exactly what activation patching refuses, so the form disables no field for it and says so', async () => {
  // every what (on a few positions) and every metric, both methods: the same status, the same words
  const whats = await page.getByRole('combobox', { name: 'Patch' }).locator('option').evaluateAll((os) => os.map((o) => o.value));
  const metrics = await page.getByRole('combobox', { name: 'Metric' }).locator('option').evaluateAll((os) => os.map((o) => o.value));
  const asks = [...whats.map((what) => ({ what })), ...metrics.map((metric) => ({ metric })), { noising: true }, { layers: [1] }];
  for (const ask of asks) {
    const body = { ...PATCH, positions: [13, 14, 15], ...ask };
    const [act, att] = [await api_post(server, '/api/model/patch', body), await api_post(server, '/api/model/patch', { ...body, method: 'attribution' })];
    assert.equal(att.status, act.status, JSON.stringify(ask));
    if (act.status !== 200) assert.equal(att.body.error.message, act.body.error.message, JSON.stringify(ask));
  }
  const batch = await api_post(server, '/api/model/patch', { prompts: [PATCH, PATCH].map(({ clean, corrupted, answer, wrong }) => ({ clean, corrupted, answer, wrong })), method: 'attribution' });
  assert.equal(batch.status, 200, 'a batch too');
  // so with attribution chosen every control of the form stays enabled, and the hint says why
  const form = page.locator('form.research__form');
  const disabled = await form.locator('input, select, textarea').evaluateAll((xs) => xs.filter((x) => x.disabled).map((x) => x.closest('label')?.textContent?.trim()));
  assert.deepEqual(disabled, []);
  assert.match(await page.getByTestId('patch-method-hint').textContent(), /takes every field above as activation patching does/);
  await method_box().selectOption('activation');
  assert.equal(await page.getByRole('button', { name: 'Compare with activation patching' }).count(), 0, 'the comparison is offered with attribution only');
});

// The loss story (patch_stories.ts, docs/research.md "the loss on the second copy"): eight words
// twice against other words then the same eight, the loss read over the second copy only.
const COPY = ' close living reform today percent hands single worth';
const LOSS = { clean: COPY + COPY, corrupted: ' press doubt account level threat schools former history' + COPY, answer: '', metric: 'loss', loss_positions: { from: 9, to: 16 } };

test('the loss stories: each button sends the loss over the second copy and draws the API’s answer cell for cell; a bad range is refused in the API’s words', async () => {
  await tab('Patching').click();
  await page.getByRole('button', { name: 'The loss on the second copy' }).click();
  const want = await patch({ ...LOSS, what: 'attn_out', noising: false });
  assert.deepEqual(want.loss_positions, { from: 9, to: 16 });
  await eventually(async () => assert.match(await page.getByTestId('patch-header').textContent(), /attn_out[\s\S]*loss\s+over positions 9:16: clean run/), 30_000);
  await eventually(async () => assert.deepEqual(await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value))), flat(want.values)));
  assert.match(await page.getByTestId('patch-header').textContent(), new RegExp(`clean run ${want.clean.toFixed(4)}, corrupted run ${want.corrupted.toFixed(4)}`));
  assert.equal(await page.getByRole('textbox', { name: 'Loss positions' }).inputValue(), '9:16');
  assert.match(await page.getByTestId('patch-story').textContent(), /each position of the second copy brings back its own share/);
  if (!process.env.HEADLAB_MODEL) {
    // the built-in model: at layer 1 each of the second copy's positions restores a share, together about all
    const share = (v) => (want.corrupted - v) / (want.corrupted - want.clean);
    const layer1 = want.values[1].slice(9, 16).map(share);
    assert.ok(Math.min(...layer1) > 0.08 && layer1.reduce((a, b) => a + b) > 0.85, JSON.stringify(layer1));
  }
  await page.getByRole('button', { name: 'Which heads carry that loss' }).click();
  const heads = await patch({ ...LOSS, what: 'z_all_pos', noising: true });
  await eventually(async () => assert.match(await page.getByTestId('patch-header').textContent(), /z_all_pos \(noising/), 30_000);
  await eventually(async () => assert.deepEqual(await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value))), flat(heads.values)));
  if (!process.env.HEADLAB_MODEL) assert.match(await page.getByTestId('patch-summary').textContent(), /^The largest damage: layer 0, head 3, /);
  // a range past the prompts' end: the server's refusal, word for word
  await page.getByRole('textbox', { name: 'Loss positions' }).fill('9:40');
  await page.getByRole('button', { name: 'Run patching' }).click();
  const bad = await api_post(server, '/api/model/patch', { ...LOSS, what: 'z_all_pos', noising: true, loss_positions: { from: 9, to: 40 } });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /loss positions 9:40 are past the end of the prompt pair/);
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').textContent(), bad.body.error.message));
  // back to the induction answer, the fields the tests below start from
  await page.getByRole('button', { name: 'The induction answer' }).click();
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').count(), 0));
  assert.equal(await page.getByRole('textbox', { name: 'Loss positions' }).count(), 0, 'the field shows with the loss metric only');
});

test('the lens view: a layer × position table whose top tokens and probabilities are the API’s; hover gives the answer’s rank', async () => {
  await tab('Logit lens').click();
  const want = (await api_post(server, '/api/model/lens', { text: CLEAN, top_k: 3, answers: [' viol'] })).body;
  const cells = page.getByTestId('lens-table').locator('tbody td');
  await eventually(async () => assert.equal(await cells.count(), want.layers.length * want.tokens.length), 30_000);
  const shown = await cells.evaluateAll((tds) => tds.map((td) => [Number(td.dataset.topId), Number(td.dataset.prob)]));
  assert.deepEqual(shown, want.values.flatMap((row) => row.map((c) => [c.top[0].id, c.top[0].prob])));
  const rows = await page.getByTestId('lens-table').locator('tbody th').allTextContents();
  assert.deepEqual(rows, want.layers);
  const T = want.tokens.length;
  const L = want.layers.length - 1; // final_post at the last position
  await cells.nth(L * T + T - 1).hover();
  const a = want.values[L][T - 1].answers[0];
  await eventually(async () =>
    assert.match(await page.getByTestId('lens-readout').textContent(), new RegExp(`answer “ viol” rank ${a.rank}, p ${a.prob.toPrecision(3)}`)),
  );
  const [d] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Save the logit lens table as CSV' }).click()]);
  const csv = fs.readFileSync(await d.path(), 'utf8').trim().split('\n');
  assert.equal(csv.length - 1, want.layers.length * T);
  await screenshot(page, '91-research-lens');
});

// Every pair above the threshold, from the API's own values.
function pairs_above(r, threshold) {
  const out = [];
  r.values.forEach((a, sl) => a.forEach((b, sh) => b.forEach((c, rl) => c.forEach((s, rh) => rl > sl && s >= threshold && out.push(`${sl}.${sh}>${rl}.${rh}`)))));
  return out.sort();
}

test('the circuit view draws exactly the pairs above the threshold, against the API’s baseline', async () => {
  await tab('Circuit').click();
  const plain = (await api_post(server, '/api/model/compose', { kind: 'k' })).body;
  const edges = page.getByTestId('circuit-edge');
  const drawn = async () => (await edges.evaluateAll((gs) => gs.map((g) => `${g.dataset.sender}>${g.dataset.receiver}`))).sort();
  for (const factor of [2, 1.25]) {
    await page.getByRole('combobox', { name: 'Threshold' }).selectOption(String(factor));
    const want = pairs_above(plain, factor * plain.baseline.mean);
    await eventually(async () => assert.deepEqual(await drawn(), want), 30_000);
    assert.match(await page.getByTestId('circuit-baseline').textContent(), new RegExp(`Random baseline: ${plain.baseline.mean.toFixed(4)} ± ${plain.baseline.std.toFixed(4)}`));
    assert.equal(await page.getByTestId('circuit-table').locator('tbody tr').count(), want.length);
  }
  await page.getByRole('combobox', { name: 'Threshold' }).selectOption('2');
  await eventually(async () => assert.deepEqual(await drawn(), pairs_above(plain, 2 * plain.baseline.mean)));
  assert.equal(await page.getByTestId('circuit-head').count(), model.config.n_layer * model.config.n_head);
  if (!process.env.HEADLAB_MODEL) {
    // The built-in model's story: the previous-token head 0.3 feeds the induction head 1.2.
    const edge = edges.and(page.locator('[data-sender="0.3"][data-receiver="1.2"]'));
    assert.equal(await edge.count(), 1);
    await edge.focus();
    const score = plain.values[0][3][1][2];
    await eventually(async () => assert.match(await page.getByTestId('circuit-readout').textContent(), new RegExp(`0\\.3 → 1\\.2: K-composition ${score.toFixed(4)}`)));
    assert.match(await page.getByTestId('circuit-summary').textContent(), /head 0\.3 → head 1\.2/);
  }
  await screenshot(page, '92-research-circuit');
  // Q-composition: the same rule on its own scores.
  await page.getByRole('combobox', { name: 'Composition' }).selectOption('q');
  const q = (await api_post(server, '/api/model/compose', { kind: 'q' })).body;
  await eventually(async () => assert.deepEqual(await drawn(), pairs_above(q, 2 * q.baseline.mean)), 30_000);
});

// The path-patching view's defaults, as the API is sent them: senders every head below the last
// layer, receivers the last layer's heads' keys (docs/research.md's story on the built-in model).
const PATH = {
  clean: CLEAN,
  corrupted: ' gray whale ink crown plum dust violin arch gray whale ink crown plum fog',
  answer: ' viol',
  wrong: ' ar',
  metric: 'logprob',
  noising: true,
};
const heads_of = (l) => Array.from({ length: model.config.n_head }, (_, h) => `${l}.${h}`);

test('the path-patching view: the ticked senders and receivers are what the API is sent, the layer × head grid is its answer, the sentence its largest path', async () => {
  await tab('Path patching').click();
  const L = model.config.n_layer;
  const senders = Array.from({ length: L - 1 }, (_, l) => heads_of(l)).flat();
  const receivers = heads_of(L - 1).map((h) => `${h}:k`);
  const want = (await api_post(server, '/api/model/path-patch', { ...PATH, senders, receivers })).body;
  assert.equal(want.kind, 'path_patch', JSON.stringify(want));
  const ran = flat(want.values).filter((v) => v !== null);
  await eventually(async () => assert.equal(await heatmap_cells().count(), ran.length), 30_000);
  assert.deepEqual(await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value))), ran);
  assert.equal(await page.getByTestId('patch-heatmap').locator('tbody tr').count(), L, 'every layer is a row; non-senders are empty cells');
  assert.match(await page.getByTestId('path-header').textContent(), new RegExp(`clean run ${want.clean.toFixed(4)}, corrupted run ${want.corrupted.toFixed(4)}`));
  // the colours: white at the clean run (noising starts there), the ends as far as the furthest sender
  const m = Math.max(...ran.map((v) => Math.abs(v - want.clean)));
  assert.match(
    await page.getByTestId('diverging-legend').textContent(),
    new RegExp(`${(want.clean - m).toFixed(4)}[\\s\\S]*${(want.clean + m).toFixed(4)}[\\s\\S]*white at the clean run \\(${want.clean.toFixed(4)}\\)`),
  );
  // the sentence: the sender that takes the metric furthest from the clean run
  let best = { i: 0, v: Infinity };
  ran.forEach((v, i) => v < best.v && (best = { i, v }));
  const head = senders[best.i];
  const pct = Math.round((100 * (want.clean - best.v)) / (want.clean - want.corrupted));
  const summary = await page.getByTestId('path-summary').textContent();
  assert.match(summary, new RegExp(`head ${head.replace('.', '\\.')} → the inputs .*${best.v.toFixed(4)}, ${pct}% of the way`));
  if (!process.env.HEADLAB_MODEL) assert.equal(head, '0.3', 'the built-in model: the previous-token head feeds the induction heads’ keys');
  await heatmap_cells().nth(best.i).hover();
  await eventually(async () => assert.match(await page.getByTestId('path-readout').textContent(), new RegExp(`head ${head.replace('.', '\\.')} → .*: ${best.v.toFixed(4)}`)));
  const [d] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Save the path patching as CSV' }).click()]);
  const csv = fs.readFileSync(await d.path(), 'utf8').trim().split('\n');
  assert.deepEqual(csv.slice(1).map((row) => Number(row.split(',').at(-1))), ran);
  await screenshot(page, '93-research-path-patching');
  // into the final residual stream instead, from every head
  await page.getByRole('radio', { name: 'The final residual stream (the logits)' }).check();
  await page.getByRole('button', { name: 'Every head' }).click();
  await page.getByRole('button', { name: 'Run path patching' }).click();
  const final = (await api_post(server, '/api/model/path-patch', { ...PATH, senders: 'all', receivers: 'final' })).body;
  await eventually(async () => assert.match(await page.getByTestId('path-header').textContent(), /Senders every head → the final residual stream/), 30_000);
  assert.deepEqual(await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value))), flat(final.values));
});

test('the open view is in the address: a reload opens it again, and a view the explorer lacks is said', async () => {
  assert.equal(new URL(page.url()).searchParams.get('view'), 'path');
  await page.reload();
  await eventually(async () => assert.equal(await tab('Path patching').getAttribute('aria-selected'), 'true'), 30_000);
  await page.getByTestId('path-header').waitFor({ timeout: 30_000 });
  await tab('Heads').click();
  assert.equal(new URL(page.url()).searchParams.get('view'), null);
  await page.goto(server.url + '/?view=nowhere#/explorer');
  await eventually(async () => assert.match(await page.getByTestId('view-notice').textContent(), /a view “nowhere” the explorer does not have/), 30_000);
  assert.equal(await tab('Heads').getAttribute('aria-selected'), 'true');
  await page.goto(server.url + '/?view=circuit#/explorer');
  await eventually(async () => assert.equal(await tab('Circuit').getAttribute('aria-selected'), 'true'), 30_000);
});

test('the circuit view: fold LN asks for the processed weights; the head the scores pick shows its OV and QK circuits and copying score', async () => {
  const plain = (await api_post(server, '/api/model/compose', { kind: 'k' })).body;
  const edges = (await api_post(server, '/api/model/compose', { kind: 'k', threshold: 2 * plain.baseline.mean })).body.edges;
  const top = edges.reduce((a, b) => (b.score > a.score ? b : a));
  const chosen = `${top.receiver[0]}.${top.receiver[1]}`;
  const want = (await api_post(server, '/api/model/compose', { kind: 'k', fold_ln: false, circuit: chosen, top: 8 })).body.circuit;
  const panel = page.getByTestId('head-circuits');
  await eventually(async () => assert.equal(await panel.getByTestId('ov-table').locator('tbody tr').count(), want.ov_top.length), 30_000);
  assert.equal(await panel.getByRole('combobox', { name: 'Head' }).inputValue(), chosen);
  assert.deepEqual(await panel.getByTestId('ov-table').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.value))), want.ov_top.map((p) => p.value));
  assert.deepEqual(await panel.getByTestId('qk-table').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.value))), want.qk_top.map((p) => p.value));
  const words =
    want.copying_score >= 0.7
      ? want.ov_self_top1 >= 0.5
        ? 'copies'
        : 'has mostly positive eigenvalues'
      : want.copying_score <= -0.7
        ? 'suppresses what it reads'
        : 'neither clearly copies nor suppresses';
  assert.match(await page.getByTestId('copying-summary').textContent(), new RegExp(`^Head ${chosen.replace('.', '\\.')}’s OV circuit ${words}: copying score ${want.copying_score.toFixed(4)}`));
  if (!process.env.HEADLAB_MODEL) {
    assert.equal(chosen, '1.2', 'the built-in model: the strongest K-composition feeds the induction head');
    assert.ok(want.copying_score > 0.9, 'its OV eigenvalues are those of a copying head');
  }
  await screenshot(page, '94-research-head-circuits');
  // another head, from the drawing
  await page.locator('[data-testid="circuit-head"][data-head="0.3"]').click();
  const prev = (await api_post(server, '/api/model/compose', { kind: 'k', fold_ln: false, circuit: '0.3', top: 8 })).body.circuit;
  await eventually(async () => assert.match(await page.getByTestId('copying-summary').textContent(), new RegExp(`copying score ${prev.copying_score.toFixed(4)}`)), 30_000);
  // fold LN: the scores and baseline of the processed weights
  await page.getByRole('checkbox', { name: /^Fold LN/ }).check();
  const folded = (await api_post(server, '/api/model/compose', { kind: 'k', fold_ln: true })).body;
  assert.equal(folded.weights, 'fold_ln');
  await eventually(async () => assert.match(await page.getByTestId('circuit-baseline').textContent(), new RegExp(`Random baseline: ${folded.baseline.mean.toFixed(4)} [\\s\\S]*on the folded weights`)), 30_000);
  const drawn = (await page.getByTestId('circuit-edge').evaluateAll((gs) => gs.map((g) => `${g.dataset.sender}>${g.dataset.receiver}`))).sort();
  assert.deepEqual(drawn, pairs_above(folded, 2 * folded.baseline.mean));
  await page.getByRole('checkbox', { name: /^Fold LN/ }).uncheck();
});

test('a sweep over the server’s work limit: the refusal in its own words, and the narrower sweeps it offers; one runs', async () => {
  await tab('Patching').click();
  // a batch of two pairs of LONG copies of the story, every head's every input by position:
  // measured 1.2e11 multiply-adds on the built-in model, past the server's 1e11
  const long_clean = Array(LONG).fill(CLEAN).join('');
  const long_corrupted = Array(LONG - 1).fill(CLEAN).join('') + CORRUPTED;
  const pair = { clean: long_clean, corrupted: long_corrupted, answer: PATCH.answer, wrong: PATCH.wrong };
  const body = { prompts: [pair, pair], what: 'attn_head_by_pos_every', metric: PATCH.metric, noising: false };
  const refused = await api_post(server, '/api/model/patch', body);
  if (refused.status === 200) return; // a model (HEADLAB_MODEL) this sweep does not take past the limit
  assert.equal(refused.status, 413, JSON.stringify(refused.body).slice(0, 300));
  await page.getByRole('textbox', { name: 'Clean prompt' }).fill(`${long_clean}\n${long_clean}`);
  await page.getByRole('textbox', { name: 'Corrupted prompt' }).fill(`${long_corrupted}\n${long_corrupted}`);
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('attn_head_by_pos_every');
  await page.getByRole('button', { name: 'Run patching' }).click();
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').textContent(), refused.body.error.message), 30_000);
  // the offers are the server's, in the refusal's envelope (each priced by its own cost function),
  // shown as it gave them: the last positions that fit among them, and each head over all positions
  const { limit, narrowings } = refused.body.error;
  const T = (await api_post(server, '/api/model/run', { text: long_clean, heads: [[0, 0]], window: { queries: [0, 1], keys: [0, 1] }, top_k: 1 })).body.tokens.length;
  const offers = page.getByTestId('patch-narrow').getByRole('button');
  await eventually(async () => assert.deepEqual((await offers.allTextContents()).map((t) => t.trim()), narrowings.map((n) => `Run ${n.label}`)));
  const by_positions = narrowings.find((n) => n.positions && !n.layers);
  assert.ok(by_positions, JSON.stringify(narrowings));
  const kp = by_positions.positions.length;
  assert.deepEqual(by_positions.positions, Array.from({ length: kp }, (_, i) => T - kp + i), 'the last positions');
  assert.equal(by_positions.label, `positions ${T - kp}–${T - 1} only (the last ${kp} of ${T})`);
  assert.ok(narrowings.some((n) => n.what === 'attn_head_all_pos_every' && n.label === 'attn_head_all_pos_every instead: each head over all positions at once'));
  await offers.filter({ hasText: /^Run positions/ }).click();
  const positions = by_positions.positions;
  const narrowed = await patch({ ...body, positions });
  assert.ok(narrowed.cost.multiply_adds <= limit);
  assert.equal(narrowed.cost.multiply_adds, by_positions.cost, 'the cost the offer gave');
  assert.equal(await page.getByRole('textbox', { name: 'Positions' }).inputValue(), `${T - kp}–${T - 1}`);
  await eventually(async () => assert.equal(await heatmap_cells().count(), flat(narrowed.values).length), 30_000);
  // (patch_type, layer, pos, head) is drawn as rows of heads by columns of positions: the same values
  const by_value = (a, b) => a - b;
  assert.deepEqual((await heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)))).sort(by_value), flat(narrowed.values).sort(by_value));
  assert.match(await page.getByTestId('patch-header').textContent(), /2 pairs/);
  await page.getByRole('textbox', { name: 'Positions' }).fill('');
  await page.getByRole('textbox', { name: 'Clean prompt' }).fill(CLEAN);
  await page.getByRole('textbox', { name: 'Corrupted prompt' }).fill(CORRUPTED);
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('resid_pre');
});

test('a comparison over the work limit keeps the estimates drawn, says activation patching was refused, and its narrowing runs both', async () => {
  const long_clean = Array(LONG).fill(CLEAN).join('');
  const long_corrupted = Array(LONG - 1).fill(CLEAN).join('') + CORRUPTED;
  const pair = { clean: long_clean, corrupted: long_corrupted, answer: PATCH.answer, wrong: PATCH.wrong };
  const body = { prompts: [pair, pair], what: 'attn_head_by_pos_every', metric: PATCH.metric, noising: false };
  const refused = await api_post(server, '/api/model/patch', body);
  if (refused.status === 200) return; // a model (HEADLAB_MODEL) this sweep does not take past the limit
  const estimated = await patch({ ...body, method: 'attribution' }); // the same sweep, estimated: 4 forwards' work
  await page.getByRole('textbox', { name: 'Clean prompt' }).fill(`${long_clean}\n${long_clean}`);
  await page.getByRole('textbox', { name: 'Corrupted prompt' }).fill(`${long_corrupted}\n${long_corrupted}`);
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('attn_head_by_pos_every');
  await method_box().selectOption('attribution');
  await page.getByRole('button', { name: 'Compare with activation patching' }).click();
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').textContent(), `Activation patching, for the comparison: ${refused.body.error.message}`), 30_000);
  await eventually(async () => assert.equal(await heatmap_cells().count(), flat(estimated.values).length));
  const offer = page.getByTestId('patch-narrow').getByRole('button').filter({ hasText: /^Run positions/ });
  await offer.click();
  const positions = (await page.getByRole('textbox', { name: 'Positions' }).inputValue()).split('–').map(Number);
  const narrowed = { ...body, positions: Array.from({ length: positions[1] - positions[0] + 1 }, (_, i) => positions[0] + i) };
  const [a, b] = [flat((await patch(narrowed)).values), flat((await patch({ ...narrowed, method: 'attribution' })).values)];
  await eventually(async () => assert.ok(Math.abs(Number(await page.getByTestId('compare-correlation').getAttribute('data-correlation')) - pearson(a, b)) < 1e-9), 60_000);
  assert.equal(await page.getByTestId('patch-error').count(), 0);
  await method_box().selectOption('activation');
  await page.getByRole('textbox', { name: 'Positions' }).fill('');
  await page.getByRole('textbox', { name: 'Clean prompt' }).fill(CLEAN);
  await page.getByRole('textbox', { name: 'Corrupted prompt' }).fill(CORRUPTED);
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('resid_pre');
});

test('the research views have no WCAG A/AA violations; the tabs answer the arrow keys', async () => {
  await tab('Patching').click();
  await page.getByRole('button', { name: 'Run patching' }).click();
  await eventually(async () => assert.ok((await heatmap_cells().count()) > 0), 30_000);
  assert.deepEqual(await violations(), [], 'patching');
  await tab('Patching').focus();
  await page.keyboard.press('ArrowRight');
  assert.equal(await tab('Path patching').getAttribute('aria-selected'), 'true');
  await page.getByTestId('path-header').waitFor({ timeout: 30_000 });
  assert.deepEqual(await violations(), [], 'path patching');
  await page.keyboard.press('ArrowRight');
  assert.equal(await tab('Logit lens').getAttribute('aria-selected'), 'true');
  await page.getByTestId('lens-table').waitFor();
  assert.deepEqual(await violations(), [], 'lens');
  await page.keyboard.press('ArrowRight');
  assert.equal(await tab('Circuit').getAttribute('aria-selected'), 'true');
  await page.getByTestId('circuit-table').waitFor();
  assert.deepEqual(await violations(), [], 'circuit');
});

test('the heads view is still there, and the page logged no errors', async () => {
  await tab('Heads').click();
  await eventually(async () => assert.equal(await page.locator('.explorer__thumb').count(), model.config.n_layer * model.config.n_head), 30_000);
  assert.deepEqual(problems.filter((p) => !/status of (400|413)/.test(p)), [], 'no errors but the 400s and the 413 the tests asked for');
});
