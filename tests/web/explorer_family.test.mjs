// The explorer says which family runs and how its block is built (GET /api/model's
// config.family and config.block): on a Gemma 3 (multi-query attention, sliding layers,
// (1 + w) norms, GeGLU) and a Llama 3 (grouped-query attention: query head h reads KV head
// h / 2), the random models of tests/fixtures/gguf/ served with `headlab serve --model`. Every
// number on the page is checked against the API's; the summary stays readable at 360 px.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { api_get, artifacts_dir, eventually, open_browser, repo_root, screenshot, start_server, temp_dir, watch_console } from './harness.mjs';

const HELDOUT = 'The committee met on a grey morning to read the report. Nobody had read it before the meeting, so the chair read it aloud, page by page, while the others took notes.\n';

// A copy of a fixture model with the scanner's heldout.txt beside it.
function family_model(name) {
  const dir = path.join(temp_dir('headlab-family-'), name);
  fs.cpSync(path.join(repo_root, 'tests', 'fixtures', 'gguf', name), dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'heldout.txt'), HELDOUT);
  return dir;
}

const opened = [];
after(async () => {
  for (const o of opened) await o.close();
});

async function explorer_on(name, width) {
  const server = await start_server({ db: path.join(temp_dir('headlab-web-db-'), 'p.db'), model: family_model(name) });
  const browser = await open_browser({ width, height: 900 });
  opened.push({ close: async () => { await browser.close(); await server.stop(); } });
  const page = await browser.newPage();
  const problems = watch_console(page);
  // a short text: these models read at most 32 tokens, fewer than the explorer's default text
  await page.goto(server.url + '/?text=' + encodeURIComponent('the hat, the hat in') + '#/explorer');
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
  const model = (await api_get(server, '/api/model')).body;
  return { server, page, problems, model };
}

const line = (page, label) => page.getByTestId(`explorer-block-${label}`);

test('a Gemma 3 shows its family, one KV head for every query head and which layers slide', async () => {
  const { page, problems, model } = await explorer_on('gemma3_random', 1280);
  const b = model.config.block;
  assert.equal(model.config.family, 'gemma3');
  await eventually(async () => assert.equal(await line(page, 'family').textContent(), 'Gemma 3'));
  assert.equal(
    await line(page, 'attention').textContent(),
    `multi-query: all ${model.config.n_head} query heads read one KV head; scores × ${Number(b.attention_scale.toPrecision(4))}`,
  );
  assert.match(await line(page, 'norm').textContent(), /^RMSNorm × \(1 \+ w\), before and after attention and MLP, and on each head’s q and k$/);
  assert.match(await line(page, 'mlp').textContent(), new RegExp(`^GeGLU: .*, ${b.d_mlp} wide$`));
  assert.equal(b.rope_scaling, 'linear');
  assert.equal(
    await line(page, 'positions').textContent(),
    `rotary (RoPE) on all ${b.head_size} channels of q and k, base θ = ${b.rope_theta.toLocaleString('en-US')}, positions ÷ ${b.rope_scaling_factor}; ` +
      `sliding layers: base ${b.rope_local_theta.toLocaleString('en-US')}, unscaled`,
  );
  // the windows the API reports, layer by layer: [w, w, 0] reads "layers 0–1 see the last w tokens; layer 2 sees every earlier token"
  const w = b.window[0];
  assert.deepEqual(b.window, [w, w, 0]);
  assert.equal(await line(page, 'windows').textContent(), `layers 0–1 see the last ${w} tokens, itself included; layer 2 sees every earlier token`);
  assert.deepEqual(problems, []);
  await screenshot(page, '71-explorer-gemma3-block');
});

test('a Llama 3 with grouped-query attention says which KV head each query head reads', async () => {
  const { page, problems, model } = await explorer_on('llama3_random', 1280);
  const { n_head } = model.config;
  const kv = model.config.block.n_kv_head;
  assert.ok(kv > 1 && kv < n_head, 'the fixture has grouped-query attention');
  await eventually(async () => assert.equal(await line(page, 'family').textContent(), 'Llama'));
  assert.match(
    await line(page, 'attention').textContent(),
    new RegExp(`^grouped-query: ${n_head} query heads share ${kv} KV heads; query head h reads KV head ⌊h / ${n_head / kv}⌋`),
  );
  assert.equal(await line(page, 'windows').textContent(), 'every layer sees every earlier token');
  assert.match(await line(page, 'mlp').textContent(), /^SwiGLU/);
  assert.equal(model.config.block.rope_scaling, 'llama3');
  assert.match(await line(page, 'positions').textContent(), new RegExp(`Llama 3 scaling \\(slow frequencies ÷ ${model.config.block.rope_scaling_factor}\\)$`));
  assert.deepEqual(problems, []);
});

test('the block summary fits a 360 px screen without scrolling sideways', async () => {
  const { page } = await explorer_on('gemma3_random', 360);
  const summary = page.getByTestId('explorer-block');
  await summary.waitFor();
  const fits = await summary.evaluate((el) => el.scrollWidth <= el.clientWidth && el.getBoundingClientRect().right <= window.innerWidth);
  assert.ok(fits, 'the summary is no wider than the screen');
  await screenshot(page, '72-explorer-block-360px');
  fs.mkdirSync(artifacts_dir, { recursive: true });
  await summary.screenshot({ path: path.join(artifacts_dir, '73-explorer-block-summary-360px.png') });
});
