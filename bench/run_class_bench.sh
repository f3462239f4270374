#!/bin/sh
# bench/run_class_bench.sh — issue 25's class benchmark: `headlab serve` with a model a class
# cares about, and a class of CLIENTS learners clicking at the same moment (bench/class_bench.py):
# a burst of distinct ~32-token texts, then a burst of the lesson's default text, each request
# asking for every head of one layer. Prints p50/p99, the 503s, the requests per second, and
# the FLOP bound (the products the burst needs over the machine's measured peak,
# `headlab_matmul_bench --peak`). Targets: no 503 in either burst; throughput >= 0.7 of the
# FLOP bound; with --compute bf16 on this CPU p99 <= 10 s distinct, <= 1 s shared.
# Last, the ceiling beside it: the same FLOP bound ratio for the products alone, all the burst's
# rows in one batch (headlab_matmul_bench on Llama-3.2-1B's matrices: OpenBLAS's sgemm, the peer,
# and headlab's two arithmetics), which no burst can pass, since it also runs attention, norms,
# SwiGLU and the answers. PRODUCTS_SHAPE=none skips it (a MODEL of another shape).
#
#   bench/run_class_bench.sh MODEL [BUILD] [CLIENTS]
#
# BUILD has the headlab binary (default build/); the peak comes from build-bench/ (made when
# missing, benchmarks on). HEADLAB_SERVE_ARGS adds options to every serve (e.g. "--dtype bf16").
# MODEL: a folder or a .gguf (e.g. bench/llama_1b_model.py's Llama-3.2-1B shape, BF16).
# Runs twice: `--compute f32`, then `--compute bf16` (serve's default where it outruns f32) where the CPU has
# AVX512_BF16. Each on a fresh server without retries (what a class meets) and with them (as the page
# does), then on a server warmed by one request first (class_bench.py --warm-up: the first forward
# of a fresh server also pays for its first touch of the mapped weights and of its buffers).
# Every text is exactly TOKENS tokens (default 32): the server runs with --max-tokens TOKENS and
# the requests send twice as many words with "truncate": true.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${1:?usage: bench/run_class_bench.sh MODEL [BUILD] [CLIENTS]}
BUILD=${2:-$ROOT/build}
CLIENTS=${3:-40}
BENCH_BUILD=${HEADLAB_BENCH_BUILD:-$ROOT/build-bench}
TOKENS=${TOKENS:-32}
BIN=$BUILD/headlab
PORT=${HEADLAB_BENCH_PORT:-18766}
. "$ROOT/bench/bench_lib.sh"
[ -x "$BIN" ] || { echo "no $BIN: build the headlab target first" >&2; exit 1; }
bench_build "$BENCH_BUILD" headlab_matmul_bench
PEAKS=$("$BENCH_BUILD/bench/headlab_matmul_bench" --peak)
PEAK=$(echo "$PEAKS" | sed -n 's/^peak=f32[^ ]* gflops=\([0-9]*\).*/\1/p' | sort -n | tail -1)
PEAK_BF16=$(echo "$PEAKS" | sed -n 's/^peak=bf16[^ ]* gflops=\([0-9]*\).*/\1/p' | sort -n | tail -1)  # AMX's where the kernel uses it
echo "uptime: $(uptime)"
echo "peak: f32 ${PEAK} GFLOPS, bf16 ${PEAK_BF16:-none} GFLOPS (headlab_matmul_bench --peak)"

# start_server SERVE_ARGS...: a fresh `headlab serve` (an empty answer cache and database) in the
# background as $pid, once it answers; stops the script with its output if it dies first
start_server() {
  rm -f /tmp/headlab-class-bench.db*
  "$BIN" serve --model "$MODEL" --port "$PORT" --db /tmp/headlab-class-bench.db --max-tokens "$TOKENS" "$@" >/tmp/headlab-class-bench.serve 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/model"; do
    kill -0 "$pid" 2>/dev/null || { cat /tmp/headlab-class-bench.serve >&2; exit 1; }
    sleep 0.1
  done
}

# one_server ARITHMETIC PEAK SERVE_ARGS...: both bursts on three fresh servers in turn: without
# retries (what a class meets), with them (as the page does), and warmed by one request first
# (the class after the teacher's first click), no retries
one_server() {
  name=$1; peak=$2; shift 2
  for mode in "" --retry --warm-up; do
    start_server "$@"
    [ -n "$mode" ] || echo "== $name ($*): $(grep -m1 -i 'compute\|arithmetic' /tmp/headlab-class-bench.serve || true)"
    # shellcheck disable=SC2086  # $mode: no option, or one
    /usr/bin/python3 "$ROOT/bench/class_bench.py" --url "http://127.0.0.1:$PORT" --clients "$CLIENTS" --tokens $((TOKENS * 2)) --peak-gflops "$peak" $mode
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
}
# shellcheck disable=SC2086  # HEADLAB_SERVE_ARGS is a list of options
one_server f32 "$PEAK" --compute f32 ${HEADLAB_SERVE_ARGS:-}
# shellcheck disable=SC2086
if [ -n "${PEAK_BF16:-}" ]; then one_server bf16 "$PEAK_BF16" --compute bf16 ${HEADLAB_SERVE_ARGS:-}; fi

# The products alone at CLIENTS x TOKENS rows, as fractions of the peaks the bursts' bounds used
# (float32's for sgemm and for bf16 weights under float32 arithmetic; the bf16 one, AMX's where
# the CPU has it, for bf16-inputs). Two of the 16 layers and the unembedding: the rate, not the total.
if [ "${PRODUCTS_SHAPE:-llama-1b}" != none ]; then
  ROWS=$((CLIENTS * TOKENS))
  echo "== the products alone, ${ROWS} rows in one batch (headlab_matmul_bench --shape ${PRODUCTS_SHAPE:-llama-1b} --layers 2 --quant none): the most a burst's throughput/bound could be"
  P=$("$BENCH_BUILD/bench/headlab_matmul_bench" --rows "$ROWS" --shape "${PRODUCTS_SHAPE:-llama-1b}" --layers 2 --repeats 2 --quant none)
  for path in sgemm bf16 bf16-inputs; do
    L=$(echo "$P" | grep " path=$path " || true)
    [ -n "$L" ] || continue  # no bf16-inputs path without AVX512_BF16
    g=$(bench_field "$L" gflops)
    case $path in
      sgemm) what="OpenBLAS sgemm, float32 weights (the peer)"; of=$(bench_ratio "$g" "$PEAK") ;;
      bf16) what="headlab, bf16 weights, float32 arithmetic (--compute f32)"; of=$(bench_ratio "$g" "$PEAK") ;;
      *) what="headlab, bf16 weights and inputs ($(bench_field "$L" kernel); --compute bf16)"; of=$(bench_ratio "$g" "${PEAK_BF16:-}") ;;
    esac
    printf '  %-62s %6s GFLOPS  %s of the bound'"'"'s peak\n' "$what" "$g" "$of"
  done
  echo "  (Intel's AMX kernel, PyTorch's oneDNN, on these products: bench/run_amx_bench.sh)"
fi
echo "uptime: $(uptime)"
