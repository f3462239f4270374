#!/usr/bin/env bash
# bench/train/run_train_bench.sh — headlab's training throughput next to PyTorch's, same
# models, same machine, same run. PyTorch gets its fair configuration: 2 threads,
# OMP_WAIT_POLICY=PASSIVE, jemalloc with decay off (as installed it busy-waits and
# page-faults). Needs a build with -DHEADLAB_BUILD_BENCH=ON and Debian's python3-torch.
#   bench/train/run_train_bench.sh [build-dir] [steps] [rounds]
# Shared 2-core machines drift by tens of percent from minute to minute, so each model runs
# `rounds` times on each side, the two sides taking turns, and the table gives the median
# round of each (every round's figure is the median step of `steps`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
steps="${2:-10}"
rounds="${3:-3}"
bin="$build/bench/headlab_train_bench"
[ -x "$bin" ] || { echo "no $bin: configure with -DHEADLAB_BUILD_BENCH=ON and build headlab_train_bench" >&2; exit 1; }
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "no PyTorch for /usr/bin/python3: apt-get install python3-torch" >&2; exit 1; }
jemalloc=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null || true)
[ -n "$jemalloc" ] || echo "warning: no libjemalloc2, PyTorch runs without its fair allocator (apt-get install libjemalloc2)" >&2
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The kernels headlab chooses (by the CPU's features, or the user's OPENBLAS_CORETYPE);
# PyTorch gets the same through OPENBLAS_CORETYPE: Debian's PyTorch uses the same OpenBLAS.
blas_core=$("$bin" blas | sed -n 1p)
echo "headlab: $("$bin" blas | sed -n 2p); PyTorch: OPENBLAS_CORETYPE=$blas_core"
printf "%-8s %14s %14s %8s   %s\n" model "headlab tok/s" "PyTorch tok/s" ratio "rounds (headlab / PyTorch)"
for which in attn mlp builtin; do
  ours=() theirs=()
  for ((r = 0; r < rounds; r++)); do
    ours+=("$("$bin" "$which" "$steps" | awk '{print $2}')")
    theirs+=("$(OPENBLAS_CORETYPE="$blas_core" OMP_WAIT_POLICY=PASSIVE LD_PRELOAD="$jemalloc" MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
               /usr/bin/python3 "$here/torch_train_bench.py" "$which" "$steps" | awk '{print $2}')")
  done
  o=$(printf "%s\n" "${ours[@]}" | median)
  t=$(printf "%s\n" "${theirs[@]}" | median)
  printf "%-8s %14s %14s %8.2f   %s / %s\n" "$which" "$o" "$t" "$(echo "$o / $t" | bc -l)" "${ours[*]}" "${theirs[*]}"
done
# TrainInduction's recipe (tests/train/train_induction_test.cpp has no clock): its wall time
echo "TrainInduction recipe (1,000 steps, 2 layers x 4 heads, C = 128, T = 64, batch 32, attention-only):"
"$bin" induction
