#!/usr/bin/env bash
# Load test on loopback: 200 concurrent learners for 30 s against the lesson endpoints
# (wrk from Debian). Passes when no request failed; prints p50/p99 latency.
# Usage: tests/load/run.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-30}"
connections="${3:-200}"
command -v wrk >/dev/null || { echo "load test: wrk is missing (apt-get install wrk)"; exit 1; }

tmp="$(mktemp -d)"
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$build/headlab" serve --port 0 --db "$tmp/load.db" --web "$root/web/dist" ${HEADLAB_LOAD_MODEL:+--model "$HEADLAB_LOAD_MODEL"} >"$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "press Ctrl-C" "$tmp/serve.log" 2>/dev/null && break; sleep 0.1; done
port="$(sed -n 's|^headlab: serving on http://127.0.0.1:\([0-9]*\)/$|\1|p' "$tmp/serve.log")"
[ -n "$port" ] || { echo "load test: the server did not start"; cat "$tmp/serve.log"; exit 1; }

echo "load test: $connections connections for ${seconds}s against the lesson endpoints on port $port"
HEADLAB_LOAD_RESULT="$tmp/result" wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s \
  -s "$root/tests/load/lesson_mix.lua" "http://127.0.0.1:$port" >"$tmp/wrk.log" 2>&1 || { cat "$tmp/wrk.log"; exit 1; }
cat "$tmp/result"
kill -0 $pid 2>/dev/null || { echo "load test: the server died"; exit 1; }
passed=0; failures=0
check() {  # check NAME: no failed request in $tmp/result
  local failed requests
  failed="$(sed -n 's/^failed //p' "$tmp/result")"
  requests="$(sed -n 's/^requests //p' "$tmp/result")"
  if [ "$failed" = 0 ] && [ "$requests" -gt 0 ]; then
    passed=$((passed + 1)); echo "load test: $1: $requests requests, none failed"
  else
    failures=$((failures + 1)); echo "load test: $1: $failed of $requests requests FAILED"
  fi
}
check "lesson endpoints"

# The model endpoints, when the server has a model: fewer learners, deliberate 503s allowed.
if curl -sf "http://127.0.0.1:$port/api/model" >/dev/null 2>&1; then
  echo "load test: 20 connections for 10s against the model endpoints"
  HEADLAB_LOAD_RESULT="$tmp/result" wrk -t2 -c20 -d10s --timeout 40s \
    -s "$root/tests/load/model_mix.lua" "http://127.0.0.1:$port" >"$tmp/wrk.log" 2>&1 || { cat "$tmp/wrk.log"; exit 1; }
  cat "$tmp/result"
  check "model endpoints"
  kill -0 $pid 2>/dev/null || { echo "load test: the server died"; exit 1; }
else
  echo "load test: no model loaded; the model endpoints were not loaded"
fi
echo "load: $passed passed, $failures failed"
[ "$failures" -eq 0 ]
