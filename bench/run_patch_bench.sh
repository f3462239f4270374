#!/bin/sh
# bench/run_patch_bench.sh — issue 27's patching benchmark: activation-patching sweeps on
# GPT-2 small's shape (random F32 weights, bench/torch_patch_bench.py make) over an IOI-like
# batch (8 prompt pairs of 15 tokens, BOS included), in headlab (`headlab patch --prompts`)
# and in TransformerLens's loop written out in PyTorch (bench/torch_patch_bench.py run: one
# full forward of the corrupted batch per index, a hook overwriting the slice), in the same
# run: resid_pre by (layer, pos), every head's z over all positions, and heads by position.
# Target (issue 27): headlab's sweep <= 0.1 of the loop's time.
#
# The sweep's time on each side leaves the model's load out: PyTorch times its loop itself;
# headlab's is the wall time of the sweep's process less that of a sweep of one index
# (resid_pre --layers 0 --positions 0: the load and the clean and corrupted runs). Peak RSS is
# each process's. max |diff| compares the two sides' values (TL's axis order).
# headlab runs as `headlab patch` does by default: from its weights cache beside the model
# (formats/weights_cache.h), written by a first run before the rounds and mapped by the others,
# so the pages of the 50,257-row embedding a sweep never reads (it reads its tokens' rows and
# the answer's and wrong token's) are never brought into memory. "cold MB" is the peak of the
# one-index run loading from model.safetensors instead (--no-cache: every weight read and packed
# into the process's own memory), for comparison.
#
#   bench/run_patch_bench.sh [BUILD_DIR] [ROUNDS]      (build, 1)
#     --whats "resid_pre z_all_pos"   the sweeps (default "resid_pre z_all_pos z_by_pos")
#     --tl-sample K                   time TL's loop on K indexes of a longer sweep, evenly spread,
#                                     and extrapolate linearly (each index is one identical forward;
#                                     z_by_pos's 2,160 take about half an hour): its time is marked
#                                     "~" and max|diff| compares those K indexes only
# The model (0.5 GB) is made when missing in $HEADLAB_BENCH_MODELS/gpt2-small (default
# /tmp/headlab-bench). Needs Debian's python3-torch; bench/bench_lib.sh gives it its fair
# configuration. Run it under `nice -n 10` on a shared machine.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"

WHATS="resid_pre z_all_pos z_by_pos"
SAMPLE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --whats) WHATS=$2; shift 2 ;;
    --tl-sample) SAMPLE=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
BUILD=${1:-$ROOT/build}
ROUNDS=${2:-1}
BIN=$BUILD/headlab
[ -x "$BIN" ] || { echo "no $BIN: build headlab first (cmake --build $BUILD)"; exit 1; }
bench_build "$BUILD" headlab_engine_bench
bench_torch_setup "$BUILD/bench/headlab_engine_bench"
[ "$TORCH" = yes ] || { echo "this benchmark needs PyTorch for its peer"; exit 1; }
DIR=${HEADLAB_BENCH_MODELS:-/tmp/headlab-bench}/gpt2-small
if [ ! -f "$DIR/prompts.jsonl" ]; then
  echo "making $DIR (GPT-2 small's shape, random F32 weights) ..." >&2
  /usr/bin/python3 "$ROOT/bench/torch_patch_bench.py" make "$DIR"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# headlab_patch WHAT OUT [ARGS...]: "seconds peak_kb" of one `headlab patch` process
headlab_patch() {
  _what=$1; _out=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$BIN" patch --model "$DIR" --prompts "$DIR/prompts.jsonl" --what "$_what" \
    --format json --out "$_out" "$@" 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
  cat "$TMP/time"
}
# the weights cache, written when missing or stale, and the cold load's peak
headlab_patch resid_pre "$TMP/w.json" --layers 0 --positions 0 >/dev/null
cold=$(headlab_patch resid_pre "$TMP/w.json" --layers 0 --positions 0 --no-cache)
cold_mb=$(( ${cold#* } / 1024 ))

printf '%-10s %9s %12s %12s %8s %10s %10s %8s %8s %10s\n' what indexes "headlab s" "TL loop s" ratio "headlab MB" "torch MB" "mem" "cold MB" "max|diff|"
for what in $WHATS; do
  best_h=""; best_t=""; mem_h=""; mem_t=""
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    echo "round $r: $what (load $(bench_load))" >&2
    full=$(headlab_patch "$what" "$TMP/h.json")
    base=$(headlab_patch resid_pre "$TMP/h1.json" --layers 0 --positions 0)
    s=$(awk -v a="${full% *}" -v b="${base% *}" 'BEGIN { d = a - b; if (d < 0.005) d = 0.005; printf "%.3f", d }')
    best_h=$(bench_min "$best_h" "$s")
    mem_h=${full#* }
    P=$(bench_torch "$ROOT/bench/torch_patch_bench.py" run "$DIR" --what "$what" --out "$TMP/t.json" --sample "$SAMPLE")
    echo "  headlab ${s} s (peak ${full#* } KB); TL loop: $P" >&2
    best_t=$(bench_min "$best_t" "$(bench_field "$P" sweep_s)")
    sampled=$(bench_field "$P" sampled)
    mem_t=$(bench_field "$P" peak_rss_mb)
    r=$((r + 1))
  done
  cmp=$(/usr/bin/python3 - "$TMP/h.json" "$TMP/t.json" <<'EOF'
import json, sys
import numpy as np
h = np.array(json.load(open(sys.argv[1]))["values"], dtype=float)
t = np.array(json.load(open(sys.argv[2]))["values"], dtype=float)
print(h.size, "%.1e" % float(np.nanmax(np.abs(h - t))) if h.shape == t.shape else "shape %s vs %s" % (h.shape, t.shape))
EOF
)
  mark=""
  [ -n "$sampled" ] && mark="~" && echo "note: TL's loop on $what ran $sampled of ${cmp% *} indexes; its time is extrapolated linearly" >&2
  printf '%-10s %9s %12s %12s %8s %10s %10s %8s %8s %10s\n' "$what" "${cmp% *}" "$best_h" "$mark$best_t" "$(bench_ratio "$best_h" "$best_t" 3)" \
    "$((mem_h / 1024))" "$mem_t" "$(bench_ratio "$((mem_h / 1024))" "$mem_t")" "$cold_mb" "${cmp#* }"
done
echo "targets (issue 27): the sweep <= 0.1 of the TL loop's time; peak memory <= 0.6 (load average now: $(bench_load))"
echo "(headlab MB: from the weights cache, as \`headlab patch\` runs by default; cold MB: the one-index run loading model.safetensors with --no-cache)"
[ "$SAMPLE" != 0 ] && echo "~: TL's loop timed on $SAMPLE indexes and extrapolated linearly to the whole sweep"
exit 0
