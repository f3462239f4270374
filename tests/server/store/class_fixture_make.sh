#!/usr/bin/env bash
# tests/server/store/class_fixture_make.sh HEADLAB_BINARY OUT.db — remakes one of the class fixtures:
# an SQLite file as a headlab from before the class tables were migration 2 writes it. The
# binary's own `serve` makes every table; then, through its API, a teacher creates "Old class"
# with the passphrase "old passphrase 1234", the learner learner-old-1 joins as Ada, answers
# lesson 2's pattern quiz wrong ("uniform") and meets lesson 1's induction challenge.
# class_store_test.cpp checks that such a file opens with all of it.
#
# The committed fixtures (*.db is in .gitignore: they were added with git add -f), made
# 2026-12-02 from `git archive COMMIT` trees built with cmake (Release, tests off):
#   class_fixture_before_migrations.db  6e58876 (the class code on SQLite, before server/db/:
#                                        no schema_migrations table)
#   class_fixture_migration_1.db        69c67fc (main after both merges: migration 1 for the
#                                        progress tables, the class tables made by ClassStore)
set -euo pipefail
bin="${1:?usage: $0 PATH/TO/headlab OUT.db}"
out="${2:?usage: $0 PATH/TO/headlab OUT.db}"
dir="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$bin" serve --no-model --port "$port" --db "$dir/old.db" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/api/health" >/dev/null && break; sleep 0.1; done
post() { curl -sf -X POST -H 'Content-Type: application/json' -d "$2" "http://127.0.0.1:$port$1"; }
code="$(post /api/classes '{"name":"Old class","passphrase":"old passphrase 1234"}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["class"]["code"])')"
post /api/class/join "{\"code\":\"$code\",\"learner\":\"learner-old-1\",\"nickname\":\"Ada\"}" >/dev/null
post /api/lessons/trained-heads/check \
  '{"learner":"learner-old-1","challenge":"pattern-quiz","answer":{"choice":"uniform"}}' >/dev/null
post /api/progress/check \
  '{"learner":"learner-old-1","lesson":"causal-mask","sentence":"the cat chased the dog . the cat chased the","head":"induction","mask":true,"query":8}' >/dev/null
kill -TERM "$pid"; wait "$pid" || true   # a clean stop folds the WAL into the file
cp "$dir/old.db" "$out"
echo "wrote $out (class $code)"
