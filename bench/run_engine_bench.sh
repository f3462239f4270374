#!/bin/sh
# bench/run_engine_bench.sh — headlab's forward vs PyTorch's on the GPT-2-small shape
# (12 layers, 12 heads, 768 wide, random weights, batch 1, every pattern recorded) at
# 16, 64, 256 and 1024 tokens, one process per length and engine; prints both times,
# their ratio (headlab / PyTorch: below 1 is faster) and the peak memory of each.
# Each process reports the median of REPEATS forwards after a warm-up; the engines take
# turns for ROUNDS rounds and the best round of each is printed, so a busy machine slows
# both alike rather than whichever ran during a burst.
#
#   bench/run_engine_bench.sh [BUILD_DIR] [REPEATS] [ROUNDS]   (build-bench, 5, 2)
#
# PyTorch runs in its fair configuration on 2 cores (bench/bench_lib.sh says which).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"
BUILD=${1:-$ROOT/build-bench}
REPEATS=${2:-5}
ROUNDS=${3:-2}
MODEL=${HEADLAB_BENCH_MODEL:-/tmp/headlab-bench-gpt2-random}

bench_build "$BUILD" headlab_engine_bench
if [ ! -f "$MODEL/model.safetensors" ]; then
  echo "making random GPT-2-small weights in $MODEL (500 MB) ..."
  "$BUILD/bench/headlab_engine_bench" --make-model "$MODEL"
fi
bench_torch_setup "$BUILD/bench/headlab_engine_bench"

printf '%7s  %12s  %12s  %7s  %12s  %12s  %s\n' tokens headlab_ms pytorch_ms ratio headlab_MB pytorch_MB same_argmax
for T in 16 64 256 1024; do
  hm=""; pm=""; H=""; P=""
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    H=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_engine_bench" --model "$MODEL" --tokens $T --repeats $REPEATS)
    hm=$(bench_min "$hm" "$(bench_field "$H" median_ms)")
    P=$(bench_torch "$ROOT/bench/torch_engine_bench.py" --model "$MODEL" --tokens $T --repeats $REPEATS)
    pm=$(bench_min "$pm" "$(bench_field "$P" median_ms)")
    r=$((r + 1))
  done
  same=$([ "$(bench_field "$H" argmax_last)" = "$(bench_field "$P" argmax_last)" ] && echo yes || echo NO)
  printf '%7s  %12s  %12s  %7s  %12s  %12s  %s\n' $T "$hm" "$pm" "$(bench_ratio "$hm" "$pm")" \
    "$(bench_field "$H" peak_rss_mb)" "$(bench_field "$P" peak_rss_mb)" "$same"
done
echo "(OpenBLAS kernels: headlab $(bench_field "$H" blas), PyTorch $(bench_field "$P" blas); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} in the caller's environment; load average: $(bench_load))"
