#!/usr/bin/env bash
# tests/scale/run.sh [BUILD_DIR] [SECONDS] [LEARNERS] [CLASSES] — the scale-out test: two
# `headlab serve --db postgresql://...` on one PostgreSQL behind nginx (docs/school-nginx.conf,
# its ports changed), classes of simulated learners and their polling teachers through nginx
# (tests/scale/learners.py), one server killed with SIGKILL mid-run and started again.
# Passes when no request failed, every write nginx acknowledged is in PostgreSQL and readable
# through nginx, and each class's view and CSV are complete and the same on either server;
# then a poll on one server sees an answer made on the other, a login on one opens the view
# on the other, and a learner removed and a class deleted on one are gone on the other and
# from every class table. Loopback only, free ports, about SECONDS + 30 s.
# Without HEADLAB_TEST_POSTGRES_URL it starts a throwaway cluster for itself.
#
# Settings (environment): HEADLAB_SCALE_KILL=0 kills no server; HEADLAB_SCALE_THINK=S makes
# each learner wait S seconds between steps (then the servers keep their default per-address
# progress limit); HEADLAB_SCALE_ENGINE=sqlite runs one server on an SQLite file instead,
# behind the same nginx (the single-server figures of tests/scale/load.sh);
# HEADLAB_SCALE_RESULT=FILE appends the driver's figures there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-20}"
learners="${3:-40}"
classes="${4:-$(( learners >= 40 ? learners / 10 : 1 ))}"
engine="${HEADLAB_SCALE_ENGINE:-postgresql}"
think="${HEADLAB_SCALE_THINK:-0}"
kill_first="${HEADLAB_SCALE_KILL:-1}"
if [ "$engine" = postgresql ] && [ -z "${HEADLAB_TEST_POSTGRES_URL:-}" ]; then
  [ -z "${HEADLAB_SCALE_CLUSTER_TRIED:-}" ] || { echo "scale test: FAILED: no PostgreSQL cluster"; exit 1; }
  export HEADLAB_SCALE_CLUSTER_TRIED=1
  exec "$root/tests/server/store/store_postgres_cluster.sh" "$0" "$build" "$seconds" "$learners" "$classes"
fi
say() { printf 'scale test: %s\n' "$*"; }
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
psql_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql"

tmp="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$tmp/nginx.pid" ] && kill "$(cat "$tmp/nginx.pid")" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

if [ "$engine" = postgresql ]; then
  admin="$HEADLAB_TEST_POSTGRES_URL"
  name="headlab_scale_$$"
  "$psql_bin" -qX "$admin" -c "CREATE DATABASE $name" >/dev/null
  db="${admin%/*}/$name"
  servers=2
else
  db="$tmp/one.db"
  servers=1
  kill_first=0
fi

# Clients reach the servers through nginx from their own loopback addresses (learners.py: one
# per class, one per teacher); nginx passes each on in X-Forwarded-For, which the servers take
# from 127.0.0.1 (--trusted-proxy), so the per-address limits are a classroom's. Every
# connection still comes from nginx: hence the per-address connection limit. Learners without
# a pause write progress faster than a classroom could: then that limit is lifted too.
serve_flags=(--no-model --db "$db" --trusted-proxy 127.0.0.1 --max-connections-per-ip 4000)
[ "$think" != 0 ] || serve_flags+=(--progress-writes-per-minute 0 --learner-writes-per-minute 0)
ports=()
start_server() {  # start_server I PORT: server I (1-based) on PORT
  "$build/headlab" serve --port "$2" "${serve_flags[@]}" >"$tmp/serve$1.log" 2>&1 &
  pids[$(( $1 - 1 ))]=$!
  disown $!  # the SIGKILL below is meant: no "Killed" from bash
  for _ in $(seq 100); do grep -q "press Ctrl-C" "$tmp/serve$1.log" 2>/dev/null && break; sleep 0.1; done
  grep -q "progress is kept in $( [ "$engine" = postgresql ] && echo 'postgresql://' || echo "$db")" "$tmp/serve$1.log" ||
    { say "server $1 did not start on $engine"; cat "$tmp/serve$1.log"; exit 1; }
}
for i in $(seq "$servers"); do
  ports+=("$(free_port)")
  start_server "$i" "${ports[$((i - 1))]}"
done

# docs/school-nginx.conf as a school would use it, only its ports changed (and, for the one
# SQLite server, its second server left out: the same front for both figures). nginx logs
# each request's time ($request_time: from its first byte in to its last byte out), so the
# figures at the balancer leave out the driver's own queueing for a core.
[ -x "$nginx_bin" ] || { say "nginx is missing (apt-get install nginx)"; exit 1; }
lb_port="$(free_port)"
second=(-e "s/127.0.0.1:8082/127.0.0.1:${ports[1]:-}/")
[ "$servers" = 2 ] || second=(-e "/127.0.0.1:8082/d")
sed -e "s/127.0.0.1:8081/127.0.0.1:${ports[0]}/" "${second[@]}" \
    -e "s/listen 127.0.0.1:8080/listen 127.0.0.1:$lb_port/" "$root/docs/school-nginx.conf" >"$tmp/headlab.conf"
grep -q "${ports[$((servers - 1))]}" "$tmp/headlab.conf" && grep -q "$lb_port" "$tmp/headlab.conf" ||
  { say "docs/school-nginx.conf no longer has the ports this test changes"; exit 1; }
cat >"$tmp/nginx.conf" <<CONF
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 8192; }
http {
  log_format timing '\$status \$request_time \$request_uri';
  access_log $tmp/access.log timing buffer=256k flush=1s;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  include $tmp/headlab.conf;
}
CONF
"$nginx_bin" -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/nginx-error.log"
url="http://127.0.0.1:$lb_port"
for _ in $(seq 50); do curl -sf "$url/api/health" >/dev/null && break; sleep 0.1; done

say "$engine: $learners learners of $classes classes for ${seconds}s$( [ "$think" != 0 ] && echo ", ${think}s between steps") through $url to server(s) on ${ports[*]}$(
  [ "$kill_first" = 1 ] && echo "; SIGKILL to the first at $((seconds * 2 / 5))s, started again after the run")"
killer=""
if [ "$kill_first" = 1 ]; then
  ( sleep "$((seconds * 2 / 5))"; kill -KILL "${pids[0]}"; echo "killed" >"$tmp/killed" ) &
  killer=$!
fi
/usr/bin/python3 "$root/tests/scale/learners.py" drive --url "$url" --learners "$learners" --classes "$classes" \
  --seconds "$seconds" --think "$think" --state "$tmp/state.json" | tee "$tmp/drive.txt"
[ -z "$killer" ] || wait "$killer" || true
kill -USR1 "$(cat "$tmp/nginx.pid")" 2>/dev/null || true  # reopen the log: its buffer is written out
sleep 1
/usr/bin/python3 "$root/tests/scale/learners.py" balancer --log "$tmp/access.log" | tee -a "$tmp/drive.txt"
failed=0
if [ "$kill_first" = 1 ]; then
  if [ -f "$tmp/killed" ] && ! kill -0 "${pids[0]}" 2>/dev/null; then
    # The killed server comes back on the same database (a supervisor's restart): the views
    # must then be complete on it too.
    ports[0]="$(free_port)"
    start_server 1 "${ports[0]}"
  else
    say "FAILED: the first server was not killed"; failed=1
  fi
fi
for i in $(seq "$servers"); do
  kill -0 "${pids[$((i - 1))]}" 2>/dev/null || { say "FAILED: server $i died"; failed=1; }
done

direct=""
for p in "${ports[@]}"; do direct+="${direct:+,}http://127.0.0.1:$p"; done
/usr/bin/python3 "$root/tests/scale/learners.py" verify --url "$url" --servers "$direct" --state "$tmp/state.json" \
  --db "$db" --psql "$psql_bin" || failed=1
grep -q "failed 0 " "$tmp/drive.txt" || { say "FAILED: some requests failed (see statuses above)"; failed=1; }
[ -z "${HEADLAB_SCALE_RESULT:-}" ] || { echo "engine $engine servers $servers"; cat "$tmp/drive.txt"; } >>"$HEADLAB_SCALE_RESULT"
[ "$engine" != postgresql ] || "$psql_bin" -qX "$admin" -c "DROP DATABASE $name WITH (FORCE)" >/dev/null || true
if [ $failed -ne 0 ]; then
  tail -5 "$tmp"/serve*.log "$tmp/nginx-error.log" 2>/dev/null || true
  exit 1
fi
say "passed: no request failed, no acknowledged write lost, every class's view complete on $servers server(s)$(
  [ "$kill_first" = 1 ] && echo ", across a SIGKILL of one of two servers")"
