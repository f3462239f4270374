#!/usr/bin/env bash
# python/install.sh [PREFIX] — `import headlab` for Debian 12's /usr/bin/python3, from this
# checkout, offline: builds libheadlab.so (Release), installs the library into PREFIX
# (default ~/.local/headlab), makes a virtual environment PREFIX/venv that sees Debian's
# packages (numpy, pybind11, setuptools, pytest, jupyter: --system-site-packages) and pip-installs
# the module into it with Debian's setuptools (--no-build-isolation: nothing is downloaded).
# A venv because Debian 12 marks its python3 externally managed (PEP 668); to install into
# ~/.local instead: HEADLAB_PREFIX=PREFIX pip install --user --break-system-packages --no-build-isolation ./python
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$(realpath -m "${1:-$HOME/.local/headlab}")"
build="${HEADLAB_BUILD_DIR:-$root/build}"
# headlab.views draws with the web app's components: their notebook build is installed with the module,
# rebuilt when missing or older than any source it may hold (all of web/src: the notebook's components
# import from components/, explorer/ and lib/, and a narrower list would go stale) or its build config
views="$root/web/dist-notebook/headlab_views.js"
if [ ! -f "$views" ]; then
  echo "python/install.sh: building the notebook views (web/dist-notebook is missing)"
  npm run build --prefix "$root/web"
else
  newer="$(find "$root/web/src" "$root/web/vite.notebook.config.ts" "$root/web/package.json" -type f -newer "$views" -print -quit)"
  if [ -n "$newer" ]; then
    echo "python/install.sh: rebuilding the notebook views: ${newer#"$root/"} is newer than ${views#"$root/"}"
    npm run build --prefix "$root/web"
  fi
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHEADLAB_LIBRARY=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target headlab_shared
cmake --install "$build" --prefix "$prefix" >/dev/null
[ -x "$prefix/venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$prefix/venv"
HEADLAB_PREFIX="$prefix" "$prefix/venv/bin/python" -m pip install --quiet --no-build-isolation --no-index --no-deps "$root/python"
echo "installed: $prefix (library) and $prefix/venv (Python). Use it with:"
echo "  source $prefix/venv/bin/activate && python -c 'import headlab; print(headlab.load(\"$root/models/headlab-tiny\"))'"
echo "  python -m notebook $root/examples/notebooks   (run from the venv, the notebooks' kernel is its python)"
