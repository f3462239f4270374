#!/bin/sh
# bench/run_cache_bench.sh — issue 27's cache figure: `headlab cache` of every hook against
# PyTorch's forward with hooks keeping the same tensors (TransformerLens's run_with_cache), on
# the GPT-2-small shape (random weights, batch 1) at 128 tokens (and TOKENS). Prints both
# times, their ratio (target: headlab / PyTorch <= 0.5), the peak memory of each and its ratio
# (target <= 0.6), and whether the last layer's resid_post sums alike. Engines take turns for
# ROUNDS rounds; the best round of each is printed. headlab loads as `headlab cache` does by
# default, from its weights cache beside the model (written by a first run before the rounds),
# mapped: the embedding's rows no hook reads stay out of memory. cold_MB is the peak of one run
# loading model.safetensors into the process's own memory instead (--no-cache).
#
#   bench/run_cache_bench.sh [BUILD_DIR] [REPEATS] [ROUNDS] [TOKENS...]   (build-bench, 5, 2, 128)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"
BUILD=${1:-$ROOT/build-bench}
REPEATS=${2:-5}
ROUNDS=${3:-2}
[ $# -ge 3 ] && shift 3 || shift $#
LENGTHS=${*:-128}
MODEL=${HEADLAB_BENCH_MODEL:-/tmp/headlab-bench-gpt2-random}

bench_build "$BUILD" headlab_engine_bench headlab_cache_bench
if [ ! -f "$MODEL/model.safetensors" ]; then
  echo "making random GPT-2-small weights in $MODEL (500 MB) ..."
  "$BUILD/bench/headlab_engine_bench" --make-model "$MODEL"
fi
bench_torch_setup "$BUILD/bench/headlab_engine_bench"
# the weights cache, written when missing or stale
OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_cache_bench" --model "$MODEL" --tokens 1 --repeats 1 >/dev/null
printf '%7s  %8s  %11s  %11s  %7s  %11s  %11s  %7s  %8s  %9s  %s\n' tokens tensors headlab_ms pytorch_ms ratio headlab_MB \
  pytorch_MB ratio cold_MB cache_MB same_sum
for T in $LENGTHS; do
  hm=""; pm=""; H=""; P=""
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    H=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_cache_bench" --model "$MODEL" --tokens $T --repeats $REPEATS)
    hm=$(bench_min "$hm" "$(bench_field "$H" median_ms)")
    P=$(cd "$ROOT/bench" && bench_torch "$ROOT/bench/torch_cache_bench.py" --model "$MODEL" --tokens $T --repeats $REPEATS)
    pm=$(bench_min "$pm" "$(bench_field "$P" median_ms)")
    r=$((r + 1))
  done
  C=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_cache_bench" --model "$MODEL" --tokens $T --repeats 1 --no-cache)
  same=$(awk -v a="$(bench_field "$H" check_sum)" -v b="$(bench_field "$P" check_sum)" \
    'BEGIN { d = a - b; if (d < 0) d = -d; s = (b < 0 ? -b : b); print (b != "" && d <= 1e-3 * (s + 1)) ? "yes" : "NO" }')
  printf '%7s  %8s  %11s  %11s  %7s  %11s  %11s  %7s  %8s  %9s  %s\n' $T "$(bench_field "$H" tensors)" "$hm" "$pm" \
    "$(bench_ratio "$hm" "$pm")" "$(bench_field "$H" peak_rss_mb)" "$(bench_field "$P" peak_rss_mb)" \
    "$(bench_ratio "$(bench_field "$H" peak_rss_mb)" "$(bench_field "$P" peak_rss_mb)")" "$(bench_field "$C" peak_rss_mb)" \
    "$(bench_field "$H" cache_mb)" "$same"
done
echo "(headlab's plain forward at the last length: $(bench_field "$H" plain_ms) ms; PyTorch keeps $(bench_field "$P" tensors) tensors, $(bench_field "$P" cache_mb) MB; load average: $(bench_load))"
