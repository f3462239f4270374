// The course around the lessons: the overview lists the lessons in the server's order
// with the learner's progress, lessons link to each other (the announced third lesson is
// shown as coming, never as a link), and "Spotted a mistake? Tell us." stores a message.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { api_get, api_post, eventually, fresh_db, open_page, repo_root, screenshot, test_model } from './harness.mjs';

let server, page, problems, course, close;
const db = fresh_db();
const headlab_bin = path.resolve(repo_root, process.env.HEADLAB_BIN || 'build/headlab');

before(async () => {
  ({ server, page, problems, close } = await open_page({ db, model: test_model() }));
  const learner = await page.evaluate(() => localStorage.getItem('headlab.learner'));
  // Meet one challenge of the first lesson through the API, so the overview has progress to show.
  await api_post(server, '/api/progress/check', {
    learner, lesson: 'causal-mask', sentence: 'the cat chased the dog . the cat chased the', head: 'induction', mask: true, query: 8,
  });
  course = (await api_get(server, `/api/lessons?learner=${learner}`)).body.lessons;
});

after(() => close?.());

test('the course overview lists every lesson in order with the learner’s progress', async () => {
  await page.getByRole('navigation', { name: 'Lessons' }).getByRole('link', { name: 'Course' }).click();
  await page.getByRole('heading', { level: 1, name: 'Attention heads, lesson by lesson' }).waitFor();
  const items = page.locator('li[data-lesson]');
  await eventually(async () => assert.deepEqual(await items.evaluateAll((lis) => lis.map((li) => li.dataset.lesson)), course.map((l) => l.id)));
  for (const l of course) {
    const item = page.locator(`li[data-lesson="${l.id}"]`);
    if (l.coming) {
      assert.match(await item.textContent(), /Coming soon/);
      assert.equal(await item.getByRole('link').count(), 0, `${l.title} is coming: no link`);
    } else {
      assert.equal(await item.getByRole('link', { name: l.title }).getAttribute('href'), `#/lessons/${l.id}`);
      const done = l.total > 0 && l.completed_count >= l.total;
      await eventually(async () =>
        assert.equal(
          (await item.getByTestId('lesson-progress').textContent()).replace(/\s+/g, ' ').trim(),
          `${done ? '✓' : ''}${l.completed_count} of ${l.total} challenges done${done ? ': lesson complete' : ''}`,
        ),
      );
      // Each lesson says what it teaches.
      assert.ok(((await item.locator('.course__description').textContent()) ?? '').length > 60, `${l.title} has a description`);
    }
  }
  assert.ok(course.find((l) => l.id === 'causal-mask').completed_count >= 1);
  // "Continue" leads to the first lesson not yet finished.
  const next = course.find((l) => !l.coming && !(l.total > 0 && l.completed_count >= l.total));
  const go_on = page.getByTestId('continue');
  assert.equal(await go_on.getAttribute('href'), `#/lessons/${next.id}`);
  assert.match(await go_on.textContent(), new RegExp(`Continue with lesson ${next.number}: ${next.title}`));
  await screenshot(page, '60-course-overview');
});

test('lesson 1 links on to lesson 2, lesson 2 back to lesson 1, and the third lesson shows as coming', async () => {
  await page.locator('li[data-lesson="causal-mask"]').getByRole('link').click();
  const pager = page.getByRole('navigation', { name: 'Previous and next lesson' });
  await pager.getByRole('link', { name: /What trained heads learn/ }).click();
  await page.getByRole('heading', { level: 1, name: 'What trained heads learn' }).waitFor();
  assert.match(page.url(), /#\/lessons\/trained-heads$/);
  const third = course.find((l) => l.number === 3);
  if (third?.coming) {
    assert.match(await pager.getByTestId('next-coming').textContent(), new RegExp(`${third.title}.*coming soon`));
    assert.equal(await pager.getByRole('link', { name: new RegExp(third.title) }).count(), 0);
  }
  await pager.getByRole('link', { name: /Attention heads and the causal mask/ }).click();
  await page.getByRole('heading', { level: 1, name: 'Attention heads and the causal mask' }).waitFor();
});

/** Stored feedback, through `headlab feedback list` when the CLI has it, else the SQLite file itself. */
function stored_feedback() {
  const cli = spawnSync(headlab_bin, ['feedback', 'list', '--db', db, '--format', 'json'], { encoding: 'utf8' });
  if (cli.status === 0) return cli.stdout;
  const sql = spawnSync('sqlite3', ['-json', db, 'SELECT lesson, message, contact FROM feedback'], { encoding: 'utf8' });
  assert.equal(sql.status, 0, sql.stderr);
  return sql.stdout;
}

test('“Spotted a mistake? Tell us.” stores the message with its lesson, as plain text', async () => {
  const message = `Row 3 <b>looks</b> wrong ${Date.now()}`;
  await page.getByRole('button', { name: 'Spotted a mistake? Tell us.' }).click();
  await page.getByRole('textbox', { name: 'What is wrong?' }).fill(message);
  await page.getByRole('textbox', { name: /How can we reach you/ }).fill('learner@example.org');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await eventually(async () => assert.match(await page.getByRole('status').filter({ hasText: 'Thank you' }).textContent(), /saved \(number \d+\)/));
  const saved = stored_feedback();
  assert.ok(saved.includes(JSON.stringify(message).slice(1, -1)), 'the message is in the store');
  assert.match(saved, /causal-mask/);
  assert.equal(await page.locator('main b').count(), 0, 'nothing is rendered as HTML');

  // An empty message is refused before it is sent.
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await eventually(async () => assert.match(await page.getByRole('alert').last().textContent(), /say what is wrong/));
  await screenshot(page, '61-feedback');
});

test('the explorer has the form too, filed under "explorer"', async () => {
  await page.goto(server.url + '/#/explorer');
  await page.getByRole('button', { name: 'Spotted a mistake? Tell us.' }).click();
  await page.getByRole('textbox', { name: 'What is wrong?' }).fill('The explorer is fine, this is a test');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await eventually(async () => assert.match(await page.getByRole('status').filter({ hasText: 'Thank you' }).textContent(), /saved/));
  assert.match(stored_feedback(), /explorer/);
});

test('the page logged no errors', () => {
  assert.deepEqual(problems, []);
});
