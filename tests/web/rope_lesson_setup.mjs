// rope_lesson_setup.mjs — what the lesson-3 browser tests share: a server whose models folder
// holds the three lesson models. Until headlab-nopos, headlab-learned and headlab-rope are
// in models/, each is a copy of the test model (the built-in one, or the harness's stand-in)
// made in a temp folder here; the tests read every number from the API, so they hold either way.
import fs from 'node:fs';
import path from 'node:path';
import { repo_root, start_server, temp_dir, test_model } from './harness.mjs';

export const LESSON_MODELS = ['headlab-nopos', 'headlab-learned', 'headlab-rope'];

export function lesson_models_dir() {
  const shipped = path.join(repo_root, 'models');
  if (LESSON_MODELS.every((n) => fs.existsSync(path.join(shipped, n, 'model.safetensors')))) return shipped;
  const source = test_model() ?? path.join(repo_root, 'models', 'headlab-tiny');
  const dir = temp_dir('headlab-lesson-models-');
  for (const name of LESSON_MODELS) fs.cpSync(path.resolve(repo_root, source), path.join(dir, name), { recursive: true });
  return dir;
}

export async function start_rope_server() {
  const db = path.join(temp_dir('headlab-web-db-'), 'progress.db');
  return start_server({ db, model: test_model(), args: ['--models-dir', lesson_models_dir()] });
}

export async function post(server, route, body) {
  const r = await fetch(server.url + route, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}
export async function get(server, route) {
  const r = await fetch(server.url + route);
  return { status: r.status, body: await r.json() };
}

/** The page's section of part n. */
export const part = (page, n) => page.locator(`section[data-part="${n}"]`);
export const challenge = (page, id) => page.locator(`li[data-challenge="${id}"]`);
