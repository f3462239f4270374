#!/usr/bin/env bash
# Builds every libFuzzer target with clang, ASan and UBSan (in build-fuzz/) and runs each
# for a bounded time from its committed seed corpus. A crash, leak or sanitizer report
# fails the run; the reproducer is left in build-fuzz/crashes/.
# The seed is fixed (HEADLAB_FUZZ_SEED, default 1) so CI walks the same inputs each run;
# use a longer time or another seed locally to explore further.
# Usage: [HEADLAB_FUZZ_BUILD_ONLY=1] fuzz/run.sh [SECONDS_PER_TARGET]   (default 10: CI runs seven targets inside its 45 minutes)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-${HEADLAB_FUZZ_SECONDS:-10}}"
build="${HEADLAB_FUZZ_BUILD_DIR:-$root/build-fuzz}"
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (apt-get install clang)"; exit 1; }

# -O0 -g1: the quickest build (the parsers get -O1 and the engine's kernels -O3 anyway:
# HEADLAB_PARSER_OPT in CMakeLists.txt); the run is bounded by time
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1" \
  -DHEADLAB_FUZZ=ON -DHEADLAB_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target headlab_fuzzers
# HEADLAB_FUZZ_BUILD_ONLY=1: only the build (scripts/test builds early, at low priority, and
# runs the targets later)
[ "${HEADLAB_FUZZ_BUILD_ONLY:-0}" = 1 ] && { echo "fuzz: built"; exit 0; }

mkdir -p "$build/crashes"
# Two targets at a time (HEADLAB_FUZZ_JOBS, default the core count): each runs for its bounded
# time whatever else runs, so on 2 cores seven targets take four rounds of 10 s instead of seven.
jobs="${HEADLAB_FUZZ_JOBS:-$(nproc)}"
# run_one NAME: runs one target from its corpus; its verdict goes to $build/NAME.verdict
run_one() {
  local fuzzer="$1" name; name="$(basename "$1")"
  local corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  local dirs=("$corpus")
  [ -d "$root/fuzz/corpus/$name" ] && dirs+=("$root/fuzz/corpus/$name")
  if "$fuzzer" -seed="${HEADLAB_FUZZ_SEED:-1}" -max_total_time="$seconds" -max_len=65536 -timeout=30 -rss_limit_mb=2048 \
       -artifact_prefix="$build/crashes/$name-" -print_final_stats=1 "${dirs[@]}" \
       >"$build/$name.log" 2>&1; then
    echo "clean ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/$name.log" | grep -o '[0-9]*$') runs)" >"$build/$name.verdict"
  else
    echo "FAILED" >"$build/$name.verdict"
  fi
}
names=()
for fuzzer in "$build"/fuzzers/*; do
  [ -x "$fuzzer" ] || continue
  names+=("$(basename "$fuzzer")")
  rm -f "$build/$(basename "$fuzzer").verdict"
  echo "fuzz: $(basename "$fuzzer") for ${seconds}s"
  run_one "$fuzzer" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait
passed=0; failed=0
for name in "${names[@]}"; do
  verdict="$(cat "$build/$name.verdict" 2>/dev/null || echo FAILED)"
  echo "fuzz: $name $verdict"
  if [ "${verdict#clean}" != "$verdict" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); tail -40 "$build/$name.log"
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
