// web/scripts/compress.mjs — run after `vite build`: writes NAME.br and NAME.gz beside every
// text asset in dist/, at the strongest settings (this runs once per build, not per request),
// so `headlab serve` sends files as they are and compresses nothing per request.
// Node's own zlib does both; no package is needed.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';

const dist = new URL('../dist/', import.meta.url).pathname;
const compressible = /\.(html|js|mjs|css|svg|json|map|txt|ico|wasm)$/;
const minBytes = 256; // below this the headers outweigh the saving

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

let count = 0;
let before = 0;
let after = 0;
for (const path of files(dist)) {
  if (!compressible.test(path)) continue;
  const data = readFileSync(path);
  if (data.length < minBytes) continue;
  const br = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
  const gz = gzipSync(data, { level: 9 });
  writeFileSync(`${path}.br`, br);
  writeFileSync(`${path}.gz`, gz);
  count += 1;
  before += data.length;
  after += br.length;
}
console.log(`compress: ${count} files, ${(before / 1024).toFixed(0)} KB -> ${(after / 1024).toFixed(0)} KB with Brotli (.br and .gz beside each)`);
