// rope_lesson_setup.mjs — what the lesson-3 browser tests share: a server whose models folder
// holds the three lesson models (models/headlab-nopos, -learned, -rope), the lesson page open
// on it, and locators for its parts.
//
//   let server, browser, page, problems, close;
//   before(async () => ({ server, browser, page, problems, close } = await open_rope_lesson('order-grid')));
//   after(() => close?.());
//
// Until the three are in models/, each is a copy of the test model (the built-in one, or the
// harness's stand-in) made in a temp folder here; the tests read every number from the API,
// so they hold either way.
import fs from 'node:fs';
import path from 'node:path';
import { open_page, repo_root, temp_dir, test_model } from './harness.mjs';

export const LESSON_MODELS = ['headlab-nopos', 'headlab-learned', 'headlab-rope'];
export const ROUTE = '/#/lessons/word-order';

export function lesson_models_dir() {
  const shipped = path.join(repo_root, 'models');
  if (LESSON_MODELS.every((n) => fs.existsSync(path.join(shipped, n, 'model.safetensors')))) return shipped;
  const source = test_model() ?? path.join(repo_root, 'models', 'headlab-tiny');
  const dir = temp_dir('headlab-lesson-models-');
  for (const name of LESSON_MODELS) fs.cpSync(path.resolve(repo_root, source), path.join(dir, name), { recursive: true });
  return dir;
}

/** The server, a browser and the lesson page, once the element with this test id shows. */
export async function open_rope_lesson(ready_testid) {
  const s = await open_page({ route: ROUTE, model: test_model(), args: ['--models-dir', lesson_models_dir()] });
  try {
    await s.page.getByTestId(ready_testid).waitFor({ timeout: 30_000 });
  } catch (e) {
    await s.close();
    throw e;
  }
  return s;
}

// The harness's API calls, by the short names these tests use.
export { api_get as get, api_post as post } from './harness.mjs';

/** The page's section of part n. */
export const part = (page, n) => page.locator(`section[data-part="${n}"]`);
export const challenge = (page, id) => page.locator(`li[data-challenge="${id}"]`);
