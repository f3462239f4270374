# bench/bench_lib.sh — what the benchmark scripts share (sourced, POSIX sh): reading the
# key=value lines the bench programs print, the best round, building the bench binaries, and
# PyTorch's fair configuration on these 2-core machines:
#   Debian's python3-torch under /usr/bin/python3, 2 threads, OMP_WAIT_POLICY=PASSIVE, jemalloc
#   that keeps its pages (MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1; as installed it
#   busy-waits and page-faults), and OpenBLAS's kernels as headlab chooses them
#   (OPENBLAS_CORETYPE: Debian's PyTorch loads the same libopenblas.so.0).
#
#   . "$ROOT/bench/bench_lib.sh"
#   bench_build "$BUILD" headlab_engine_bench            # configures and builds when missing
#   bench_torch_setup "$BUILD/bench/headlab_engine_bench"  # sets TORCH=yes|no, prints the kernels
#   P=$(bench_torch "$ROOT/bench/torch_engine_bench.py" --model M --tokens 64)
#   ms=$(bench_field "$P" median_ms); best=$(bench_min "$best" "$ms")
#   bench_llama_peer "$BUILD"                            # llama.cpp's peer programs, in BUILD/bench

# bench_field LINE KEY: the value of KEY=... in LINE ("" when absent).
bench_field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# bench_min A B: the smaller number, ignoring "" and nan (the best round).
bench_min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || a == "nan" || (b != "" && b != "nan" && b + 0 < a + 0)) print b; else print a }'; }

# bench_ratio A B [DIGITS]: A / B, or "-" when either is missing.
bench_ratio() {
  awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (a == "" || b == "" || a == "nan" || b == "nan" || b + 0 == 0) print "-"; else printf "%.*f", d, a / b }'
}

# bench_build BUILD TARGET...: configures BUILD (Release, benchmarks on) when it is not, and
# builds the targets whose binaries are missing (a bench target in BUILD/bench/, or headlab_cli,
# which makes BUILD/headlab).
bench_build() {
  _build=$1
  shift
  if [ ! -f "$_build/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$_build" -DCMAKE_BUILD_TYPE=Release -DHEADLAB_BUILD_BENCH=ON -DHEADLAB_BUILD_TESTS=OFF >/dev/null
  fi
  for _t in "$@"; do
    _bin="$_build/bench/$_t"
    [ "$_t" = headlab_cli ] && _bin="$_build/headlab"
    [ -x "$_bin" ] || cmake --build "$_build" -j2 --target "$_t" >/dev/null
  done
}

# bench_torch_setup HEADLAB_BENCH_BIN: TORCH=yes when Debian's PyTorch is there, JEMALLOC its
# path, BLAS_CORE the OpenBLAS kernels headlab chose (given to PyTorch).
bench_torch_setup() {
  JEMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null || true)
  if [ -z "$JEMALLOC" ]; then
    echo "note: libjemalloc2 is not installed (apt-get install libjemalloc2); PyTorch runs with glibc malloc"
  fi
  if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    TORCH=yes
  else
    echo "note: Debian's python3-torch is not installed (apt-get install python3-torch): only headlab's figures are printed"
    TORCH=no
  fi
  BLAS_CORE=$("$1" --blas | sed -n 1p)
  echo "headlab: $("$1" --blas | sed -n 2p)"
  echo "PyTorch: OPENBLAS_CORETYPE=$BLAS_CORE"
}

# bench_torch SCRIPT ARGS...: a PyTorch peer in its fair configuration; prints its result line
# (or nan fields when PyTorch is missing).
bench_torch() {
  if [ "$TORCH" != yes ]; then
    echo "median_ms=nan peak_rss_mb=nan argmax_last=nan"
    return 0
  fi
  OPENBLAS_CORETYPE=$BLAS_CORE OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
    LD_PRELOAD=$JEMALLOC /usr/bin/python3 "$@"
}

bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# bench_llama_peer BUILD: compiles bench/llama_bench.c and tools/reference/llama_logits.c (its
# quantize) into BUILD/bench against the headers of node-llama-cpp's git bundle, the release the
# npm package's libllama (LLAMA_LIBS) was built from; only when a source is newer than them.
bench_llama_peer() {
  _root=$(cd "$(dirname "$0")/.." && pwd)
  _npm=$_root/data/npm/node_modules
  _libs=$_npm/@node-llama-cpp/linux-x64/bins/linux-x64
  _stale=no
  for _src in bench/llama_bench.c bench/bench_clock.h tools/reference/llama_peer.h tools/reference/llama_logits.c; do
    [ -x "$1/bench/llama_bench" ] && [ -x "$1/bench/llama_logits" ] && [ ! "$_root/$_src" -nt "$1/bench/llama_bench" ] || _stale=yes
  done
  [ $_stale = yes ] || return 0
  echo "compiling llama_bench and llama_logits against node-llama-cpp's headers" >&2
  _tmp=$(mktemp -d)
  git -c advice.detachedHead=false clone -q "$_npm/node-llama-cpp/llama/gitRelease.bundle" "$_tmp/llama.cpp"
  mkdir -p "$1/bench"
  for _prog in bench/llama_bench.c tools/reference/llama_logits.c; do
    gcc -O2 -Wall -o "$1/bench/$(basename "$_prog" .c)" "$_root/$_prog" -I"$_root/bench" -I"$_root/tools/reference" \
      -I"$_tmp/llama.cpp/include" -I"$_tmp/llama.cpp/ggml/include" -L"$_libs" -l:libllama.v0.4.0.so \
      -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,"$_libs"
  done
  rm -rf "$_tmp"
}
