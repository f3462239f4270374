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
# and beside them the peer, llama.cpp (the npm package's libllama, bench/llama_bench.c, 2
# threads) loading the same weights as a BF16 GGUF (`headlab export --gguf`, made once as
# MODEL_DIR/bench-bf16.gguf) and decoding one token, warm and cold, with headlab's own run of
# that GGUF: the issue's target is headlab's warm load <= 2 x llama.cpp's.
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

. "$ROOT/bench/bench_lib.sh"
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
headlab_warm=$(printf '%s\n' "$runs" | grep -v '^$' | sort -n | awk '{ s[NR] = $1 } END { print s[int((NR + 1) / 2)] }')
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

# ---- the peer: llama.cpp loading the same weights as GGUF --------------------------------------
LLAMA_LIBS=$ROOT/data/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [ -f "$LLAMA_LIBS/libllama.v0.4.0.so" ]; then
  export LLAMA_BACKEND_DIR="$LLAMA_LIBS"
  bench_llama_peer "$BUILD"
  GGUF=$MODEL/bench-bf16.gguf
  [ -f "$GGUF" ] || { "$BIN" export --gguf "$GGUF.part" --model "$MODEL" --dtype bf16 >/dev/null && mv "$GGUF.part" "$GGUF"; }
  # llama_run: "seconds peak_kb" of llama.cpp loading the file and decoding one token
  llama_run() {
    /usr/bin/time -f "%e %M" -o /tmp/headlab-load-bench.time "$BUILD/bench/llama_bench" --model "$GGUF" --tokens 1 --repeats 1 \
      >>/tmp/headlab-load-bench.llama 2>/tmp/headlab-load-bench.err || { cat /tmp/headlab-load-bench.err >&2; exit 1; }
    cat /tmp/headlab-load-bench.time
  }
  cat "$GGUF" >/dev/null
  rm -f /tmp/headlab-load-bench.llama
  runs=""; for _ in $(seq "$REPEATS"); do runs="$runs
$(llama_run)"; done
  report llama-warm "$runs"
  echo "       (llama.cpp's own load_ms of those runs, the file mapped: $(sed -n 's/.*load_ms=\([0-9]*\).*/\1/p' /tmp/headlab-load-bench.llama | tr '\n' ' '))"
  llama_warm=$(printf '%s\n' "$runs" | grep -v '^$' | sort -n | awk '{ s[NR] = $1 } END { print s[int((NR + 1) / 2)] }')
  runs=""; for _ in $(seq "$REPEATS"); do evict "$GGUF"; runs="$runs
$(llama_run)"; done
  report llama-cold "$runs"
  cat "$GGUF" >/dev/null
  runs=""; for _ in $(seq "$REPEATS"); do runs="$runs
$(/usr/bin/time -f "%e %M" -o /tmp/headlab-load-bench.time "$BIN" run --model "$GGUF" --text hi >/dev/null 2>/tmp/headlab-load-bench.err &&
  cat /tmp/headlab-load-bench.time)"; done
  report gguf "$runs"
  echo "ratio  headlab warm (its cache) / llama.cpp warm (BF16 GGUF): $(echo "scale=2; $headlab_warm / $llama_warm" | bc)  (target <= 2)"
else
  echo "note: llama.cpp's library is not in data/npm (npm ci --prefix data/npm): its load is not measured"
fi
echo "uptime: $(uptime)"
