#!/bin/sh
# bench/run_q4km_bench.sh — issue 25's Q4_K_M benchmark: one Q4_K_M file of Llama-3.2-3B's shape
# (random weights, quantized by llama.cpp's own llama_model_quantize) run by headlab and by
# llama.cpp, in turns, at 64 and 256 tokens, batch 1. Targets: headlab's plain forward (logits of
# every position, no record) ≤ 1.0 of llama.cpp's time on the same file, its peak memory ≤ 1.2 of
# llama.cpp's; headlab's every-pattern forward is printed beside them (no target).
# Each process loads the file, runs one length, and reports the median of REPEATS forwards after a
# warm-up (headlab: bench/headlab_engine_bench; llama.cpp: bench/llama_bench.c against the npm
# package's libllama, 2 threads, F32 KV cache, flash attention off, logits of every position, as
# bench/run_family_bench.sh runs it). The three take turns for ROUNDS rounds; the best round of
# each is printed, so a busy machine slows each alike rather than whichever ran during a burst.
# Printed: wall ms and CPU ms (every thread; the work, apart from waiting for a core on a shared
# machine), the ratios headlab ÷ llama.cpp, peak RSS of each and its ratio, the load average at
# each length, the kernels (headlab --version, the engine's kernel line, llama.cpp's CPU backend).
#
#   bench/run_q4km_bench.sh [options] [BUILD] [DIR] [REPEATS] [ROUNDS]
#                                  (build-bench, /work/tmp-models/llama-3b, 3, 2)
#     --lengths "64 256"         the token counts (default "64 256", the issue's)
#     --headlab-args "ARGS"      extra options for headlab's runs (headlab_engine_bench takes
#                                headlab's --dtype and --compute), e.g. --headlab-args "--compute q8"
#     --llama-threads N          llama.cpp's threads (default 2, as headlab's pool)
#     --no-patterns              leave out headlab's every-pattern forward
# DIR/q4_k_m.gguf is made when missing by bench/run_quantized_check.sh --shape 3b --make-only
# (a random BF16 folder, 6.4 GB; its BF16 GGUF, 6.4 GB; the Q4_K_M file, 2.0 GB: about 13 minutes
# on 2 cores). The build needs -DHEADLAB_BUILD_BENCH=ON (targets headlab_cli, headlab_engine_bench)
# and data/npm (npm ci --prefix data/npm) for llama.cpp. A run with the defaults took 8–13 minutes
# on the 2 shared cores at load 1–5 (bench/README.md has the figures).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"

LENGTHS="64 256" HEADLAB_ARGS="" LLAMA_THREADS=2 PATTERNS=yes
while [ $# -gt 0 ]; do
  case $1 in
    --lengths) LENGTHS=$2; shift 2 ;;
    --headlab-args) HEADLAB_ARGS=$2; shift 2 ;;
    --llama-threads) LLAMA_THREADS=$2; shift 2 ;;
    --no-patterns) PATTERNS=no; shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --*) echo "run_q4km_bench.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) break ;;
  esac
done
BUILD=${1:-$ROOT/build-bench}
DIR=${2:-/work/tmp-models/llama-3b}
REPEATS=${3:-3}
ROUNDS=${4:-2}
FILE=$DIR/q4_k_m.gguf
NPM=$ROOT/data/npm/node_modules
LLAMA_LIBS=$NPM/@node-llama-cpp/linux-x64/bins/linux-x64
[ -f "$LLAMA_LIBS/libllama.v0.4.0.so" ] || { echo "run_q4km_bench.sh: llama.cpp's library is not in data/npm (npm ci --prefix data/npm)" >&2; exit 1; }
export LLAMA_BACKEND_DIR="$LLAMA_LIBS"
# headlab chooses OpenBLAS's kernels by the CPU's features unless the caller set OPENBLAS_CORETYPE
# (as run_family_bench.sh: BENCH_KEEP_CORETYPE=1 keeps the caller's).
CALLER_CORETYPE=${OPENBLAS_CORETYPE:-}
if [ -n "$CALLER_CORETYPE" ] && [ "${BENCH_KEEP_CORETYPE:-0}" != 1 ]; then unset OPENBLAS_CORETYPE; fi
START=$(date +%s)
LOAD_START=$(bench_load)
say() { echo "[$(($(date +%s) - START)) s] $*" >&2; }

bench_build "$BUILD" headlab_engine_bench headlab_cli
HEADLAB_BENCH=$BUILD/bench/headlab_engine_bench
LLAMA_BENCH=$BUILD/bench/llama_bench
bench_llama_peer "$BUILD"
if [ ! -f "$FILE" ]; then
  say "making $FILE (bench/run_quantized_check.sh --shape 3b --make-only)"
  "$ROOT/bench/run_quantized_check.sh" --shape 3b --make-only "$BUILD" "$DIR"
fi

echo "# Q4_K_M benchmark, $(basename "$DIR"), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load average at the start: $LOAD_START"
echo "file: $FILE ($(du -h "$FILE" | cut -f1))"
echo "headlab --version: $("$BUILD/headlab" --version | tr '\n' ' ' | sed 's/ *$//')"
echo "headlab kernels: $("$HEADLAB_BENCH" --kernels) (the caller's OPENBLAS_CORETYPE: ${CALLER_CORETYPE:-unset})"
echo "headlab extra options: ${HEADLAB_ARGS:-none}"
"$LLAMA_BENCH" --info | sed -n '1s/^/llama.cpp: /p; 2s/^/llama.cpp system info: /p'
echo "REPEATS=$REPEATS (median of each process) ROUNDS=$ROUNDS (best round of each), lengths: $LENGTHS, llama.cpp threads: $LLAMA_THREADS"

D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# keep NAME LINE: NAME's result line of this round, its best wall median and the CPU ms of that round.
keep() {
  [ -n "$2" ] || { echo "run_q4km_bench.sh: $1 printed no result" >&2; exit 1; }
  echo "$2" >"$D/$1.line"
  ms=$(bench_field "$2" median_ms)
  b=$(bench_min "$(cat "$D/$1.best" 2>/dev/null || true)" "$ms")
  if [ "$b" = "$ms" ]; then bench_field "$2" cpu_ms >"$D/$1.cpu"; fi
  echo "$b" >"$D/$1.best"
  bench_min "$(cat "$D/$1.rss" 2>/dev/null || true)" "$(bench_field "$2" peak_rss_mb)" >"$D/$1.rss.new"
  mv "$D/$1.rss.new" "$D/$1.rss"
}
val() { cat "$D/$1.$2" 2>/dev/null || echo -; }
ratio() { case "$1$2" in *-*) echo - ;; *) bench_ratio "$1" "$2" ;; esac; }  # "-" when a side did not run
get() { bench_field "$(cat "$D/$1.line" 2>/dev/null || true)" "$2"; }
# max |diff| of the two dumps of the last logits (float32 files) and the spread of llama.cpp's, or "-".
maxdiff() {
  [ -f "$1" ] && [ -f "$2" ] || { echo -; return; }
  /usr/bin/python3 -c 'import sys, numpy as n; a, b = (n.fromfile(p, n.float32).astype(float) for p in sys.argv[1:]); print("%.3g (their standard deviation %.3g)" % (abs(a - b).max(), b.std()))' "$1" "$2"
}
met() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "-") print "-"; else print (r + 0 <= t + 0) ? "yes" : "NO" }'; }
# shellcheck disable=SC2086  # HEADLAB_ARGS is a list of options
run_headlab() { OPENBLAS_NUM_THREADS=2 "$HEADLAB_BENCH" --model "$FILE" --repeats "$REPEATS" $HEADLAB_ARGS "$@"; }

printf '%6s  %10s  %9s  %6s  %4s  %10s  %9s  %6s  %10s  %9s  %6s  %4s  %12s  %8s  %6s  %s\n' tokens headlab_ms llama_ms ratio met \
  headlab_cpu llama_cpu cpu_r headlab_MB llama_MB mem_r met patterns_ms ÷llama pat_MB load >"$D/table"
for T in $LENGTHS; do
  rm -f "$D"/*.best "$D"/*.line "$D"/*.cpu "$D"/*.rss
  load_t=$(cut -d' ' -f1 /proc/loadavg)
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    say "$T tokens, round $r of $ROUNDS: headlab (plain)"
    keep plain "$(run_headlab --tokens "$T" --plain --dump-last "$D/plain.last")"
    say "$T tokens, round $r: llama.cpp"
    keep llama "$("$LLAMA_BENCH" --model "$FILE" --tokens "$T" --repeats "$REPEATS" --threads "$LLAMA_THREADS" --dump-last "$D/llama.last")"
    if [ "$PATTERNS" = yes ]; then
      say "$T tokens, round $r: headlab (every pattern)"
      keep patterns "$(run_headlab --tokens "$T")"
    fi
    r=$((r + 1))
  done
  ratio=$(bench_ratio "$(val plain best)" "$(val llama best)")
  mem=$(bench_ratio "$(val plain rss)" "$(val llama rss)")
  printf '%6s  %10s  %9s  %6s  %4s  %10s  %9s  %6s  %10s  %9s  %6s  %4s  %12s  %8s  %6s  %s\n' "$T" "$(val plain best)" \
    "$(val llama best)" "$ratio" "$(met "$ratio" 1.0)" "$(val plain cpu)" "$(val llama cpu)" \
    "$(bench_ratio "$(val plain cpu)" "$(val llama cpu)")" "$(val plain rss)" "$(val llama rss)" "$mem" "$(met "$mem" 1.2)" \
    "$(val patterns best)" "$(ratio "$(val patterns best)" "$(val llama best)")" "$(val patterns rss)" \
    "$load_t→$(cut -d' ' -f1 /proc/loadavg)" >>"$D/table"
  echo "$T tokens: argmax of the last logits headlab $(get plain argmax_last), llama.cpp $(get llama argmax_last); max |diff| $(maxdiff "$D/plain.last" "$D/llama.last")" >>"$D/diffs"
  say "$T tokens done"
done

echo
echo "## plain forward (logits of every position): headlab ÷ llama.cpp on the same Q4_K_M file"
cat "$D/table"
echo "(ms: wall, the best round's median; cpu: CPU ms of every thread in that round (llama.cpp's include its threads"
echo " spinning at each step's barrier); MB: peak resident memory, the lowest round; targets: ratio ≤ 1.0, mem_r ≤ 1.2;"
echo " patterns_ms: headlab with every attention pattern recorded, no target; load: the 1-minute load average at the"
echo " length's start → end)"
echo "llama.cpp: $(get llama model), $(get llama backend), $(get llama threads) thread(s), F32 KV cache, flash attention off, logits=$(get llama logits)"
echo "headlab weights in memory: matrices $(get plain dtype), compute $(get plain compute), $(get plain weights_mb) MB ($(get plain bytes_per_weight) bytes per weight); llama.cpp after loading: $(get llama load_rss_mb) MB"
echo "headlab's kernels in the runs: cpu=$(get plain cpu) kernels=$(get plain kernels) blas=$(get plain blas)"
echo "the last position's logits, headlab's plain forward against llama.cpp's (which rounds its activations to 8 bits for quantized products; random weights):"
cat "$D/diffs"
echo "load average: $LOAD_START at the start, $(bench_load) at the end; took $(($(date +%s) - START)) s"
