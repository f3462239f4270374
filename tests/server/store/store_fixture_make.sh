#!/usr/bin/env bash
# tests/server/store/store_fixture_make.sh HEADLAB_BINARY — remakes store_fixture_main.db, an SQLite
# file as a headlab from before schema migrations writes it: the binary's own `serve` makes
# the tables, and one note and one challenge arrive through its API. Made with main at
# e69e2b4 (2026-12-01); store_engines_test.cpp checks such a file opens unchanged.
set -euo pipefail
bin="${1:?usage: $0 PATH/TO/headlab (built from a commit before server/db/)}"
out="$(cd "$(dirname "$0")" && pwd)/store_fixture_main.db"
dir="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$bin" serve --no-model --port "$port" --db "$dir/main.db" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/api/health" >/dev/null && break; sleep 0.1; done
curl -sf -X POST -H 'Content-Type: application/json' \
  -d '{"lesson":"causal-mask","message":"Row 6 looks wrong","contact":"me@example.org"}' \
  "http://127.0.0.1:$port/api/feedback" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' \
  -d '{"learner":"learner-fixture-1","lesson":"causal-mask","sentence":"the cat chased the dog . the cat chased the","head":"induction","mask":true,"query":8}' \
  "http://127.0.0.1:$port/api/progress/check" >/dev/null
kill -TERM "$pid"; wait "$pid" || true   # a clean stop folds the WAL into the file
cp "$dir/main.db" "$out"
echo "wrote $out"
