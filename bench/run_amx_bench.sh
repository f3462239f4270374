#!/bin/sh
# bench/run_amx_bench.sh — issue 25: --compute bf16's AMX tile products (headlab_amx_bench)
# against PyTorch's bf16 matmul (bench/torch_matmul_bench.py: oneDNN's AMX kernel), matrix by
# matrix of Llama-3.2-1B at ROWS rows (1,280: the class burst's 40 texts of 32 tokens), in turns,
# ROUNDS rounds, the best of each; and the machine's tile ceilings (operands in registers, from L1,
# from L2, from memory), which say how much of the registers' peak — the class benchmark's FLOP
# bound — any tile product here can reach.
#
#   bench/run_amx_bench.sh [BUILD] [ROWS] [ROUNDS]
#
# BUILD (default build-bench/) is configured with benchmarks on when it is not. On a CPU without
# AMX-BF16 it says so and stops.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-bench}
ROWS=${2:-1280}
ROUNDS=${3:-3}
. "$ROOT/bench/bench_lib.sh"
bench_build "$BUILD" headlab_amx_bench
BIN=$BUILD/bench/headlab_amx_bench
bench_torch_setup "$BIN"
echo "load: $(bench_load)"

H=""; P=""
r=1
while [ "$r" -le "$ROUNDS" ]; do
  out=$("$BIN" --rows "$ROWS" --repeats 3)
  case "$out" in note:*) echo "$out"; exit 0 ;; esac
  H="$H$out
"
  P="$P$(bench_torch "$ROOT/bench/torch_matmul_bench.py" --rows "$ROWS" --repeats 3)
"
  r=$((r + 1))
done

# best KEY_PATTERN FIELD TEXT: the largest FIELD among the lines matching the pattern
best() { echo "$3" | grep -- "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | sort -g | tail -n 1; }
echo
echo "the machine's AMX ceilings (the best of $ROUNDS rounds; of the registers' peak):"
for c in registers l1 l2 memory; do
  g=$(best "^ceiling=$c " gflops "$H")
  printf '  %-10s %6s GFLOPS  %s\n' "$c" "$g" "$(bench_ratio "$g" "$(best '^ceiling=registers ' gflops "$H")")"
done
echo
printf '%-8s %22s %22s %18s %10s\n' matrix "headlab amx GFLOPS" "PyTorch bf16 GFLOPS" "headlab/PyTorch" "of peak"
for m in qkv o gate_up down unembed forward; do
  h=$(best "^matrix=$m " gflops "$H")
  t=$(best "^matrix=$m .*dtype=bfloat16" gflops "$P")
  printf '%-8s %22s %22s %18s %10s\n' "$m" "$h" "$t" "$(bench_ratio "$h" "$t")" "$(best "^matrix=$m " of_peak "$H")"
done
echo "(headlab/PyTorch: throughput, > 1 is faster; PyTorch's float32 sgemm for scale: $(best '^matrix=forward .*dtype=float32' gflops "$P") GFLOPS a forward)"
echo "load: $(bench_load)"
