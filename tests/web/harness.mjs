// harness.mjs — what every browser test needs: a real `headlab serve` on a free port
// with its own database, and Debian's headless chromium driven by playwright-core.
//
//   const server = await start_server({ db });        // waits for GET /api/health
//   const browser = await open_browser();             // fresh profile in a temp dir
//   const page = await browser.newPage();
//   await page.goto(server.url);
//   ...; await browser.close(); await server.stop();
//
// HEADLAB_BIN names the binary (default build/headlab, relative to the repo root);
// CHROMIUM_BIN the browser (default /usr/bin/chromium); HEADLAB_MODEL the model folder the
// server loads (default: the server's built-in model). Tests of the model pages read
// every number from the API, so they hold for any trained model.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const repo_root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// playwright-core is a devDependency of web/, so it resolves from web/node_modules.
const { chromium } = createRequire(path.join(repo_root, 'web', 'package.json'))('playwright-core');
export const artifacts_dir = path.join(repo_root, 'tests', 'web', 'artifacts');
const web_dist = path.join(repo_root, 'web', 'dist');
const headlab_bin = path.resolve(repo_root, process.env.HEADLAB_BIN || 'build/headlab');
const chromium_bin = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

const made_dirs = [];
process.on('exit', () => {
  for (const dir of made_dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the test process exits. */
export function temp_dir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made_dirs.push(dir);
  return dir;
}

async function free_port() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `headlab serve` and waits until /api/health answers ok. Pass the port of an
 * earlier server to restart on the same origin (the learner id lives in localStorage,
 * which is per origin). args: more options for `headlab serve` (['--models-dir', dir]).
 */
export async function start_server({ db, port: wanted_port, model = process.env.HEADLAB_MODEL, no_model = false, args = [] }) {
  if (!fs.existsSync(headlab_bin)) {
    throw new Error(`No headlab binary at ${headlab_bin}: build it, or set HEADLAB_BIN.`);
  }
  if (!fs.existsSync(path.join(web_dist, 'index.html'))) {
    throw new Error(`No ${web_dist}/index.html: run \`npm run build --prefix web\` first.`);
  }
  const port = wanted_port ?? (await free_port());
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    headlab_bin,
    ['serve', '--host', '127.0.0.1', '--port', String(port), '--db', db, '--web', web_dist, ...(no_model ? ['--no-model'] : model ? ['--model', path.resolve(repo_root, model)] : []), ...args],
    { cwd: repo_root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let gone = null;
  exited.then((e) => (gone = e));

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (gone) throw new Error(`headlab serve exited early (${JSON.stringify(gone)}):\n${log}`);
    try {
      const r = await fetch(`${url}/api/health`);
      if (r.ok && (await r.json()).ok === true) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`headlab serve did not answer /api/health within 30 s:\n${log}`);
    }
    await sleep(100);
  }

  return {
    url,
    port,
    log: () => log,
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A progress database in a fresh temporary directory: each server starts with no learners. */
export const fresh_db = () => path.join(temp_dir('headlab-web-db-'), 'progress.db');

/**
 * What a test file opens in its before(): a server (start_server's options; a fresh database
 * unless `db` is given), a browser, and one page at `route` whose console errors are collected
 * in `problems`. close() is the file's after().
 *
 *   let server, page, problems, close;
 *   before(async () => ({ server, page, problems, close } = await open_page({ route: '/#/lessons/word-order' })));
 *   after(() => close?.());
 */
export async function open_page({ route = '/', ...server_options } = {}) {
  const server = await start_server({ db: fresh_db(), ...server_options });
  let browser;
  try {
    browser = await open_browser();
    const page = await browser.newPage();
    const problems = watch_console(page);
    await page.goto(server.url + route);
    return {
      server,
      browser,
      page,
      problems,
      async close() {
        await browser.close();
        await server.stop();
      },
    };
  } catch (e) {
    await browser?.close();
    await server.stop();
    throw e;
  }
}

/** Debian's chromium, headless, with a fresh profile in a temp dir. One context = one learner. */
export async function open_browser({ width = 1280, height = 900, touch = false } = {}) {
  const profile = temp_dir('headlab-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromium_bin,
    headless: true,
    viewport: { width, height },
    hasTouch: touch, // a phone's taps (locator.tap) instead of a mouse's clicks
    isMobile: touch,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const close = context.close.bind(context);
  context.close = async () => {
    await close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return context;
}

/** Saves a full-page screenshot as a test artefact; returns its path. */
export async function screenshot(page, name) {
  fs.mkdirSync(artifacts_dir, { recursive: true });
  const file = path.join(artifacts_dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * With HEADLAB_UPDATE_SCREENSHOT=1, also writes this page to docs/screenshot.png for the
 * README, squeezed by pngquant (Debian's `pngquant`) to stay small. Off by default, so a
 * test run never changes the work tree.
 */
export async function update_readme_screenshot(page) {
  if (process.env.HEADLAB_UPDATE_SCREENSHOT !== '1') return;
  const raw = path.join(artifacts_dir, 'readme-screenshot-raw.png');
  await page.screenshot({ path: raw, fullPage: true });
  const out = path.join(repo_root, 'docs', 'screenshot.png');
  const r = spawnSync('pngquant', ['--quality', '70-95', '--speed', '1', '--force', '--output', out, raw]);
  if (r.error || r.status !== 0) fs.copyFileSync(raw, out);
}

/** Fails the test on any error the page logs or throws. */
export function watch_console(page) {
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
  });
  return problems;
}

/** Retries an assertion until it passes or `ms` run out; the last failure is thrown. */
export async function eventually(assertion, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await assertion();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

/**
 * Clicks the button inside `root` (a locator) whose text starts with `label`, and measures in
 * the page the time until the next frame after `watched` (default: `root`) changed: a click to
 * the redrawn view, without the driver's own waits.
 */
export async function click_to_redraw(root, label, watched = root) {
  const target = await watched.elementHandle();
  return root.evaluate(
    (el, [label, target]) =>
      new Promise((resolve) => {
        const button = [...el.querySelectorAll('button')].find((b) => b.textContent.trim().startsWith(label));
        const t0 = performance.now();
        const seen = new MutationObserver(() => {
          seen.disconnect();
          requestAnimationFrame(() => resolve(performance.now() - t0));
        });
        seen.observe(target, { subtree: true, childList: true, characterData: true });
        button.click();
      }),
    [label, target],
  );
}

/** The server's JSON API, for tests that compute what the page should show. */
export async function api_post(server, route, body) {
  const r = await fetch(server.url + route, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

/** The server's JSON API, GET. */
export async function api_get(server, route) {
  const r = await fetch(server.url + route);
  return { status: r.status, body: await r.json() };
}

let stand_in_model = null;
/**
 * The model folder the model-page tests run on: HEADLAB_MODEL when set; else the built-in
 * model once it has weights (undefined: the server's default); else a stand-in made here in
 * a second by `headlab train` (the built-in tokenizer, a small config, four steps on the
 * held-out text). The tests read every number from the API, so any of these will do.
 */
export function test_model() {
  if (process.env.HEADLAB_MODEL) return process.env.HEADLAB_MODEL;
  const built_in = path.join(repo_root, 'models', 'headlab-tiny');
  if (fs.existsSync(path.join(built_in, 'model.safetensors'))) return undefined;
  if (stand_in_model) return stand_in_model;
  const dir = temp_dir('headlab-stand-in-model-');
  const config = JSON.parse(fs.readFileSync(path.join(built_in, 'train_config.json'), 'utf8'));
  Object.assign(config, { n_layer: 2, n_head: 4, n_embd: 32 });
  fs.writeFileSync(path.join(dir, 'train_config.json'), JSON.stringify(config));
  const heldout = path.join(built_in, 'heldout.txt');
  const out = path.join(dir, 'model');
  const r = spawnSync(headlab_bin, ['train', '--config', path.join(dir, 'train_config.json'), '--tokenizer', built_in, '--corpus', heldout,
    '--heldout', heldout, '--out', out, '--steps', '4', '--batch', '2', '--context', '64', '--warmup', '1', '--log-every', '1', '--eval-every', '2', '--quiet'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`could not make a stand-in model: ${r.stderr || r.error}`);
  // The server reads these two names from a model folder.
  fs.copyFileSync(path.join(out, 'train_log.csv'), path.join(out, 'training_log.csv'));
  fs.copyFileSync(heldout, path.join(out, 'heldout.txt'));
  process.stderr.write(`the built-in model has no weights yet: testing on a stand-in trained for 4 steps (${out})\n`);
  stand_in_model = out;
  return out;
}
