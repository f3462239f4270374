// Started without a model, the server answers the model routes with 503 and a message;
// the model pages say plainly that no model is loaded, and lesson 1 still works.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api_get, eventually, open_page } from './harness.mjs';

let server, page, problems, close;

before(async () => ({ server, page, problems, close } = await open_page({ no_model: true })));

after(() => close?.());

test('lesson 2 says no model is loaded, in the server’s words', async () => {
  const r = await api_get(server, '/api/model');
  assert.equal(r.status, 503);
  await page.goto(server.url + '/#/lessons/trained-heads');
  const alert = page.getByRole('alert').filter({ hasText: 'needs a trained model' });
  await eventually(async () => assert.ok((await alert.textContent()).includes(r.body.error.message)));
  assert.equal(await page.getByRole('heading', { name: /^Part 1/ }).count(), 0);
  // Progress and the course still work without a model.
  await eventually(async () => assert.match(await page.getByRole('status').filter({ hasText: /of \d+ complete/ }).textContent(), /0 of 4 complete/));
});

test('the explorer says no model is loaded', async () => {
  await page.goto(server.url + '/#/explorer');
  await eventually(async () => assert.match(await page.getByRole('alert').first().textContent(), /No model is loaded on the server/));
});

test('lesson 1 does not need a model', async () => {
  await page.goto(server.url + '/#/lessons/causal-mask');
  await eventually(async () => assert.equal(await page.getByRole('table').locator('tbody tr').count(), 10));
});

test('the pages logged nothing but the 503s of the model routes', () => {
  assert.deepEqual(problems.filter((p) => !/503/.test(p)), []);
});
