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
# HEADLAB_BENCH_DTYPE=bf16 (or f16) runs headlab with --dtype (its matrices rounded to 16 bits).
#
# PyTorch runs in its fair configuration on 2 cores: 2 threads, OMP_WAIT_POLICY=PASSIVE
# and jemalloc that keeps its pages (as installed, it busy-waits and page-faults).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-bench}
REPEATS=${2:-5}
ROUNDS=${3:-2}
MODEL=${HEADLAB_BENCH_MODEL:-/tmp/headlab-bench-gpt2-random}

if [ ! -x "$BUILD/bench/headlab_engine_bench" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DHEADLAB_BUILD_BENCH=ON -DHEADLAB_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD" -j2 --target headlab_engine_bench >/dev/null
fi
if [ ! -f "$MODEL/model.safetensors" ]; then
  echo "making random GPT-2-small weights in $MODEL (500 MB) ..."
  "$BUILD/bench/headlab_engine_bench" --make-model "$MODEL"
fi
JEMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null || true)
if [ -z "$JEMALLOC" ]; then
  echo "note: libjemalloc2 is not installed (apt-get install libjemalloc2); PyTorch runs with glibc malloc"
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "note: Debian's python3-torch is not installed: only headlab's figures are printed"
  TORCH=no
else
  TORCH=yes
fi

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# The kernels headlab chooses (by the CPU's features, or the user's OPENBLAS_CORETYPE);
# PyTorch gets the same through OPENBLAS_CORETYPE: Debian's PyTorch uses the same OpenBLAS.
BLAS_CORE=$("$BUILD/bench/headlab_engine_bench" --blas | sed -n 1p)
echo "headlab: $("$BUILD/bench/headlab_engine_bench" --blas | sed -n 2p)"
echo "PyTorch: OPENBLAS_CORETYPE=$BLAS_CORE"

BASE=${HEADLAB_BENCH_BASELINE:-}
DTYPE=${HEADLAB_BENCH_DTYPE:-auto}
echo "headlab: $("$BUILD/bench/headlab_engine_bench" --blas | sed -n 3p), --dtype $DTYPE"
printf '%7s  %12s  %12s  %7s  %12s  %12s  %s' tokens headlab_ms pytorch_ms ratio headlab_MB pytorch_MB same_argmax
[ -n "$BASE" ] && printf '  %12s  %7s  %12s' baseline_ms ratio baseline_MB
echo
min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || (b != "nan" && b + 0 < a + 0)) print b; else print a }'; }
for T in 16 64 256 1024; do
  hm=""; pm=""; bm=""; H=""; P=""; B=""
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    H=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_engine_bench" --model "$MODEL" --tokens $T --repeats $REPEATS --dtype "$DTYPE")
    hm=$(min "$hm" "$(field "$H" median_ms)")
    if [ -n "$BASE" ]; then
      B=$(OPENBLAS_NUM_THREADS=2 "$BASE" --model "$MODEL" --tokens $T --repeats $REPEATS)
      bm=$(min "$bm" "$(field "$B" median_ms)")
    fi
    if [ "$TORCH" = yes ]; then
      P=$(OPENBLAS_CORETYPE=$BLAS_CORE OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
          LD_PRELOAD=$JEMALLOC /usr/bin/python3 "$ROOT/bench/torch_engine_bench.py" --model "$MODEL" --tokens $T --repeats $REPEATS)
      pm=$(min "$pm" "$(field "$P" median_ms)")
    else
      P="median_ms=nan peak_rss_mb=nan argmax_last=nan"
      pm=nan
    fi
    r=$((r + 1))
  done
  ratio=$(awk -v a="$hm" -v b="$pm" 'BEGIN { if (b == "nan") print "-"; else printf "%.2f", a / b }')
  same=$([ "$(field "$H" argmax_last)" = "$(field "$P" argmax_last)" ] && echo yes || echo NO)
  printf '%7s  %12s  %12s  %7s  %12s  %12s  %s' $T "$hm" "$pm" "$ratio" "$(field "$H" peak_rss_mb)" "$(field "$P" peak_rss_mb)" "$same"
  if [ -n "$BASE" ]; then
    printf '  %12s  %7s  %12s' "$bm" "$(awk -v a="$bm" -v b="$pm" 'BEGIN { if (b == "nan") print "-"; else printf "%.2f", a / b }')" "$(field "$B" peak_rss_mb)"
  fi
  echo
done
echo "(OpenBLAS kernels: headlab $(field "$H" blas), PyTorch $(field "$P" blas); headlab's products: $(field "$H" kernels), weights $(field "$H" dtype) $(field "$H" weights_mb) MB; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} in the caller's environment; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
