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
"$build/headlab" serve --port 0 --db "$tmp/load.db" --web "$root/web/dist" >"$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "press Ctrl-C" "$tmp/serve.log" 2>/dev/null && break; sleep 0.1; done
port="$(sed -n 's|^headlab: serving on http://127.0.0.1:\([0-9]*\)/$|\1|p' "$tmp/serve.log")"
[ -n "$port" ] || { echo "load test: the server did not start"; cat "$tmp/serve.log"; exit 1; }

echo "load test: $connections connections for ${seconds}s against the lesson endpoints on port $port"
HEADLAB_LOAD_RESULT="$tmp/result" wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s \
  -s "$root/tests/load/lesson_mix.lua" "http://127.0.0.1:$port" >"$tmp/wrk.log" 2>&1 || { cat "$tmp/wrk.log"; exit 1; }
cat "$tmp/result"
kill -0 $pid 2>/dev/null || { echo "load test: the server died"; exit 1; }
failed="$(sed -n 's/^failed //p' "$tmp/result")"
requests="$(sed -n 's/^requests //p' "$tmp/result")"
if [ "$failed" = 0 ] && [ "$requests" -gt 0 ]; then
  echo "load: 1 passed, 0 failed ($requests requests, none failed)"
else
  echo "load: 0 passed, 1 failed ($failed of $requests requests failed)"
  exit 1
fi
