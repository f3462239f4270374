// A learner works through "What trained heads learn" on whatever model the server loads:
// every head the page names and every number it shows is compared with what the test
// itself asks the server for the same model, so the test holds for any trained model.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_get, api_post, click_to_redraw, eventually, open_page, screenshot, test_model } from './harness.mjs';
import { induction_share, intervene, labelled, mean, pct, pick, repeated, run, run_compact_patterns, scan_report, second_copy_start, signed } from './model_api.mjs';

const READING_SENTENCE = 'the cat sat on the mat';
let server, browser, page, problems, model, scan, close;

const part = (n) => page.locator('section', { has: page.getByRole('heading', { level: 2, name: new RegExp(`^Part ${n} `) }) });
const challenge = (id) => page.locator(`li[data-challenge="${id}"]`);
const verdict = (section) => section.locator('[data-correct]');
const fixed2 = (w) => w.toFixed(2);
const fmt = (x, d = 2) => x.toFixed(d);

/** The values a WeightsGrid table shows, row by row ("masked" above the diagonal). */
async function table_values(table) {
  return table.locator('tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.querySelector('.sr-only')?.textContent ?? '').trim())),
  );
}
const expected_table = (rows) => rows.map((row) => rows.map((_, k) => (k < row.length ? fixed2(row[k]) : 'masked')));

before(async () => {
  ({ server, browser, page, problems, close } = await open_page({ route: '/#/lessons/trained-heads', model: test_model() }));
  const m = await api_get(server, '/api/model');
  assert.equal(m.status, 200, 'these tests need a server with a model: ' + JSON.stringify(m.body));
  model = m.body;
  scan = await scan_report(server);
  await part(1).getByRole('table').waitFor({ timeout: 60_000 });
});

after(() => close?.());

test('Part 1 names the scanner’s previous-token head and shows its real weights on the cat sentence', async () => {
  const prev = pick(scan, 'previous_token');
  const p1 = part(1);
  const names_head = labelled(scan, 'previous_token').length > 0 ? `This is head ${prev.name} of the model` : `Head ${prev.name} comes closest`;
  assert.ok((await p1.textContent()).includes(names_head), names_head);
  assert.match(await page.getByTestId('model-name').textContent(), new RegExp(model.name));
  const answer = await run(server, { text: READING_SENTENCE, heads: [[prev.layer, prev.head]], views: ['pattern'] });
  const rows = answer.heads[0].pattern;
  assert.deepEqual(await table_values(p1.getByRole('table')), expected_table(rows));

  // Read row by row: each step quotes the weight on the token before, as the server computed it.
  const step = page.getByTestId('reading-step');
  for (let q = 1; q < rows.length; ++q) {
    await eventually(async () => assert.match(await step.textContent(), new RegExp(`gives ${pct(rows[q][q - 1])} of its weight`)));
    const highlighted = p1.locator('tbody tr[aria-current="true"] th');
    assert.match(await highlighted.textContent(), new RegExp(`^\\s*${q}\\s`));
    if (q === 1) {
      const ms = await click_to_redraw(p1, 'Next row', step);
      console.log(`# lesson 2: a click on "Next row" to the redrawn step: ${ms.toFixed(1)} ms`);
    } else if (q < rows.length - 1) await p1.getByRole('button', { name: 'Next row' }).click();
  }
  const stripe = mean(rows.slice(1).map((row, i) => row[i]));
  assert.match(await page.getByTestId('reading-stripe').textContent(), new RegExp(`gives ${pct(stripe)} of a row`));
  await screenshot(page, '50-trained-heads-part1');
});

test('the quiz: a wrong answer is marked wrong with a reason, the right one right, and the answer can be shown', async () => {
  const p1 = part(1);
  await p1.getByRole('radio', { name: /Along the diagonal/ }).check();
  await p1.getByRole('button', { name: 'Check my answer' }).click();
  await eventually(async () => assert.equal(await verdict(p1).getAttribute('data-correct'), 'false'));
  assert.ok((await verdict(p1).textContent()).length > 20, 'the server says why');
  assert.match(await challenge('pattern-quiz').textContent(), /Not yet/);

  await p1.getByRole('radio', { name: /Just below the diagonal/ }).check();
  await p1.getByRole('button', { name: 'Check my answer' }).click();
  await eventually(async () => assert.equal(await verdict(p1).getAttribute('data-correct'), 'true'));
  await eventually(async () => assert.match(await challenge('pattern-quiz').textContent(), /Done/));

  await p1.getByRole('button', { name: 'Show the answer' }).click();
  assert.match(await page.getByTestId('quiz-answer').textContent(), /below the diagonal/i);
});

test('Part 2: repeat a text, the loss falls on the second copy as the server measures it, and find the induction head', async (t) => {
  const p2 = part(2);
  const text = 'the old mill stood by the river where the green door was';
  await p2.getByRole('textbox', { name: 'Your text' }).fill(text);
  await p2.getByRole('button', { name: 'Repeat it' }).click();
  const answer = await run(server, { text: repeated(text), views: ['pattern'], heads: [[0, 0]] });
  const split = second_copy_start(answer.tokens);
  assert.notEqual(split, null, 'the repeat tokenises into two equal copies');
  const first = mean(answer.token_loss.slice(1, split - 1));
  const second = mean(answer.token_loss.slice(split, answer.tokens.length - 1));
  await eventually(async () =>
    assert.match(await page.getByTestId('copy-losses').textContent(), new RegExp(`first copy: ${fmt(first)}\\. On the second copy: ${fmt(second)}\\.`)),
  );

  const induction = pick(scan, 'induction');
  await p2.getByRole('button', { name: `head ${induction.name}`, exact: true }).click();
  const figure = p2.locator(`[data-figure="Head ${induction.name} on your text"]`);
  await figure.waitFor();
  const shown = await run(server, { text: repeated(text), heads: [[induction.layer, induction.head]], views: ['pattern'] });
  // The page asks for the compact answer (uint16 probabilities): its table is that answer's, rounded.
  const [compact] = await run_compact_patterns(server, { text: repeated(text), heads: [[induction.layer, induction.head]], views: ['pattern'] });
  assert.deepEqual(await table_values(figure.getByRole('table')), expected_table(compact));
  await p2.getByRole('button', { name: `Is this the induction head? (${induction.name})` }).click();
  // The server measures the head on this very text; the test measures it from the same run.
  const share = induction_share(shown.tokens.map((t) => t.id), shown.heads[0].pattern);
  t.diagnostic(`head ${induction.name} on the learner's text: ${share.n} repeated tokens, ${pct(share.mass)} on the token after the earlier copy`);
  const met = share.met;
  await eventually(async () => assert.equal(await verdict(p2).getAttribute('data-correct'), String(met)));
  assert.match(await verdict(p2).textContent(), new RegExp(`${share.n} tokens sit in a repeated span\\. On them head ${induction.name.replace('.', '\\.')} gives on average ${pct(share.mass)}`));
  if (met) await eventually(async () => assert.match(await challenge('find-induction').textContent(), /Done/));
  await screenshot(page, '51-trained-heads-part2');
});

test('Part 2 plots the training log the server holds (loss and induction score against step)', async (t) => {
  if (!model.has_training_log) {
    assert.match(await part(2).textContent(), /without a training log/);
    t.diagnostic('this model has no training log');
    return;
  }
  const log = (await api_get(server, '/api/model/training-log')).body;
  const col = (name) => log.columns.indexOf(name);
  for (const [title, name] of [
    ['Training loss against step', 'loss'],
    ['Best induction score against step', 'induction'],
  ]) {
    const [download] = await Promise.all([page.waitForEvent('download'), part(2).getByRole('button', { name: `Save ${title} as JSON` }).click()]);
    const saved = JSON.parse(fs.readFileSync(await download.path(), 'utf8'));
    const want = log.rows.filter((r) => r[col(name)] !== null && r[col(name)] !== undefined).map((r) => [r[col('step')], r[col(name)]]);
    assert.deepEqual(saved.series[0].points, want, `${title}: every point is a row of the log`);
  }
});

test('Part 3: a head’s first-token share, raw and value-weighted, and the two interventions match the server', async (t) => {
  const p3 = part(3);
  const sinks = labelled(scan, 'sink');
  t.diagnostic(sinks.length ? `sink heads: ${sinks.map((h) => h.name).join(', ')}` : 'no head is labelled sink');
  const said = await page.getByTestId('sink-heads').textContent();
  assert.match(said, /held-out text \(\d+ tokens\), not from yours/);
  assert.match(said, sinks.length ? new RegExp(sinks.map((h) => h.name.replace('.', '\\.')).join(', ')) : /labels no head/);
  for (const h of labelled(scan, 'first_token')) assert.ok(said.includes(h.name), `first-token head ${h.name} is named`);
  const first = labelled(scan, 'first_token');
  const head = sinks[0] ?? first[0] ?? pick(scan, 'first_token');
  await p3.getByRole('button', { name: `head ${head.name}`, exact: true }).click();
  const text = await p3.getByRole('textbox', { name: 'Text' }).inputValue();
  const answer = await run(server, { text, heads: [[head.layer, head.head]], views: ['pattern', 'value_weighted'] });
  // rows from the third token on: before it the first token is also the previous one
  const raw = mean(answer.heads[0].pattern.slice(2).map((r) => r[0]));
  const weighted = mean(answer.heads[0].value_weighted.slice(2).map((r) => r[0]));
  await eventually(async () =>
    assert.match(
      await page.getByTestId('first-token-share').textContent(),
      new RegExp(`On “${text}”, head ${head.name.replace('.', '\\.')} gives the first token ${pct(raw)} of its rows’ weight in the attention weights, ${pct(weighted)} once`),
    ),
  );

  await p3.getByRole('button', { name: `Compare the two interventions (head ${head.name})` }).click();
  const blocked = await intervene(server, { text, block: [{ layer: head.layer, head: head.head, key: 0 }] });
  const zeroed = await intervene(server, { text, ablate: [{ layer: head.layer, head: head.head, kind: 'zero' }] });
  const table = page.getByTestId('sink-losses');
  await table.waitFor();
  const cells = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
  const dz = zeroed.intervened.loss - zeroed.baseline.loss;
  const db_ = blocked.intervened.loss - blocked.baseline.loss;
  assert.deepEqual(cells, [
    [fmt(blocked.baseline.loss, 3), ''],
    [fmt(zeroed.intervened.loss, 3), signed(dz)],
    [fmt(blocked.intervened.loss, 3), signed(db_)],
  ]);
  // The sentence under the table reads the same two numbers and names the text.
  const reading = await page.getByTestId('sink-reading').textContent();
  assert.ok(reading.includes(`“${text}”`), reading);
  const abs3 = (x) => Math.abs(x).toFixed(3);
  assert.ok(reading.includes(abs3(dz)) && reading.includes(abs3(db_)), reading);
  if (Math.abs(dz) >= 0.01 || Math.abs(db_) >= 0.01)
    assert.match(reading, Math.abs(db_) > Math.abs(dz) ? /^.*Blocking the first token changes the loss more/ : /Zeroing the whole head changes the loss more/);

  // The check quotes the same shares, and is right only with the right word for the head.
  const kind = weighted < 0.5 * raw ? 'sink' : 'reads-first';
  const check_button = p3.getByRole('button', { name: `Check my answer (${head.name})` });
  assert.equal(await check_button.isDisabled(), true, 'no answer picked: nothing to check');
  await p3.getByRole('radio', { name: kind === 'sink' ? /^a head that reads/ : /^a sink/ }).check();
  await check_button.click();
  await eventually(async () => assert.equal(await verdict(p3).getAttribute('data-correct'), 'false'));
  assert.match(await verdict(p3).textContent(), new RegExp(`head ${head.name.replace('.', '\\.')} gives ${pct(raw)} of its rows’ attention to the first token, and ${pct(weighted)} once`));
  // The wrong choice's verdict said what the head is (when it gives the first token half its
  // attention): the right one on the same head is explained but earns nothing, here or on
  // another text (the server keeps the first choice on a head).
  await p3.getByRole('radio', { name: kind === 'sink' ? /^a sink/ : /^a head that reads/ }).check();
  await check_button.click();
  if (raw >= 0.5) await eventually(async () => assert.match(await verdict(p3).textContent(), /only the first answer on a head counts/));
  assert.equal(await verdict(p3).getAttribute('data-correct'), 'false');
  // On another text: the head is spent if the first verdict said what it is.
  const text2 = text + ' and then the year ended';
  await p3.getByRole('textbox', { name: 'Text' }).fill(text2);
  await p3.getByRole('button', { name: 'Run' }).click();
  const answer2 = await run(server, { text: text2, heads: [[head.layer, head.head]], views: ['pattern', 'value_weighted'] });
  const raw2 = mean(answer2.heads[0].pattern.slice(2).map((r) => r[0]));
  const weighted2 = mean(answer2.heads[0].value_weighted.slice(2).map((r) => r[0]));
  await eventually(async () => assert.match(await page.getByTestId('first-token-share').textContent(), new RegExp(`${pct(raw2)} of its rows’ weight`)));
  await p3.getByRole('radio', { name: weighted2 < 0.5 * raw2 ? /^a sink/ : /^a head that reads/ }).check();
  await check_button.click();
  await eventually(async () => assert.match(await verdict(p3).textContent(), new RegExp(`${pct(raw2)} of its rows’ attention`)));
  assert.equal(await verdict(p3).getAttribute('data-correct'), String(raw2 >= 0.5 && raw < 0.5));
  if (raw >= 0.5 && raw2 >= 0.5) assert.match(await verdict(p3).textContent(), /only the first answer on a head counts/);
  await screenshot(page, '52-trained-heads-part3');
});

test('Part 3: when the model has no sink, a lesson model’s sink is shown on the learner’s text with the server’s numbers', async (t) => {
  const p3 = part(3);
  if (labelled(scan, 'sink').length > 0) {
    assert.equal(await page.getByTestId('other-sink').count(), 0, 'the model has its own sink: no other is shown');
    return;
  }
  const models = (await api_get(server, '/api/positions/models')).body.models;
  const m = models.find((x) => x.available && x.sinks && x.sinks.length > 0);
  const box = page.getByTestId('other-sink');
  await box.waitFor();
  if (!m) {
    assert.match(await box.textContent(), /None of the lesson models/);
    return;
  }
  const sink = m.sinks[0];
  const name = `${sink.layer}.${sink.head}`;
  t.diagnostic(`${m.name} head ${name}: first token ${sink.first_token}, value-weighted ${sink.value_weighted}`);
  assert.ok(sink.value_weighted < 0.5 * sink.first_token, 'the scanner’s sink rule');
  const said = await box.textContent();
  assert.ok(said.includes(`here is one from ${m.name}`), said);
  assert.ok(said.includes(`labels head ${name} a sink: it gives the first token ${pct(sink.first_token)} of its weight, ${pct(sink.value_weighted)} once`), said);
  const text = await p3.getByRole('textbox', { name: 'Text' }).inputValue();
  const r = (await api_post(server, '/api/positions/run', { model: m.name, text, layer: sink.layer, head: sink.head })).body;
  // the server's numbers are the rows' means from the third token on, as the find-sink check's
  assert.ok(Math.abs(r.first_token.attention - mean(r.pattern.slice(2).map((row) => row[0]))) < 1e-4);
  assert.ok(Math.abs(r.first_token.value_weighted - mean(r.value_weighted.slice(2).map((row) => row[0]))) < 1e-4);
  const reading = page.getByTestId('other-sink-reading');
  await eventually(async () =>
    assert.ok((await reading.textContent()).includes(`head ${name} gives the first token ${pct(r.first_token.attention)} of its rows’ weight and ${pct(r.first_token.value_weighted)} once`)),
  );
  assert.match(await reading.textContent(), r.first_token.parks ? /here too it parks its weight there/ : /on this text it does fetch something/);
  assert.equal(await box.getByRole('table').count(), 2, 'attention weights and value-weighted rows');
});

test('Part 4: zeroing a head changes the loss exactly as the server computes, and the head that matters most passes', async () => {
  const p4 = part(4);
  const text = await p4.getByRole('textbox', { name: 'Text for this part' }).inputValue();
  const head = pick(scan, 'induction');
  await p4.getByRole('group', { name: 'Head to zero' }).getByRole('button', { name: `head ${head.name}`, exact: true }).click();
  const one = await intervene(server, { text, ablate: [{ layer: head.layer, head: head.head, kind: 'zero' }] });
  await eventually(async () =>
    assert.equal(
      (await page.getByTestId('ablation-loss').textContent()).replace(/\s+/g, ' ').trim(),
      `Zeroing head ${head.name}: Loss ${fmt(one.baseline.loss, 3)} → ${fmt(one.intervened.loss, 3)} (${signed(one.intervened.loss - one.baseline.loss)}).`,
    ),
  );
  assert.notEqual(one.intervened.loss, one.baseline.loss, 'zeroing a head changes the loss');
  // The sentence under it is chosen by the change as shown (three decimals).
  const one_delta = Number((one.intervened.loss - one.baseline.loss).toFixed(3));
  const reading = await page.getByTestId('ablation-reading').textContent();
  if (one_delta < 0) assert.match(reading, /The loss went down: the model predicts this text slightly better without head/);
  else if (one_delta > 0) assert.match(reading, /The loss went up: on this text the model uses what head/);
  else assert.match(reading, /To three decimals the loss does not move/);

  await p4.getByRole('button', { name: 'Measure every head' }).click();
  const table = page.getByTestId('ablation-all');
  await table.waitFor({ timeout: 60_000 });
  const shown = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.querySelector('th').textContent.trim(), tr.querySelector('td').textContent.trim()]));
  const want = [];
  for (let layer = 0; layer < model.config.n_layer; ++layer)
    for (let h = 0; h < model.config.n_head; ++h) {
      const r = await intervene(server, { text, ablate: [{ layer, head: h, kind: 'zero' }] });
      want.push([`${layer}.${h}`, r.intervened.loss - r.baseline.loss]);
    }
  want.sort((a, b) => b[1] - a[1]);
  assert.deepEqual(shown, want.map(([n, d]) => [n, signed(d)]));
  // The sentence under the table interprets the sweep from its numbers: how many heads lower
  // the loss when zeroed, and where the scanner's induction heads rank.
  const all_reading = (await page.getByTestId('ablation-all-reading').textContent()).replace(/\s+/g, ' ');
  assert.ok(all_reading.includes(`Zeroing head ${want[0][0]} costs the most here`), all_reading);
  const lower = want.filter(([, d]) => Number(d.toFixed(3)) < 0).length;
  if (lower === 0) assert.doesNotMatch(all_reading, /lowers? the loss when zeroed/);
  else assert.ok(all_reading.includes(lower === 1 ? 'One head lowers the loss when zeroed' : `${lower} heads lower the loss when zeroed`), all_reading);
  const induction = labelled(scan, 'induction').map((h) => h.name);
  if (induction.length === 0) assert.match(all_reading, /labels no head of this model induction/);
  else {
    // The best-ranked of them is named first.
    const rank = Math.min(...induction.map((name) => want.findIndex(([n]) => n === name) + 1));
    const name = want[rank - 1][0];
    assert.ok(all_reading.includes(rank === 1 ? `The induction head ${name} is the one the model needs most` : `The induction head ${name} ranks ${rank} of ${want.length}`), all_reading);
  }

  // The head whose removal hurts most meets "ablation-matters".
  await table.getByRole('button', { name: want[0][0], exact: true }).click();
  await p4.getByRole('button', { name: `Does this head matter here? (${want[0][0]})` }).click();
  await eventually(async () => assert.equal(await verdict(p4).getAttribute('data-correct'), 'true'));
  await eventually(async () => assert.match(await challenge('ablation-matters').textContent(), /Done/));
  await screenshot(page, '53-trained-heads-part4');
});

test('Part 4: raw, value-weighted and rollout rows for one query are the server’s', async () => {
  const p4 = part(4);
  const text = await p4.getByRole('textbox', { name: 'Text for this part' }).inputValue();
  await p4.getByRole('group', { name: 'Head for the three views' }).getByRole('button', { name: 'head 0.1', exact: true }).click();
  const answer = await run(server, { text, heads: [[0, 1]], views: ['pattern', 'value_weighted'], rollout: true });
  const q = answer.tokens.length - 1;
  const rows = page.getByTestId('three-views').locator('ol');
  const values = (i) => rows.nth(i).locator('.weights-row__cell').allTextContents();
  // All three inside one wait: on a barely trained model two heads' raw rows can agree to two decimals.
  await eventually(async () => {
    assert.match(await page.getByTestId('three-views').locator('h4').first().textContent(), /head 0\.1$/);
    assert.deepEqual(await values(0), answer.heads[0].pattern[q].map(fixed2));
    assert.deepEqual(await values(1), answer.heads[0].value_weighted[q].map(fixed2));
    assert.deepEqual(await values(2), answer.rollout[q].map(fixed2));
  });
  assert.match(await part(4).textContent(), /Jain & Wallace 2019.*Wiegreffe & Pinter 2019.*Kobayashi et al\. 2020.*Abnar & Zuidema 2020.*Olsson et al\. 2022.*Xiao et al\. 2023/s);
});

test('Part 4: the look-alike heads are the closest pair the server’s patterns give, with the server’s loss changes', async () => {
  const text = await part(4).getByRole('textbox', { name: 'Text for this part' }).inputValue();
  const all = await run(server, { text, views: ['pattern'] });
  let best = null;
  for (const a of all.heads)
    for (const b of all.heads) {
      if (a.layer !== b.layer || a.head >= b.head) continue;
      let sum = 0;
      let n = 0;
      a.pattern.forEach((row, q) => row.forEach((w, k) => ((sum += Math.abs(w - b.pattern[q][k])), (n += 1))));
      if (!best || sum / n < best.d) best = { a, b, d: sum / n };
    }
  const box = page.getByTestId('look-alikes');
  await eventually(async () => assert.equal(await box.locator('h4').count(), 2));
  assert.deepEqual(await box.locator('h4').allTextContents(), [`Head ${best.a.layer}.${best.a.head}`, `Head ${best.b.layer}.${best.b.head}`]);
  for (const [i, h] of [best.a, best.b].entries()) {
    const r = await intervene(server, { text, ablate: [{ layer: h.layer, head: h.head, kind: 'zero' }] });
    const d = r.intervened.loss - r.baseline.loss;
    await eventually(async () => assert.match(await box.locator('p').nth(i).textContent(), new RegExp(`changes the loss by \\${d >= 0 ? '+' : '-'}${Math.abs(d).toFixed(3)}`)));
  }
});

test('Part 4: the next-token predictions with and without the zeroed head are the server’s', async () => {
  const p4 = part(4);
  const text = await p4.getByRole('textbox', { name: 'Text for this part' }).inputValue();
  await p4.getByRole('group', { name: 'Head to zero' }).getByRole('button', { name: 'head 0.0', exact: true }).click();
  const r = await intervene(server, { text, ablate: [{ layer: 0, head: 0, kind: 'zero' }], top_k: 5 });
  const last = r.tokens.length - 1;
  const figures = p4.locator('figure.top-predictions');
  await eventually(async () => assert.match(await figures.nth(1).locator('figcaption').textContent(), /head 0\.0 zeroed/));
  assert.deepEqual(await figures.nth(0).locator('.top-predictions__prob').allTextContents(), r.baseline.top_next[last].map((p) => pct(p.prob)));
  assert.deepEqual(await figures.nth(1).locator('.top-predictions__prob').allTextContents(), r.intervened.top_next[last].map((p) => pct(p.prob)));
});

test('progress is kept by the server and shown like the first lesson’s', async () => {
  await page.reload();
  const done = (await api_get(server, `/api/progress?learner=${await page.evaluate(() => localStorage.getItem('headlab.learner'))}&lesson=trained-heads`)).body;
  await eventually(async () =>
    assert.equal(await page.getByRole('status').filter({ hasText: /of \d+ complete/ }).textContent(), `${done.completed_count} of ${done.total} complete`),
  );
  assert.ok(done.completed_count >= 2, 'the quiz and ablation-matters at least');
});

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
