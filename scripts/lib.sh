# scripts/lib.sh — shared by scripts/serve and scripts/test: install what is missing
# (Debian packages, npm packages), then build. Safe to run again: it skips what is there.
set -euo pipefail

HEADLAB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${HEADLAB_BUILD_DIR:-$HEADLAB_ROOT/build}"

# Each line carries the time since the script started, so a CI log shows where the minutes go.
say() { printf '\033[1mheadlab setup [%d:%02d]:\033[0m %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# Debian packages needed to build and serve.
SERVE_PACKAGES=(
  g++ cmake make pkg-config        # the C++20 toolchain
  libmicrohttpd-dev                # HTTP server (event-driven, with connection limits)
  zlib1g-dev                       # gzip of large API answers
  nlohmann-json3-dev               # JSON codec
  libsqlite3-dev                   # embedded progress store
  libpq-dev                        # PostgreSQL's client library: --db postgresql:// for several servers
  libsodium-dev                    # Argon2id hashes of teachers' secrets, random codes and tokens
  libexpected-dev                  # tl::expected: errors as values
  libcli11-dev                     # command-line parsing
  libopenblas-dev                  # matrix products of the transformer engine
  libonig-dev                      # tokenizer.json's Split regexes, in the engine Hugging Face uses
  libutf8proc-dev                  # tokenizer.json's Unicode normalizers (NFC, NFKC, NFD, NFKD)
  python3 python3-numpy            # runs the lesson's NumPy example at build time
  ca-certificates
)
# More for the tests: GoogleTest, Google Benchmark, a browser for the page tests,
# clang's libFuzzer, the Debian texts the trainer's tests read, and a load generator.
TEST_PACKAGES=(
  libgtest-dev libbenchmark-dev
  chromium
  clang
  lld                              # a faster linker for the ~40 test binaries (CMakeLists.txt: HEADLAB_LLD)
  dict-devil
  wrk curl                         # the load test of the server
  libcpp-httplib-dev               # the HTTP client of the server's tests
  postgresql                       # a throwaway cluster for the store tests (tests/server/store/store_postgres_cluster.sh)
  nginx                            # the load balancer of the scale-out test (tests/scale/run.sh, docs/school-nginx.conf)
  # the Python module and its checks (tests/python/run.sh): pybind11, pip with Debian's setuptools,
  # pytest, the notebooks' headless run, and the PyTorch reference a cache is compared with
  pybind11-dev python3-pybind11 python3-setuptools python3-pip python3-pytest
  python3-ipykernel python3-nbconvert python3-torch
  jupyter-notebook                 # the notebooks run cell by cell in a live Notebook (tests/python/jupyter_live.test.mjs)
)

apt_install() {
  local missing=()
  for p in "$@"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
  done
  # Node.js may come from Debian (nodejs + npm) or elsewhere; only the commands matter.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# npm ci in a folder unless its node_modules was installed from the current lock file.
npm_install() {
  local dir="$1"; shift
  [ -f "$dir/package-lock.json" ] || return 0
  if [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then return 0; fi
  say "installing npm packages in ${dir#$HEADLAB_ROOT/}"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error "$@"
}

install_deps() {
  local kind="$1"
  if [ "$kind" = test ]; then apt_install "${SERVE_PACKAGES[@]}" "${TEST_PACKAGES[@]}"; else apt_install "${SERVE_PACKAGES[@]}"; fi
  npm_install "$HEADLAB_ROOT/web"
  if [ -d "$HEADLAB_ROOT/data/npm" ]; then npm_install "$HEADLAB_ROOT/data/npm" --omit=optional; fi  # optional: node-llama-cpp's CUDA/Vulkan/ARM builds (about 1 GB); the tests read the fixtures the x64 libllama made
}

# build_all KIND [TARGET...]: the Release build in BUILD_DIR (with the test binaries' targets
# defined when KIND is test), all of it or only the targets named, then the web app.
build_all() {
  local kind="$1"; shift
  local tests=OFF
  [ "$kind" = test ] && tests=ON
  say "building the C++ engine, server and CLI in ${BUILD_DIR#$HEADLAB_ROOT/}${1:+ (targets: $*)}"
  cmake -S "$HEADLAB_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DHEADLAB_BUILD_TESTS=$tests >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" ${1:+--target "$@"}
  say "building the web app"
  npm run build --prefix "$HEADLAB_ROOT/web" --silent
}
