#!/bin/sh
# bench/run_python_cache_bench.sh — issue 28's figure: run_with_cache of every hook from Python
# (the module, with the logits) against PyTorch's forward with hooks keeping the same tensors
# (bench/torch_cache_bench.py, its fair configuration from bench_lib.sh), on the GPT-2-small
# shape (random weights, batch 1) at 128 tokens; the engine's own time (bench/cache_bench.cpp,
# no logits) beside the module's without logits gives the calling overhead, and one call on the
# built-in model at one token its floor. Targets: Python / PyTorch <= 0.5, overhead <= 50 us.
#
#   bench/run_python_cache_bench.sh SITE [BUILD_DIR] [REPEATS] [TOKENS]
#   SITE: where the module is installed (tests/python/run.sh leaves it in BUILD/python-check/site)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"
SITE=$1
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
H=$(OPENBLAS_NUM_THREADS=2 "$BUILD/bench/headlab_cache_bench" --model "$MODEL" --tokens $T --repeats $REPEATS)
Y=$(cd "$ROOT/bench" && PYTHONPATH=$SITE OPENBLAS_CORETYPE=$BLAS_CORE /usr/bin/python3 "$ROOT/bench/python_cache_bench.py" \
  --model "$MODEL" --tokens $T --repeats $REPEATS)
P=$(cd "$ROOT/bench" && bench_torch "$ROOT/bench/torch_cache_bench.py" --model "$MODEL" --tokens $T --repeats $REPEATS)
echo "C++ engine (cache_bench, no logits):   $H"
echo "Python module:                         $Y"
echo "PyTorch with hooks:                    $P"
py=$(bench_field "$Y" median_ms); pt=$(bench_field "$P" median_ms)
echo "run_with_cache at $T tokens: Python $py ms, PyTorch $pt ms, ratio $(bench_ratio "$py" "$pt") (target <= 0.5)"
echo "calling overhead: Python without logits $(bench_field "$Y" no_logits_ms) ms vs the engine's $(bench_field "$H" median_ms) ms;" \
  "one call on the built-in model at one token $(bench_field "$Y" tiny_call_us) us (target <= 50 us beyond the engine's)"
echo "same resid_post sum: Python $(bench_field "$Y" check_sum), PyTorch $(bench_field "$P" check_sum); load average: $(bench_load)"
