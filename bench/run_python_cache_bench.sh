#!/bin/sh
# bench/run_python_cache_bench.sh — issue 28's figure: run_with_cache of every hook from Python
# (the module, with the logits) against PyTorch's forward with hooks keeping the same tensors
# (bench/torch_cache_bench.py, its fair configuration from bench_lib.sh), on the GPT-2-small
# shape (random weights, batch 1) at 128 tokens; the engine's own time (bench/cache_bench.cpp,
# no logits) beside the module's without logits gives the calling overhead, and one call on the
# built-in model at one token beside the same call in C++ (bench/engine_call_time.cpp) its
# floor; the engines take turns for HEADLAB_BENCH_ROUNDS rounds (3), the best of each printed.
# The one-token call is timed in every round right after Python's, in wall and in CPU time:
# on a shared machine a round's wall time doubles whenever more threads want the cores than
# there are (the engine's pool wakes a worker per product), so a Python round beside an engine
# round taken at another moment showed twice the engine's time; CPU time moves less.
# Targets: Python / PyTorch <= 0.5, overhead <= 50 us.
#
#   bench/run_python_cache_bench.sh WORK [BUILD_DIR] [REPEATS] [TOKENS]
#   WORK: what tests/python/run.sh made (BUILD/python-check): the module in WORK/site, the
#   installed library in WORK/prefix (bench/engine_call_time.cpp is built against it)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"
WORK=$1
SITE=$WORK/site
BUILD=${2:-$ROOT/build-bench}
REPEATS=${3:-5}
T=${4:-128}
MODEL=${HEADLAB_BENCH_MODEL:-/tmp/headlab-bench-gpt2-random}
bench_build "$BUILD" headlab_engine_bench headlab_cache_bench
if [ ! -f "$MODEL/model.safetensors" ]; then
  echo "making random GPT-2-small weights in $MODEL (500 MB) ..."
  "$BUILD/bench/headlab_engine_bench" --make-model "$MODEL"
fi
bench_torch_setup "$BUILD/bench/headlab_engine_bench"
c++ -O2 -std=c++20 -o "$WORK/engine_call_time" "$ROOT/bench/engine_call_time.cpp" \
  $(PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig" pkg-config --cflags --libs headlab)
# the engines take turns for ROUNDS rounds; the best round of each is printed
ROUNDS=${HEADLAB_BENCH_ROUNDS:-3}
hm=""; ym=""; yn=""; pm=""; yc=""; yc_cpu=""; ec=""; ec_cpu=""; r=0
while [ $r -lt "$ROUNDS" ]; do
  H=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_cache_bench" --model "$MODEL" --tokens $T --repeats $REPEATS)
  Y=$(cd "$ROOT/bench" && PYTHONPATH=$SITE OPENBLAS_CORETYPE=$BLAS_CORE /usr/bin/python3 "$ROOT/bench/python_cache_bench.py" \
    --model "$MODEL" --tokens $T --repeats $REPEATS)
  E=$(OPENBLAS_CORETYPE=$BLAS_CORE "$WORK/engine_call_time" "$ROOT/models/headlab-tiny")  # beside Python's tiny call
  P=$(cd "$ROOT/bench" && bench_torch "$ROOT/bench/torch_cache_bench.py" --model "$MODEL" --tokens $T --repeats $REPEATS)
  hm=$(bench_min "$hm" "$(bench_field "$H" median_ms)"); ym=$(bench_min "$ym" "$(bench_field "$Y" median_ms)")
  yn=$(bench_min "$yn" "$(bench_field "$Y" no_logits_ms)"); pm=$(bench_min "$pm" "$(bench_field "$P" median_ms)")
  yc=$(bench_min "$yc" "$(bench_field "$Y" tiny_call_us)"); yc_cpu=$(bench_min "$yc_cpu" "$(bench_field "$Y" tiny_call_cpu_us)")
  ec=$(bench_min "$ec" "$(bench_field "$E" engine_call_us)"); ec_cpu=$(bench_min "$ec_cpu" "$(bench_field "$E" engine_call_cpu_us)")
  r=$((r + 1))
done
echo "last round: C++ engine (cache_bench, no logits):   $H"
echo "last round: Python module:                         $Y"
echo "last round: the one-token call in C++:             $E"
echo "last round: PyTorch with hooks:                    $P"
py=$ym; pt=$pm
echo "run_with_cache at $T tokens: Python $py ms, PyTorch $pt ms, ratio $(bench_ratio "$py" "$pt") (target <= 0.5)"
echo "calling overhead: Python without logits $yn ms vs the engine's $hm ms (best rounds);" \
  "one call on the built-in model at one token (best rounds): Python $yc us, the engine alone $ec us;" \
  "CPU time $yc_cpu us and $ec_cpu us (target: <= 50 us more)"
echo "same resid_post sum: Python $(bench_field "$Y" check_sum), PyTorch $(bench_field "$P" check_sum); load average: $(bench_load)"
