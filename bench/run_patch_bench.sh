#!/bin/sh
# bench/run_patch_bench.sh — activation patching (research/patching.h) on the GPT-2-small shape
# (random weights) with an IOI-like batch, headlab next to TransformerLens's loop in PyTorch
# (bench/torch_patch_bench.py, the same weights and ids) and next to headlab running that loop
# itself (--tl-loop: one full forward per index, every logit). Prints each time, the ratios
# (below 1: headlab is faster) and whether the values agree (their sums).
#
#   bench/run_patch_bench.sh [BUILD_DIR] [PAIRS] [TOKENS] [WHATS] [LAYERS]
#       (build-bench, 8, 15, "resid_pre z_all_pos z_by_pos", all; z_by_pos is 12x resid_pre's runs:
#        LAYERS=10-11 keeps a run short on a shared machine)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"
BUILD=${1:-$ROOT/build-bench}
PAIRS=${2:-8}
TOKENS=${3:-15}
WHATS=${4:-resid_pre z_all_pos z_by_pos}
LAYERS=${5:-}
MODEL=${HEADLAB_BENCH_MODEL:-/tmp/headlab-bench-gpt2-random}

bench_build "$BUILD" headlab_engine_bench headlab_patch_bench
if [ ! -f "$MODEL/model.safetensors" ]; then
  echo "making random GPT-2-small weights in $MODEL (500 MB) ..."
  "$BUILD/bench/headlab_engine_bench" --make-model "$MODEL"
fi
bench_torch_setup "$BUILD/bench/headlab_engine_bench"
LARG=""
[ -n "$LAYERS" ] && LARG="--layers $LAYERS"
printf '%-10s %6s %10s %10s %10s %9s %9s  %s\n' what runs headlab_ms tl_loop_ms torch_ms vs_torch vs_loop "sums (headlab, torch)"
for W in $WHATS; do
  H=$("$BUILD/bench/headlab_patch_bench" --model "$MODEL" --what "$W" --pairs "$PAIRS" --tokens "$TOKENS" $LARG)
  HL=$("$BUILD/bench/headlab_patch_bench" --model "$MODEL" --what "$W" --pairs "$PAIRS" --tokens "$TOKENS" $LARG --tl-loop)
  P=""
  [ "$TORCH" = yes ] && P=$(bench_torch "$ROOT/bench/torch_patch_bench.py" --model "$MODEL" --what "$W" \
    --pairs "$PAIRS" --tokens "$TOKENS" ${LAYERS:+--layers "$LAYERS"})
  h=$(bench_field "$H" wall_ms); hl=$(bench_field "$HL" wall_ms); p=$(bench_field "$P" wall_ms)
  printf '%-10s %6s %10s %10s %10s %9s %9s  %s %s\n' "$W" "$(bench_field "$H" runs)" "$h" "$hl" "${p:--}" \
    "$(bench_ratio "$h" "$p" 3)" "$(bench_ratio "$h" "$hl" 3)" "$(bench_field "$H" checksum)" "$(bench_field "$P" checksum)"
done
