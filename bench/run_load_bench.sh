#!/bin/sh
# bench/run_load_bench.sh — issue 25's "load in seconds": how long `headlab run --text hi` and
# `headlab serve` take to be ready on a model folder, and their peak resident memory, through
# each way of loading:
#   files      --no-cache, the model's files in the page cache (what every load cost before the cache)
#   build      the first load with the cache on: reads the files and writes the cache beside them
#   warm       the cache mapped, in the page cache (every later load)
#   cold       the cache mapped after its pages were dropped from the page cache
#              (posix_fadvise DONTNEED: a cold read without root's drop_caches)
#   serve      `headlab serve` from start to GET /api/model answering, and to its first
#              all-heads POST /api/model/run of "hello there" (warm cache)
#
#   bench/run_load_bench.sh MODEL_DIR [BUILD] [REPEATS]
#
# MODEL_DIR: a folder with a tokenizer, e.g. bench/llama_1b_model.py's (Llama-3.2-1B's shape,
# BF16, 2.47 GB). It deletes MODEL_DIR's headlab-weights.auto.cache first. Prints one line per
# way: the median and best wall time of REPEATS runs (1 for build) and the largest peak RSS.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${1:?usage: bench/run_load_bench.sh MODEL_DIR [BUILD] [REPEATS]}
BUILD=${2:-$ROOT/build}
REPEATS=${3:-5}
BIN=$BUILD/headlab
PORT=${HEADLAB_BENCH_PORT:-18765}
CACHE=$MODEL/headlab-weights.auto.cache
[ -x "$BIN" ] || { echo "no $BIN: build the headlab target first" >&2; exit 1; }

evict() { /usr/bin/python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"; }

# one_run ARGS...: "seconds peak_kb" of one `headlab run`
one_run() {
  /usr/bin/time -f "%e %M" -o /tmp/headlab-load-bench.time "$BIN" run --model "$MODEL" --text hi "$@" >/dev/null 2>/tmp/headlab-load-bench.err ||
    { cat /tmp/headlab-load-bench.err >&2; exit 1; }
  cat /tmp/headlab-load-bench.time
}

# report NAME LINES: median and best seconds, largest peak, of the "s kb" lines in LINES
report() {
  printf '%s\n' "$2" | grep -v '^$' | sort -n | awk -v name="$1" -v w="$(du -b "$MODEL/model.safetensors" | cut -f1)" '
    { s[NR] = $1; if ($2 > kb) kb = $2 }
    END { printf "%-6s median %.2f s  best %.2f s  peak RSS %.0f MB (%.2f of the weights file)  runs %d\n",
                 name, s[int((NR + 1) / 2)], s[1], kb / 1024, kb * 1024 / w, NR }'
}

echo "uptime: $(uptime)"
cat "$MODEL"/*.safetensors >/dev/null  # the files in the page cache for 'files' and 'build'
rm -f "$CACHE"
runs=""; for _ in $(seq "$REPEATS"); do runs="$runs
$(one_run --no-cache)"; done
report files "$runs"
report build "$(one_run)"
[ -f "$CACHE" ] || { echo "no cache written at $CACHE" >&2; exit 1; }
runs=""; for _ in $(seq "$REPEATS"); do runs="$runs
$(one_run)"; done
report warm "$runs"
runs=""; for _ in $(seq "$REPEATS"); do evict "$CACHE" "$MODEL"/*; runs="$runs
$(one_run)"; done
report cold "$runs"

for _ in $(seq "$REPEATS"); do
  rm -f /tmp/headlab-load-bench.db*
  start=$(date +%s.%N)
  "$BIN" serve --model "$MODEL" --port "$PORT" --db /tmp/headlab-load-bench.db >/tmp/headlab-load-bench.serve 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/model"; do
    kill -0 "$pid" 2>/dev/null || { cat /tmp/headlab-load-bench.serve >&2; exit 1; }
    sleep 0.05
  done
  ready=$(date +%s.%N)
  curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"text":"hello there"}' \
    "http://127.0.0.1:$PORT/api/model/run"
  answered=$(date +%s.%N)
  kb=$(sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$pid/status")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "serve  ready $(echo "$ready - $start" | bc) s  first run answered $(echo "$answered - $start" | bc) s  peak RSS $((kb / 1024)) MB"
done
echo "uptime: $(uptime)"
