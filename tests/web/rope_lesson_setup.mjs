// rope_lesson_setup.mjs — what the lesson-3 browser tests share: a server whose models folder
// is the repository's models/, which holds the three lesson models (headlab-nopos, -learned,
// -rope), the lesson page open on it, and locators for its parts.
//
//   let server, browser, page, problems, close;
//   before(async () => ({ server, browser, page, problems, close } = await open_rope_lesson('order-grid')));
//   after(() => close?.());
//
// The tests read every figure from the API, so they hold for any retraining of the models;
// tests/server/api/lesson_models_test.cpp holds the models to the figures models/README.md states.
import fs from 'node:fs';
import path from 'node:path';
import { open_page, repo_root, test_model } from './harness.mjs';

export const LESSON_MODELS = ['headlab-nopos', 'headlab-learned', 'headlab-rope'];
export const ROUTE = '/#/lessons/word-order';
export const LESSON_MODELS_DIR = path.join(repo_root, 'models');

/** The server, a browser and the lesson page, once the element with this test id shows. */
export async function open_rope_lesson(ready_testid) {
  const missing = LESSON_MODELS.filter((n) => !fs.existsSync(path.join(LESSON_MODELS_DIR, n, 'model.safetensors')));
  if (missing.length) throw new Error(`${missing.join(', ')} not in ${LESSON_MODELS_DIR}: train them with scripts/train_lesson7_models.sh`);
  const s = await open_page({ route: ROUTE, model: test_model(), args: ['--models-dir', LESSON_MODELS_DIR] });
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
