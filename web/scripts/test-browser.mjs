// The browser suite: every tests/web/*.test.mjs file under node's test runner, two files at
// a time where node can (its --test-concurrency, node 20.10 and later; older nodes run them
// one after another). Each file starts its own server and Chromium, and most of a file's time
// is spent waiting on them, so two at once fill two cores better than one (measured: see
// scripts/test). HEADLAB_BROWSER_CONCURRENCY=1 runs them one at a time.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, '../../tests/web');
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.test.mjs'))
  .sort()
  .map((f) => path.join(dir, f));
const asked = Number(process.env.HEADLAB_BROWSER_CONCURRENCY ?? 2);
const [major, minor] = process.versions.node.split('.').map(Number);
const can = major > 20 || (major === 20 && minor >= 10);
const args = ['--test'];
if (can && asked > 1) args.push(`--test-concurrency=${asked}`);
const r = spawnSync(process.execPath, [...args, ...files, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
