// A learner's model requests carry their learner id (X-Headlab-Learner) once they are in a
// class, and not before: the server then gives each learner of a class their own model turns
// and budget, even when the whole class reaches it through one school address (issue 25;
// server/api/learner_clients.h). The id is remembered across a reload and forgotten on leaving.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_post, eventually, open_browser, start_server, temp_dir, test_model, watch_console } from './harness.mjs';

let server, browser, page, problems, code;
const db = path.join(temp_dir('headlab-web-class-model-'), 'class.db');

before(async () => {
  server = await start_server({ db, model: test_model() });
  const made = await api_post(server, '/api/classes', { name: 'Period 3' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  code = made.body.class.code;
  browser = await open_browser();
  page = await browser.newPage();
  problems = watch_console(page);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

// The X-Headlab-Learner of the explorer's next run (null: none sent).
async function learner_header_of_a_run() {
  await page.goto(server.url + '/#/explorer');
  await page.getByRole('heading', { level: 1, name: 'Every head, on your text' }).waitFor();
  await page.getByRole('textbox', { name: 'Text' }).fill('the cat sat on the mat');
  const run = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/model/run');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  return (await run).headers()['x-headlab-learner'] ?? null;
}

test('a learner in no class sends no learner id with the model’s requests', async () => {
  await page.goto(server.url + '/');
  assert.equal(await learner_header_of_a_run(), null);
});

test('once joined, the model’s requests carry the learner id, across a reload', async () => {
  await page.goto(`${server.url}/#/join/${code}`);
  await page.getByLabel('Nickname').fill('Ada');
  await page.getByRole('button', { name: 'Join' }).click();
  await eventually(async () => assert.match(await page.getByTestId('membership').textContent(), /You are in Period 3 as Ada/));
  const id = await page.evaluate(() => localStorage.getItem('headlab.learner'));
  assert.ok(id);
  assert.equal(await learner_header_of_a_run(), id);
  await page.reload();
  assert.equal(await learner_header_of_a_run(), id);
});

test('after leaving the class the model’s requests carry no learner id again', async () => {
  await page.goto(`${server.url}/#/join/${code}`);
  await page.getByRole('button', { name: 'Leave the class' }).click();
  await page.getByLabel('Nickname').waitFor();  // the join form again: in no class
  assert.equal(await learner_header_of_a_run(), null);
  assert.deepEqual(problems, []);
});
