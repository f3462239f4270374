#!/usr/bin/env bash
# examples/cpp/check.sh BUILD_DIR PREFIX — installs the library from a built tree into PREFIX
# (cmake --install), then builds the example program outside the tree against it: through
# find_package(headlab) (shared and static) and through pkg-config, and runs each on the
# built-in model. scripts/test runs it; BUILD_DIR must have built headlab_shared.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$1"; prefix="$2"
work="$prefix/example-build"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$root/examples/cpp" -B "$work" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work" -j"$(nproc)" >/dev/null
# the same object linked by pkg-config's flags alone
c++ -o "$work/induction_cache_pc" "$work/CMakeFiles/induction_cache_obj.dir/induction_cache.cpp.o" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs headlab)
model="$root/models/headlab-tiny"
for exe in induction_cache induction_cache_static induction_cache_pc; do
  out=$("$work/$exe" "$model")
  # (a here-string, not echo | grep -q: under pipefail grep's early exit can fail echo with SIGPIPE)
  grep -q "strongest induction head: L" <<<"$out" || { echo "$exe printed:"; echo "$out"; exit 1; }
done
echo "$out"
# an error is a value with its message, and exit 1
if "$work/induction_cache" "$root/models/no-such-model" 2>"$work/err.txt"; then echo "a missing model was not refused"; exit 1; fi
grep -q "error:" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
echo "examples/cpp: built against $prefix (find_package shared and static, pkg-config) and ran"
