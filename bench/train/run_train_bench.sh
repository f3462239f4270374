#!/usr/bin/env bash
# bench/train/run_train_bench.sh — headlab's training throughput next to PyTorch's, same
# models, same machine, same run. PyTorch gets its fair configuration: 2 threads,
# OMP_WAIT_POLICY=PASSIVE, jemalloc with decay off (as installed it busy-waits and
# page-faults). Needs a build with -DHEADLAB_BUILD_BENCH=ON and Debian's python3-torch.
#   bench/train/run_train_bench.sh [build-dir] [steps]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
steps="${2:-10}"
bin="$build/bench/headlab_train_bench"
[ -x "$bin" ] || { echo "no $bin: configure with -DHEADLAB_BUILD_BENCH=ON and build headlab_train_bench" >&2; exit 1; }
jemalloc=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null || true)
printf "%-8s %14s %14s %8s\n" model "headlab tok/s" "PyTorch tok/s" ratio
for which in attn mlp builtin; do
  ours=$("$bin" "$which" "$steps" | awk '{print $2}')
  theirs=$(OMP_WAIT_POLICY=PASSIVE LD_PRELOAD="$jemalloc" MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
           /usr/bin/python3 "$here/torch_train_bench.py" "$which" "$steps" | awk '{print $2}')
  printf "%-8s %14s %14s %8.2f\n" "$which" "$ours" "$theirs" "$(echo "$ours / $theirs" | bc -l)"
done
