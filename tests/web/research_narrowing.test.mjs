// The explorer's narrower sweeps (issue 27, narrow.ts) as a researcher meets them, on a server
// whose patching work limit is low (--max-patch-multiply-adds) so the built-in model's own
// stories are over it: path patching from every head is refused in the server's words and
// offered the first senders that reach a receiver; attribution patching of a batch is offered
// fewer pairs. The offers are the server's own, in the refusal's envelope (docs/api.md; priced by
// research/patch_narrowing.h): the view shows each as the API gave it. Each offer is clicked, and
// what runs is the offer (the senders or pairs it named), answered by the server within its
// limit, drawn cell for cell as the API answers the narrowed request.
// tests/web/research_views.test.mjs covers activation patching's offers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_get, api_post, eventually, open_page, test_model } from './harness.mjs';

// 2.8e7 multiply-adds: the path-patching story (3.3e7 on the built-in model) is over it, some of
// its senders fit; a pair of the short story below is under 0.4 of it, so two pairs fit at least.
const LIMIT = '2.8e7';
const CLEAN = ' gray whale ink crown plum fog violin arch gray whale ink crown plum fog';
const PATH_CORRUPTED = ' gray whale ink crown plum dust violin arch gray whale ink crown plum fog';
const SHORT_CLEAN = ' ink crown plum fog violin arch ink crown plum fog';
const SHORT_CORRUPTED = ' ink crown plum fog arch violin ink crown plum fog';
const PAIRS = 5;

let server, page, problems, close, model;
before(async () => {
  ({ server, page, problems, close } = await open_page({ route: '/#/explorer', model: test_model(), args: ['--max-patch-multiply-adds', LIMIT] }));
  model = (await api_get(server, '/api/model')).body;
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
});
after(() => close?.());

const tab = (name) => page.getByRole('tablist', { name: 'Explorer views' }).getByRole('tab', { name, exact: true });
const heatmap_cells = () => page.getByTestId('patch-heatmap').locator('td[data-value]');
const shown_values = () => heatmap_cells().evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
const flat = (x) => (Array.isArray(x) ? x.flatMap(flat) : [x]);

test('path patching from every head over the limit: the refusal in the server’s words, the first senders that reach a receiver offered, and those run', async () => {
  await tab('Path patching').click();
  const L = model.config.n_layer, NH = model.config.n_head;
  const receivers = Array.from({ length: NH }, (_, h) => `${L - 1}.${h}:k`); // the view's default: the last layer's keys
  const body = { clean: CLEAN, corrupted: PATH_CORRUPTED, answer: ' viol', wrong: ' ar', metric: 'logprob', noising: true, receivers };
  const refused = await api_post(server, '/api/model/path-patch', { ...body, senders: 'all' });
  if (process.env.HEADLAB_MODEL && (refused.status === 200 || L < 2)) return; // another model's sweep may fit this limit
  assert.equal(refused.status, 413, JSON.stringify(refused.body));
  await page.getByTestId('path-senders').getByRole('button', { name: 'Every head' }).click();
  await page.getByRole('button', { name: 'Run path patching' }).click();
  await eventually(async () => assert.equal(await page.getByTestId('path-error').textContent(), refused.body.error.message), 30_000);
  // The server's offer: the first senders, in order, that reach a receiver (the last layer's reach
  // none of the last layer's keys, so they are left out) and fit its limit.
  const { limit, narrowings } = refused.body.error;
  assert.equal(limit, Number(LIMIT));
  assert.equal(narrowings.length, 1, JSON.stringify(refused.body.error));
  const kept = narrowings[0].senders;
  const k = kept.length;
  const reach = Array.from({ length: (L - 1) * NH }, (_, i) => `${Math.floor(i / NH)}.${i % NH}`);
  assert.ok(k >= 1 && k < reach.length, `the limit ${LIMIT} leaves an offer to test (${k} of ${reach.length})`);
  assert.deepEqual(kept, reach.slice(0, k), 'the first senders that reach a receiver');
  const offer = page.getByTestId('path-narrow').getByRole('button');
  const words = `Run the first ${k} of the ${reach.length} senders that reach a receiver (${kept[0]}${k > 1 ? ` … ${kept[k - 1]}` : ''})`;
  assert.equal(`Run ${narrowings[0].label}`, words);
  await eventually(async () => assert.equal((await offer.textContent()).trim(), words));
  // the server takes the narrowed request, within its limit
  const narrowed = await api_post(server, '/api/model/path-patch', { ...body, senders: kept });
  assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
  assert.ok(narrowed.body.cost.forwards < refused.body.error.message.match(/\((\d+) forwards\)/)[1]);
  assert.equal(narrowed.body.cost.multiply_adds, narrowings[0].cost, 'the cost the offer gave');
  assert.ok(narrowed.body.cost.multiply_adds <= limit);
  await offer.click();
  await eventually(async () => assert.match(await page.getByTestId('path-header').textContent(), new RegExp(`^\\s*Senders ${kept.join(', ')} → `)), 30_000);
  assert.equal(await page.getByTestId('path-error').count(), 0, 'the narrowed sweep was not refused');
  // the offer's shape: its senders are the ticked ones and the grid's only cells, the API's values
  const ticked = await page.getByTestId('path-senders').locator('input[type="checkbox"]:checked').evaluateAll((xs) => xs.map((x) => x.closest('label').querySelector('span').textContent));
  assert.deepEqual(ticked, kept);
  const ran = flat(narrowed.body.values).filter((v) => v !== null);
  assert.equal(ran.length, k);
  assert.deepEqual(await shown_values(), ran);
  assert.match(await page.getByTestId('path-header').textContent(), new RegExp(`${narrowed.body.cost.forwards} forwards`));
});

test('attribution patching of a batch over the limit: the refusal in the server’s words, only fewer pairs offered, and those run', async () => {
  await tab('Patching').click();
  const pair = { clean: SHORT_CLEAN, corrupted: SHORT_CORRUPTED, answer: ' viol', wrong: ' ar' };
  const body = { prompts: Array(PAIRS).fill(pair), what: 'resid_pre', metric: 'normalized', noising: false, method: 'attribution' };
  const refused = await api_post(server, '/api/model/patch', body);
  if (process.env.HEADLAB_MODEL && refused.status === 200) return; // another model's batch may fit this limit
  assert.equal(refused.status, 413, JSON.stringify(refused.body));
  await page.getByRole('combobox', { name: 'Method' }).selectOption('attribution');
  await page.getByRole('combobox', { name: 'Patch' }).selectOption('resid_pre');
  await page.getByRole('combobox', { name: 'Metric' }).selectOption('normalized');
  await page.getByRole('textbox', { name: 'Clean prompt' }).fill(Array(PAIRS).fill(SHORT_CLEAN).join('\n'));
  await page.getByRole('textbox', { name: 'Corrupted prompt' }).fill(Array(PAIRS).fill(SHORT_CORRUPTED).join('\n'));
  await page.getByRole('button', { name: 'Run patching' }).click();
  await eventually(async () => assert.equal(await page.getByTestId('patch-error').textContent(), refused.body.error.message), 30_000);
  // the cost is per pair whatever is swept, so the server's one offer is the most pairs that fit
  const { cost, limit, narrowings } = refused.body.error;
  assert.equal(narrowings.length, 1, JSON.stringify(refused.body.error));
  const k = narrowings[0].pairs;
  assert.equal(k, Math.min(PAIRS - 1, Math.floor((PAIRS * limit) / cost)), 'every pair costs the same: the share that fits');
  assert.ok(k >= 2, `the limit ${LIMIT} leaves a batch to test (${k} of ${PAIRS} pairs)`);
  const offers = page.getByTestId('patch-narrow').getByRole('button');
  await eventually(async () => assert.deepEqual((await offers.allTextContents()).map((t) => t.trim()), [`Run the first ${k} of the ${PAIRS} pairs`]));
  const narrowed = await api_post(server, '/api/model/patch', { ...body, prompts: body.prompts.slice(0, k) });
  assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
  assert.ok(narrowed.body.cost.multiply_adds <= limit);
  assert.equal(narrowed.body.cost.multiply_adds, narrowings[0].cost, 'the cost the offer gave');
  await offers.click();
  await eventually(async () => assert.match(await page.getByTestId('patch-header').textContent(), new RegExp(`\\b${k} pairs,`)), 30_000);
  assert.equal(await page.getByTestId('patch-error').count(), 0, 'the narrowed sweep was not refused');
  // the offer's shape: k pairs in both boxes, the estimates the API gives for them, cell for cell
  assert.equal(await page.getByRole('textbox', { name: 'Clean prompt' }).inputValue(), Array(k).fill(SHORT_CLEAN).join('\n'));
  assert.equal(await page.getByRole('textbox', { name: 'Corrupted prompt' }).inputValue(), Array(k).fill(SHORT_CORRUPTED).join('\n'));
  assert.equal(narrowed.body.method, 'attribution');
  assert.deepEqual(await shown_values(), flat(narrowed.body.values));
  assert.match(await page.getByTestId('patch-header').textContent(), new RegExp(`${narrowed.body.cost.forwards} forwards and ${k} backwards`));
});

test('the page logged no errors but the refusals the tests asked for', () => {
  assert.deepEqual(problems.filter((p) => !/status of 413/.test(p)), []);
});
