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
# HEADLAB_BENCH_BASELINE=path/to/an/older/headlab_engine_bench adds that build as a third side,
# in the same turns (a before/after comparison of a change: its time, ratio and memory).
# HEADLAB_BENCH_DTYPE=bf16 (or f16) runs headlab with --dtype (its matrices rounded to 16 bits);
# HEADLAB_BENCH_COMPUTE=bf16 with --compute bf16 as well (the products' inputs rounded to
# bfloat16: AVX512_BF16 dot products where the CPU has them; needs HEADLAB_BENCH_DTYPE=bf16).
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

BASE=${HEADLAB_BENCH_BASELINE:-}
DTYPE=${HEADLAB_BENCH_DTYPE:-auto}
COMPUTE=${HEADLAB_BENCH_COMPUTE:-f32}
echo "headlab: $("$BUILD/bench/headlab_engine_bench" --kernels), --dtype $DTYPE --compute $COMPUTE"
printf '%7s  %12s  %12s  %7s  %12s  %12s  %s' tokens headlab_ms pytorch_ms ratio headlab_MB pytorch_MB same_argmax
[ -n "$BASE" ] && printf '  %12s  %7s  %12s' baseline_ms ratio baseline_MB
echo
for T in 16 64 256 1024; do
  hm=""; pm=""; bm=""; H=""; P=""; B=""
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    H=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_engine_bench" --model "$MODEL" --tokens $T --repeats $REPEATS --dtype "$DTYPE" --compute "$COMPUTE")
    hm=$(bench_min "$hm" "$(bench_field "$H" median_ms)")
    if [ -n "$BASE" ]; then
      B=$(OPENBLAS_NUM_THREADS=2 "$BASE" --model "$MODEL" --tokens $T --repeats $REPEATS)
      bm=$(bench_min "$bm" "$(bench_field "$B" median_ms)")
    fi
    P=$(bench_torch "$ROOT/bench/torch_engine_bench.py" --model "$MODEL" --tokens $T --repeats $REPEATS)
    pm=$(bench_min "$pm" "$(bench_field "$P" median_ms)")
    r=$((r + 1))
  done
  same=$([ "$(bench_field "$H" argmax_last)" = "$(bench_field "$P" argmax_last)" ] && echo yes || echo NO)
  printf '%7s  %12s  %12s  %7s  %12s  %12s  %s' $T "$hm" "$pm" "$(bench_ratio "$hm" "$pm")" \
    "$(bench_field "$H" peak_rss_mb)" "$(bench_field "$P" peak_rss_mb)" "$same"
  [ -n "$BASE" ] && printf '  %12s  %7s  %12s' "$bm" "$(bench_ratio "$bm" "$pm")" "$(bench_field "$B" peak_rss_mb)"
  echo
done
echo "(OpenBLAS kernels: headlab $(bench_field "$H" blas), PyTorch $(bench_field "$P" blas); headlab's products: $(bench_field "$H" kernels), weights $(bench_field "$H" dtype) $(bench_field "$H" weights_mb) MB; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} in the caller's environment; load average: $(bench_load))"
