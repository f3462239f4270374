#!/usr/bin/env bash
# tests/python/run.sh BUILD_DIR [WORK] — the installed library and the Python module, as a user
# gets them (scripts/test runs this): installs BUILD_DIR's library into WORK/prefix and builds
# the C++ example against it (examples/cpp/check.sh), pip-installs the module from python/
# (Debian's setuptools and pybind11, offline), then runs the pytest suite (test_install.py runs
# python/install.sh's check of the notebook views on a temporary copy, npm and cmake stubbed) and
# executes the example notebooks headless. BUILD_DIR must have built headlab_shared and headlab_cli, and the
# web app its notebook build (npm run build --prefix web: web/dist-notebook, which headlab.views installs).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(realpath "$1")"
work="$(realpath -m "${2:-$build/python-check}")"
rm -rf "$work"; mkdir -p "$work"
prefix="$work/prefix"
py=/usr/bin/python3   # Debian's, with numpy, pybind11, pytest, jupyter and torch
t0=$SECONDS
"$root/examples/cpp/check.sh" "$build" "$prefix"
echo "tests/python: library installed, example built and run ($((SECONDS - t0)) s)"
# the module: compiled through ccache when there is one (its three files change rarely)
# (setuptools builds in python/build/ and misses a changed header: start it clean each time)
cc_launcher=""; command -v ccache >/dev/null && cc_launcher="ccache "
rm -rf "$root/python/build"
HEADLAB_PREFIX="$prefix" CC="${cc_launcher}g++" CXX="${cc_launcher}g++" \
  "$py" -m pip install --quiet --no-build-isolation --no-index --no-deps --target "$work/site" "$root/python"
echo "tests/python: module built and installed ($((SECONDS - t0)) s)"
export PYTHONPATH="$work/site" HEADLAB_BIN="$build/headlab" HEADLAB_ROOT="$root"
export OMP_NUM_THREADS=1   # torch beside the engine's pool on 2 cores
(cd "$work" && "$py" -m pytest -q -p no:cacheprovider "$root/tests/python")
echo "tests/python: pytest passed ($((SECONDS - t0)) s)"
mkdir -p "$work/notebooks"
for nb in "$root"/examples/notebooks/*.ipynb; do
  (cd "$root/examples/notebooks" && "$py" -m nbconvert --to notebook --execute --ExecutePreprocessor.timeout=120 \
     --output-dir "$work/notebooks" "$nb" >/dev/null 2>"$work/notebooks/$(basename "$nb").log") \
    || { cat "$work/notebooks/$(basename "$nb").log"; echo "tests/python: notebook $(basename "$nb") FAILED"; exit 1; }
  grep -q '"output_type": "error"' "$work/notebooks/$(basename "$nb")" && { echo "error output in $nb"; exit 1; }
done
echo "tests/python: notebooks executed ($((SECONDS - t0)) s)"
# the notebooks in a live Jupyter (the classic Notebook from Debian's jupyter-notebook), run from
# its page in Chromium: the views drawn inline by the Notebook's own output area
node --test "$root/tests/python/jupyter_live.test.mjs"
echo "tests/python: notebooks in a live Jupyter ($((SECONDS - t0)) s)"
