// A class in the browser: a teacher creates one and sees the code, the join link and the
// secret once; a learner joins with a nickname; the learner's checks arrive in the
// teacher's grid live (a mark in every cell, not colour alone); the CSV downloads with the
// session; the learner's browser cannot open the teacher's view; the teacher removes the
// learner and deletes the class.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_post, eventually, open_browser, screenshot, start_server, temp_dir, watch_console } from './harness.mjs';

let server, teacher_browser, learner_browser, teacher, learner, problems;
let code, join_link, learner_id;
const db = path.join(temp_dir('headlab-web-class-'), 'class.db');

before(async () => {
  server = await start_server({ db, no_model: true });
  teacher_browser = await open_browser();
  learner_browser = await open_browser();
  teacher = await teacher_browser.newPage();
  learner = await learner_browser.newPage();
  problems = watch_console(teacher);
});

after(async () => {
  await teacher_browser?.close();
  await learner_browser?.close();
  await server?.stop();
});

test('a teacher creates a class from the footer link and sees its code, join link and secret once', async () => {
  await teacher.goto(server.url + '/');
  await teacher.getByRole('link', { name: 'For teachers' }).click();
  await teacher.getByRole('heading', { level: 1, name: 'For teachers: run a class' }).waitFor();
  await teacher.getByLabel('Name').fill('Period 3');
  await teacher.getByRole('button', { name: 'Create the class' }).click();
  await teacher.getByRole('heading', { level: 1, name: 'Period 3' }).waitFor();
  code = (await teacher.getByTestId('class-code').textContent()).trim();
  assert.match(code, /^[A-Z2-9]{6}$/);
  join_link = await teacher.getByTestId('join-link').getAttribute('href');
  assert.equal(join_link, `${server.url}/#/join/${code}`);
  assert.match(await teacher.getByTestId('class-secret').textContent(), /[A-Z2-9]{5}-[A-Z2-9]{5}-[A-Z2-9]{5}-[A-Z2-9]{5}/);
  assert.equal(await teacher.evaluate(() => document.cookie), '', 'the session cookie is HttpOnly: the page cannot read it');
});

test('a learner joins from the join link with a nickname only', async () => {
  await learner.goto(join_link);
  await learner.getByRole('heading', { level: 1, name: 'Join a class' }).waitFor();
  assert.equal(await learner.getByLabel('Class code').inputValue(), code);
  await learner.getByLabel('Nickname').fill('Ada');
  await learner.getByRole('button', { name: 'Join' }).click();
  await eventually(async () => assert.match(await learner.getByTestId('membership').textContent(), /You are in Period 3 as Ada/));
  learner_id = await learner.evaluate(() => localStorage.getItem('headlab.learner'));
});

test('the learner’s checks appear in the teacher’s grid live, with a mark in each cell', async () => {
  const row = teacher.locator('tr[data-learner="Ada"]');
  await row.waitFor({ timeout: 10_000 });
  const cell = row.locator('td[data-challenge="trained-heads/pattern-quiz"]');
  assert.equal(await cell.getAttribute('data-state'), 'open');
  assert.match(await cell.textContent(), /·/);
  for (const choice of ['uniform', 'below-diagonal']) {
    const r = await api_post(server, '/api/lessons/trained-heads/check', { learner: learner_id, challenge: 'pattern-quiz', answer: { choice } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  await eventually(async () => assert.equal(await cell.getAttribute('data-state'), 'done'), 10_000);
  assert.match(await cell.textContent(), /✓2/);
  assert.match(await cell.textContent(), /done in 2 tries/);
  const summary = teacher.locator('li[data-challenge="trained-heads/pattern-quiz"]');
  assert.match(await summary.textContent(), /1 of 1 done/);
  assert.match(await summary.textContent(), /Common wrong answers: uniform \(1\)/);
  await screenshot(teacher, '70-teacher-class-view');
});

test('the CSV export downloads with the teacher’s session', async () => {
  const href = await teacher.getByTestId('csv-link').getAttribute('href');
  const csv = await teacher.evaluate(async (h) => (await fetch(h)).text(), href);
  assert.match(csv, /^nickname,lesson,challenge,done,done_at,tries\r\n/);
  assert.match(csv, /Ada,trained-heads,pattern-quiz,yes,[0-9T:.Z-]+,2\r\n/);
});

test('the learner’s browser cannot open the teacher’s view', async () => {
  const status = await learner.evaluate(async (c) => (await fetch(`/api/class/view?code=${c}`)).status, code);
  assert.equal(status, 401);
  await learner.goto(`${server.url}/#/teacher/${code}`);
  await learner.getByRole('heading', { level: 1, name: 'For teachers: run a class' }).waitFor();
  assert.match(await learner.getByRole('status').first().textContent(), /Log in as the class's teacher/);
});

test('the teacher removes the learner, who stays out until let back in, then deletes the class', async () => {
  await teacher.getByRole('button', { name: 'Remove Ada' }).click();
  await eventually(async () => assert.equal(await teacher.locator('tr[data-learner="Ada"]').count(), 0));
  const kept_out = await api_post(server, '/api/class/join', { code, learner: learner_id, nickname: 'Ada' });
  assert.equal(kept_out.status, 403);
  await teacher.getByRole('button', { name: 'Let Ada back in' }).click();
  await eventually(async () => assert.equal(await teacher.getByTestId('removed-learners').count(), 0));
  const back = await api_post(server, '/api/class/join', { code, learner: learner_id, nickname: 'Ada' });
  assert.equal(back.status, 200);
  await eventually(async () => assert.equal(await teacher.locator('tr[data-learner="Ada"]').count(), 1));
  await teacher.getByRole('button', { name: 'Delete the class…' }).click();
  await teacher.getByRole('button', { name: 'Yes, delete Period 3' }).click();
  await teacher.getByRole('heading', { level: 1, name: 'For teachers: run a class' }).waitFor();
  const gone = await api_post(server, '/api/class/join', { code, learner: 'learner-0009', nickname: 'Bo' });
  assert.equal(gone.status, 404);
  // the server runs without a model: the course's model routes answer 503 by design
  assert.deepEqual(problems.filter((p) => !/status of 503/.test(p)), []);
});
