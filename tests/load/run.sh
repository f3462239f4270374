#!/usr/bin/env bash
# Load test on loopback: 200 concurrent learners for 30 s against the lesson endpoints
# (wrk from Debian), then hostile and crowded clients (tests/load/hostile.py, Python's
# standard library), each bounded in time and asserting one figure: a class of 1,000
# keep-alive connections beside 200 active learners, slowloris, header floods, many-range
# requests, the model endpoints, a greedy client on the model queue, SIGTERM with tricklers;
# then the budget attacks (unread answers, model work on every model route, a check flood),
# the lockout and injection attacks (wrong logins, junk joins, hostile text) and SIGTERM
# rounds under load. All on 127.0.0.1; about 3 minutes in all.
# Usage: tests/load/run.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-30}"
connections="${3:-200}"
command -v wrk >/dev/null || { echo "load test: wrk is missing (apt-get install wrk)"; exit 1; }
hostile="/usr/bin/python3 $root/tests/load/hostile.py"

tmp="$(mktemp -d)"
pid=""; pid2=""; holder=""
trap 'kill $pid $pid2 $holder 2>/dev/null || true; rm -rf "$tmp"' EXIT
# Every client here comes from 127.0.0.1 (the greedy one from 127.0.0.2): a class's worth of
# connections, and 200 learners writing progress as fast as wrk can, from one address are
# more than the per-address defaults allow (Http.ProgressWritesPastTheRateOfOneAddressGet429
# and Http.ConnectionsBeyondThePerAddressLimitAreClosedAtOnce test those limits).
"$build/headlab" serve --port 0 --db "$tmp/load.db" --web "$root/web/dist" --max-connections-per-ip 4000 \
  --progress-writes-per-minute 0 --learner-writes-per-minute 0 \
  ${HEADLAB_LOAD_MODEL:+--model "$HEADLAB_LOAD_MODEL"} >"$tmp/serve.log" 2>&1 &
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

# A class: 1,000 keep-alive connections asking every 4 s (50 browsers with their tabs open),
# beside 200 active learners (one request each per 50 ms): no failure, p99 under 50 ms.
$hostile class "$port" >"$tmp/class.log" 2>&1 &
holder=$!
sleep 2
echo "load test: 200 active learners for 10s beside 1,000 keep-alive connections"
HEADLAB_LOAD_DELAY_MS=50 HEADLAB_LOAD_RESULT="$tmp/result" wrk -t2 -c200 -d10s --timeout 10s \
  -s "$root/tests/load/lesson_mix.lua" "http://127.0.0.1:$port" >"$tmp/wrk.log" 2>&1 || { cat "$tmp/wrk.log"; exit 1; }
cat "$tmp/result"
check "class"
p99="$(sed -n 's/^p99_ms //p' "$tmp/result")"
if awk -v p="$p99" 'BEGIN { exit !(p < 50) }'; then
  passed=$((passed + 1)); echo "load test: class: p99 $p99 ms, under 50 ms"
else
  failures=$((failures + 1)); echo "load test: class: p99 $p99 ms, NOT under 50 ms"
fi
if wait $holder; then passed=$((passed + 1)); else failures=$((failures + 1)); fi
holder=""
cat "$tmp/class.log"

hostile_check() {  # hostile_check NAME: run one hostile client against the server
  if $hostile "$1" "$port" "$pid"; then passed=$((passed + 1)); else failures=$((failures + 1)); echo "load test: $1 FAILED"; fi
  kill -0 $pid 2>/dev/null || { echo "load test: the server died"; exit 1; }
}
hostile_check assets
hostile_check slowloris
hostile_check header-flood
hostile_check ranges

# The model endpoints, when the server has a model: fewer learners, deliberate 503s allowed.
if curl -sf "http://127.0.0.1:$port/api/model" >/dev/null 2>&1; then
  echo "load test: 20 connections for 10s against the model endpoints"
  HEADLAB_LOAD_RESULT="$tmp/result" wrk -t2 -c20 -d10s --timeout 40s \
    -s "$root/tests/load/model_mix.lua" "http://127.0.0.1:$port" >"$tmp/wrk.log" 2>&1 || { cat "$tmp/wrk.log"; exit 1; }
  cat "$tmp/result"
  check "model endpoints"
  kill -0 $pid 2>/dev/null || { echo "load test: the server died"; exit 1; }
  hostile_check greedy
else
  echo "load test: no model loaded; the model endpoints were not loaded"
fi

# SIGTERM while 200 connections trickle header bytes: exits 0 within the 5 s drain.
"$build/headlab" serve --port 0 --db "$tmp/term.db" --web "$root/web/dist" --no-model >"$tmp/serve2.log" 2>&1 &
pid2=$!
for _ in $(seq 100); do grep -q "press Ctrl-C" "$tmp/serve2.log" 2>/dev/null && break; sleep 0.1; done
port2="$(sed -n 's|^headlab: serving on http://127.0.0.1:\([0-9]*\)/$|\1|p' "$tmp/serve2.log")"
$hostile trickle "$port2" >/dev/null 2>&1 &
holder=$!
sleep 2
start_ms=$(date +%s%3N)
kill -TERM $pid2
code=0; wait $pid2 || code=$?
took_ms=$(( $(date +%s%3N) - start_ms ))
pid2=""
kill $holder 2>/dev/null || true; wait $holder 2>/dev/null || true; holder=""
if [ "$code" = 0 ] && [ "$took_ms" -lt 6000 ]; then
  passed=$((passed + 1)); echo "load test: SIGTERM with 200 tricklers: exit $code after $took_ms ms (drain 5 s)"
else
  failures=$((failures + 1)); echo "load test: SIGTERM with 200 tricklers: exit $code after $took_ms ms: FAILED"
fi

# A server with the default limits and the built-in model, for the attacks on its budgets
# (issue 24): unread answers, model work flooding every model route, a flood of lesson checks.
start_server() {  # start_server LOG: a server with the default limits; sets spid and sport
  "$build/headlab" serve --port 0 --db "$tmp/$1.db" --web "$root/web/dist" >"$tmp/$1.log" 2>&1 &
  spid=$!
  for _ in $(seq 100); do grep -q "press Ctrl-C" "$tmp/$1.log" 2>/dev/null && break; sleep 0.05; done
  sport="$(sed -n 's|^headlab: serving on http://127.0.0.1:\([0-9]*\)/$|\1|p' "$tmp/$1.log")"
}
start_server budgets
pid2=$spid
if curl -sf "http://127.0.0.1:$sport/api/model" >/dev/null 2>&1; then
  for attack in unread loop-flood check-flood; do
    if $hostile "$attack" "$sport" "$spid"; then passed=$((passed + 1)); else failures=$((failures + 1)); echo "load test: $attack FAILED"; fi
    kill -0 $spid 2>/dev/null || { echo "load test: the server died under $attack"; exit 1; }
  done
else
  echo "load test: no built-in model; the budget attacks were not run"
fi
# The lockout and injection attacks (issue 24): wrong logins from many addresses while the
# teacher logs in, junk joins from one address while a class joins, a learner's hostile text
# read back through `headlab class show` (text and CSV) on the server's own file.
for attack in login-lockout join-flood hostile-text; do
  if HEADLAB_BIN="$build/headlab" HEADLAB_DB="$tmp/budgets.db" $hostile "$attack" "$sport" "$spid"; then
    passed=$((passed + 1)); else failures=$((failures + 1)); echo "load test: $attack FAILED"; fi
  kill -0 $spid 2>/dev/null || { echo "load test: the server died under $attack"; exit 1; }
done
kill -TERM $spid; wait $spid || true; pid2=""

# SIGTERM under load of every kind (progress writes, lesson checks, model requests, class
# creations on the Argon2 lane), a fresh server each round, stopped at a different moment:
# every round exits 0. (100 rounds of stop() under suspended requests run in ctest:
# HttpBudget.StopUnderSuspendedRequestsNeverAbortsInAHundredRounds.)
rounds="${HEADLAB_TERM_ROUNDS:-12}"
term_ok=0
for round in $(seq "$rounds"); do
  start_server "term$round"
  pid2=$spid
  $hostile term-load "$sport" >/dev/null 2>&1 &
  holder=$!
  sleep "0.$((RANDOM % 9 + 1))"
  kill -TERM $spid
  code=0; wait $spid || code=$?
  pid2=""
  kill $holder 2>/dev/null || true; wait $holder 2>/dev/null || true; holder=""
  if [ "$code" = 0 ]; then term_ok=$((term_ok + 1)); else echo "load test: SIGTERM round $round: exit $code"; tail -3 "$tmp/term$round.log"; fi
  rm -f "$tmp/term$round".db*
done
if [ "$term_ok" = "$rounds" ]; then
  passed=$((passed + 1)); echo "load test: SIGTERM under load: exit 0 in $term_ok of $rounds rounds"
else
  failures=$((failures + 1)); echo "load test: SIGTERM under load: exit 0 in only $term_ok of $rounds rounds: FAILED"
fi

echo "load: $passed passed, $failures failed"
[ "$failures" -eq 0 ]
