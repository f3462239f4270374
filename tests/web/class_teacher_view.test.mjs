// A class in the browser: a teacher creates one and sees the code, the join link and the
// secret until "I wrote it down"; a learner joins with a nickname and is told that what they
// finished before joining is carried over; the learner's checks arrive in the teacher's grid
// live (a mark in every cell, not colour alone) under challenge titles, with readable wrong
// answers, totals, last-active times, sorting, a mark where the answer was shown, and the
// learner's evidence on a click; the nickname column stays in view at 360 px; the CSV
// downloads with the session and a UTF-8 byte order mark; the learner's browser cannot open
// the teacher's view; the teacher removes the learner (after confirming) and deletes the
// class; no poll of the view fails or is cancelled.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_post, eventually, open_browser, repo_root, screenshot, start_server, temp_dir, watch_console } from './harness.mjs';

let server, teacher_browser, learner_browser, teacher, learner, problems;
let code, join_link, learner_id;
const failed_requests = []; // every request of the teacher's page that failed or was cancelled
const db = path.join(temp_dir('headlab-web-class-'), 'class.db');
const SENTENCE = 'the cat chased the dog . the cat chased the';

before(async () => {
  server = await start_server({ db, no_model: true });
  teacher_browser = await open_browser();
  learner_browser = await open_browser();
  teacher = await teacher_browser.newPage();
  learner = await learner_browser.newPage();
  problems = watch_console(teacher);
  teacher.on('requestfailed', (r) => failed_requests.push(`${r.url()}: ${r.failure()?.errorText}`));
});

after(async () => {
  await teacher_browser?.close();
  await learner_browser?.close();
  await server?.stop();
});

const row_of = (nickname) => teacher.locator(`tr[data-learner="${nickname}"]`);
const cell_of = (nickname, key) => row_of(nickname).locator(`td[data-challenge="${key}"]`);
const nicknames = () => teacher.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-learner')));
const axe_source = fs.readFileSync(createRequire(path.join(repo_root, 'web', 'package.json')).resolve('axe-core/axe.min.js'), 'utf8');
async function violations(page) {
  await page.evaluate(axe_source);
  const result = await page.evaluate(() =>
    globalThis.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
  );
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length}×, e.g. ${v.nodes[0].target.join(' ')})`);
}
const check = (learner, challenge, answer) => api_post(server, '/api/lessons/trained-heads/check', { learner, challenge, answer });

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

test('the secret leaves the screen once the teacher presses "I wrote it down"', async () => {
  const secret = (await teacher.getByTestId('class-secret').locator('code').textContent()).trim();
  await teacher.getByRole('button', { name: 'I wrote it down' }).click();
  await eventually(async () => assert.equal(await teacher.getByTestId('class-secret').count(), 0));
  assert.ok(!(await teacher.locator('body').textContent()).includes(secret), 'the secret is nowhere on the page');
  await teacher.getByRole('heading', { level: 1, name: 'Period 3' }).waitFor(); // the class view stays
});

test('a learner joins from the join link with a nickname only and is told that earlier progress is carried over', async () => {
  await learner.goto(join_link);
  await learner.getByRole('heading', { level: 1, name: 'Join a class' }).waitFor();
  assert.equal(await learner.getByLabel('Class code').inputValue(), code);
  learner_id = await learner.evaluate(() => localStorage.getItem('headlab.learner'));
  assert.ok(learner_id, 'the page made the learner id');
  // lesson 1's "same word, a first copy", met before joining: query 1 ("cat") has no earlier copy
  const before_joining = await api_post(server, '/api/progress/check', {
    learner: learner_id, lesson: 'causal-mask', sentence: SENTENCE, head: 'same-word', mask: true, query: 1,
  });
  assert.equal(before_joining.status, 200, JSON.stringify(before_joining.body));
  assert.ok(before_joining.body.newly_completed.includes('same-word-first-copy'), JSON.stringify(before_joining.body));
  await learner.getByLabel('Nickname').fill('Ada');
  await learner.getByRole('button', { name: 'Join' }).click();
  await eventually(async () => assert.match(await learner.getByTestId('membership').textContent(), /You are in Period 3 as Ada/));
  assert.match(await learner.getByTestId('carried-over').textContent(), /The challenge you finished before joining counts too: your teacher sees it marked "before joining"/);
});

test('a tick carried over from before joining shows in the teacher’s grid, marked as such', async () => {
  const cell = cell_of('Ada', 'causal-mask/same-word-first-copy');
  await eventually(async () => assert.equal(await cell.getAttribute('data-state'), 'done'), 10_000);
  assert.equal(await cell.getAttribute('data-before-joining'), 'true');
  assert.match(await cell.textContent(), /before joining/);
});

test('the learner’s checks appear in the teacher’s grid live, with a mark in each cell, under challenge titles', async () => {
  const row = row_of('Ada');
  await row.waitFor({ timeout: 10_000 });
  const cell = cell_of('Ada', 'trained-heads/pattern-quiz');
  assert.equal(await cell.getAttribute('data-state'), 'open');
  assert.match(await cell.textContent(), /·/);
  for (const choice of ['uniform', 'below-diagonal']) {
    const r = await check(learner_id, 'pattern-quiz', { choice });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  await eventually(async () => assert.equal(await cell.getAttribute('data-state'), 'done'), 10_000);
  assert.match(await cell.textContent(), /✓2/);
  assert.match(await cell.textContent(), /done in 2 tries/);
  // the column heads are titles, not ids
  const head = teacher.locator('th[data-challenge="trained-heads/pattern-quiz"]');
  assert.equal((await head.textContent()).trim(), 'The previous-token pattern');
  const heads = await teacher.locator('th.challenge-head').allTextContents();
  for (const h of heads) assert.doesNotMatch(h, /^[a-z]+(-[a-z]+)+$/, `a column head reads like an id: ${h}`);
  assert.equal(await teacher.locator('th[scope="colgroup"]', { hasText: 'What trained heads learn' }).count(), 1); // the lesson by its title
  // wrong answers as readable text, not ids
  const summary = teacher.locator('li[data-challenge="trained-heads/pattern-quiz"]');
  assert.match(await summary.textContent(), /The previous-token pattern: 1 of 1 done/);
  assert.match(await summary.textContent(), /Common wrong answers: an even spread \(1\)/);
  assert.doesNotMatch(await summary.textContent(), /uniform/);
  await screenshot(teacher, '70-teacher-class-view');
});

test('each learner has a total and a last-active time, and the grid sorts by nickname, total and last active', async () => {
  // Bo joins and does nothing; Cy joins last and passes lesson 1's induction challenge
  for (const [id, nickname] of [['learner-bo-0002', 'Bo'], ['learner-cy-0003', 'Cy']]) {
    const r = await api_post(server, '/api/class/join', { code, learner: id, nickname });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  await eventually(async () => assert.equal(await row_of('Cy').count(), 1), 10_000);
  const r = await api_post(server, '/api/progress/check', {
    learner: 'learner-cy-0003', lesson: 'causal-mask', sentence: SENTENCE, head: 'induction', mask: true, query: 8,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await eventually(async () => assert.equal((await row_of('Cy').getByTestId('learner-total').textContent()).trim().split(' ')[0], '1'), 10_000);
  const columns = await teacher.locator('th.challenge-head').count();
  assert.equal((await row_of('Ada').getByTestId('learner-total').textContent()).trim(), `2 of ${columns}`);
  assert.equal((await row_of('Bo').getByTestId('learner-total').textContent()).trim(), `0 of ${columns}`);
  const last = row_of('Cy').getByTestId('last-active').locator('time');
  assert.match(await last.getAttribute('datetime'), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.match((await last.textContent()).trim(), /\d\d:\d\d/);

  assert.deepEqual(await nicknames(), ['Ada', 'Bo', 'Cy']); // by nickname, the default
  await teacher.getByRole('button', { name: 'Total' }).click();
  assert.deepEqual(await nicknames(), ['Ada', 'Cy', 'Bo']);
  assert.equal(await teacher.locator('th[aria-sort="descending"]').textContent(), 'Total');
  await teacher.getByRole('button', { name: 'Last active' }).click();
  assert.deepEqual(await nicknames(), ['Cy', 'Bo', 'Ada']); // Bo joined after Ada's last check
  await teacher.getByRole('button', { name: 'Nickname' }).click();
  assert.deepEqual(await nicknames(), ['Ada', 'Bo', 'Cy']);
});

test('a challenge whose answer a learner was shown carries an "answer shown" mark, and the right answer after it is not credited', async () => {
  let r = await check('learner-bo-0002', 'pattern-quiz', { choice: 'uniform', revealed: true });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  r = await check('learner-bo-0002', 'pattern-quiz', { choice: 'below-diagonal' }); // after a reload: no flag sent
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.correct, false);
  const cell = cell_of('Bo', 'trained-heads/pattern-quiz');
  await eventually(async () => assert.equal(await cell.getAttribute('data-revealed'), 'true'), 10_000);
  assert.equal(await cell.getAttribute('data-state'), 'tried');
  assert.match(await cell.textContent(), /answer shown/);
  assert.equal(await cell_of('Ada', 'trained-heads/pattern-quiz').getAttribute('data-revealed'), null);
  // neither the look nor the answer given after it counts as a wrong answer
  const summary = teacher.locator('li[data-challenge="trained-heads/pattern-quiz"]');
  assert.doesNotMatch(await summary.textContent(), /revealed|answer shown|below the diagonal/);
});

test('a click on a cell shows the learner’s evidence: the text and head used and the numbers the check computed', async () => {
  const r = await api_post(server, '/api/progress/check', {
    learner: learner_id, lesson: 'causal-mask', sentence: SENTENCE, head: 'induction', mask: true, query: 8,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const cell = cell_of('Ada', 'causal-mask/induction-next-word');
  await eventually(async () => assert.equal(await cell.getAttribute('data-state'), 'done'), 10_000);
  await cell.getByRole('button').click();
  const panel = teacher.getByTestId('evidence');
  await panel.waitFor();
  assert.equal((await panel.getByRole('heading').textContent()).trim(), 'Ada: Induction: the next word');
  assert.equal(await panel.getByTestId('evidence-text').textContent(), SENTENCE);
  assert.equal(await panel.getByTestId('evidence-head').textContent(), 'the induction head');
  assert.match(await panel.getByTestId('evidence-why').textContent(), /\d/, 'the check’s numbers');
  await screenshot(teacher, '71-teacher-evidence');
  // the quiz: each check with the answer given, readable, and why it was or was not met
  await cell_of('Ada', 'trained-heads/pattern-quiz').getByRole('button').click();
  await eventually(async () => assert.match(await panel.getByRole('heading').textContent(), /The previous-token pattern/));
  const attempts = panel.getByTestId('evidence-attempt');
  assert.equal(await attempts.count(), 2);
  assert.match(await attempts.nth(0).textContent(), /not met.*Answer: an even spread/s);
  assert.equal(await attempts.nth(1).getAttribute('data-passed'), 'true');
  // a carried-over tick says so
  await cell_of('Ada', 'causal-mask/same-word-first-copy').getByRole('button').click();
  await eventually(async () => assert.match(await panel.textContent(), /Done before joining the class/));
  // Bo's: the answer was shown
  await cell_of('Bo', 'trained-heads/pattern-quiz').getByRole('button').click();
  await panel.getByTestId('evidence-revealed').waitFor();
  assert.deepEqual(await violations(teacher), [], 'the grid and the evidence pass axe-core’s WCAG A/AA checks');
  await panel.getByRole('button', { name: 'Close' }).click();
  assert.equal(await teacher.getByTestId('evidence').count(), 0);
});

test('at 360 px the nickname column stays in view while the grid scrolls sideways', async () => {
  await teacher.setViewportSize({ width: 360, height: 800 });
  const wrap = teacher.getByTestId('class-grid-wrap');
  const scrollable = await wrap.evaluate((w) => w.scrollWidth > w.clientWidth);
  assert.ok(scrollable, 'the grid is wider than a phone: it scrolls');
  await wrap.evaluate((w) => (w.scrollLeft = w.scrollWidth));
  const name = row_of('Ada').locator('th');
  const box = await name.boundingBox();
  const wrap_box = await wrap.boundingBox();
  assert.ok(Math.abs(box.x - wrap_box.x) <= 2, `the nickname cell sits at the grid's left edge (${box.x} vs ${wrap_box.x})`);
  const on_top = await teacher.evaluate(([x, y]) => document.elementFromPoint(x, y)?.closest('th')?.textContent, [box.x + box.width / 2, box.y + box.height / 2]);
  assert.equal(on_top, 'Ada', 'the nickname is what shows there, not a cell scrolled under it');
  assert.deepEqual(await violations(teacher), []);
  await screenshot(teacher, '72-teacher-class-view-360');
  await teacher.setViewportSize({ width: 1280, height: 900 });
});

test('the CSV export downloads with the teacher’s session and a UTF-8 byte order mark', async () => {
  const href = await teacher.getByTestId('csv-link').getAttribute('href');
  const { bytes, csv } = await teacher.evaluate(async (h) => {
    const buffer = await (await fetch(h)).arrayBuffer();
    return { bytes: Array.from(new Uint8Array(buffer.slice(0, 3))), csv: new TextDecoder('utf-8', { ignoreBOM: true }).decode(buffer) };
  }, href);
  assert.deepEqual(bytes, [0xef, 0xbb, 0xbf]);
  assert.match(csv, /^\uFEFFnickname,lesson,challenge,title,done,done_at,tries,before_joining,answer_shown\r\n/);
  assert.match(csv, /Ada,trained-heads,pattern-quiz,The previous-token pattern,yes,[0-9T:.Z-]+,2,no,no\r\n/);
  assert.match(csv, /Ada,causal-mask,same-word-first-copy,Same word: a first copy,yes,[0-9T:.Z-]+,0,yes,no\r\n/);
  assert.match(csv, /Bo,trained-heads,pattern-quiz,The previous-token pattern,no,,2,no,yes\r\n/);
});

test('the learner’s browser cannot open the teacher’s view', async () => {
  const status = await learner.evaluate(async (c) => (await fetch(`/api/class/view?code=${c}`)).status, code);
  assert.equal(status, 401);
  await learner.goto(`${server.url}/#/teacher/${code}`);
  await learner.getByRole('heading', { level: 1, name: 'For teachers: run a class' }).waitFor();
  assert.match(await learner.getByRole('status').first().textContent(), /Log in as the class's teacher/);
});

test('while nothing changes, each poll asks with the last ETag (a 304 on the wire) and none fails or is cancelled', async () => {
  const polls = [];
  const on_response = async (r) => {
    if (!r.url().includes('/api/class/view')) return;
    const sent = await r.request().allHeaders(); // as they went on the wire, the browser's own included
    polls.push({ status: r.status(), conditional: 'if-none-match' in sent });
  };
  teacher.on('response', on_response);
  const rows_before = await teacher.locator('tbody tr').elementHandles();
  await teacher.waitForTimeout(7_000);
  teacher.off('response', on_response);
  assert.ok(polls.length >= 2, `the page polled (${polls.length} times)`);
  for (const p of polls) {
    assert.ok(p.conditional, 'the poll carried If-None-Match: the server answers 304 while nothing changed');
    assert.ok(p.status === 200 || p.status === 304, `the poll succeeded (${p.status})`);
  }
  // no redraw: the same row elements as before
  const rows_after = await teacher.locator('tbody tr').elementHandles();
  assert.equal(rows_after.length, rows_before.length);
  for (let i = 0; i < rows_after.length; i++) assert.ok(await rows_after[i].evaluate((a, b) => a === b, rows_before[i]));
  assert.deepEqual(failed_requests, []);
});

test('"Remove" asks first: keeping the learner changes nothing, confirming removes them until let back in', async () => {
  await teacher.getByRole('button', { name: 'Remove Ada…', exact: true }).click();
  const confirm = teacher.getByRole('group', { name: 'Remove Ada?' });
  await confirm.waitFor();
  assert.match(await confirm.textContent(), /cannot join again until you let them back in/);
  await teacher.getByRole('button', { name: 'Keep Ada', exact: true }).click();
  assert.equal(await confirm.count(), 0);
  await teacher.waitForTimeout(500);
  assert.equal(await row_of('Ada').count(), 1, 'nothing was removed');
  await teacher.getByRole('button', { name: 'Remove Ada…', exact: true }).click();
  await teacher.getByRole('button', { name: 'Yes, remove Ada', exact: true }).click();
  await eventually(async () => assert.equal(await row_of('Ada').count(), 0));
});

test('the removed learner stays out until let back in, then the teacher deletes the class', async () => {
  const kept_out = await api_post(server, '/api/class/join', { code, learner: learner_id, nickname: 'Ada' });
  assert.equal(kept_out.status, 403);
  await teacher.getByRole('button', { name: 'Let Ada back in' }).click();
  await eventually(async () => assert.equal(await teacher.getByTestId('removed-learners').count(), 0));
  const back = await api_post(server, '/api/class/join', { code, learner: learner_id, nickname: 'Ada' });
  assert.equal(back.status, 200);
  await eventually(async () => assert.equal(await row_of('Ada').count(), 1));
  await teacher.getByRole('button', { name: 'Delete the class…' }).click();
  await teacher.getByRole('button', { name: 'Yes, delete Period 3' }).click();
  await teacher.getByRole('heading', { level: 1, name: 'For teachers: run a class' }).waitFor();
  const gone = await api_post(server, '/api/class/join', { code, learner: 'learner-0009', nickname: 'Bo' });
  assert.equal(gone.status, 404);
  // the server runs without a model: the course's model routes answer 503 by design
  assert.deepEqual(problems.filter((p) => !/status of 503/.test(p)), []);
});

test('no poll of the teacher’s view failed or was cancelled, the view closing included', async () => {
  // the view closed (the class was deleted) with the page still open: a poll on its way then
  // is left to finish, never cancelled
  await teacher.waitForTimeout(3500);
  assert.deepEqual(failed_requests, []);
});
