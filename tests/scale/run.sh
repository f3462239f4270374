#!/usr/bin/env bash
# tests/scale/run.sh [BUILD_DIR] [SECONDS] [LEARNERS] — the scale-out test: two `headlab serve`
# on one PostgreSQL behind nginx (docs/school-nginx.conf, its ports changed), simulated
# learners through nginx (tests/scale/learners.py), one server killed with SIGKILL mid-run.
# Passes when every write nginx acknowledged is in PostgreSQL and readable through nginx,
# and no request failed. Loopback only, free ports, about SECONDS + 20 s.
# Without HEADLAB_TEST_POSTGRES_URL it starts a throwaway cluster for itself.
# For load figures rather than failover: HEADLAB_SCALE_KILL=0 kills no server, and
# HEADLAB_SCALE_THINK=S makes each learner wait S seconds between steps.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-20}"
learners="${3:-40}"
if [ -z "${HEADLAB_TEST_POSTGRES_URL:-}" ]; then
  [ -z "${HEADLAB_SCALE_CLUSTER_TRIED:-}" ] || { echo "scale test: FAILED: no PostgreSQL cluster"; exit 1; }
  export HEADLAB_SCALE_CLUSTER_TRIED=1
  exec "$root/tests/server/store_postgres_cluster.sh" "$0" "$build" "$seconds" "$learners"
fi
say() { printf 'scale test: %s\n' "$*"; }
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$nginx_bin" ] || { say "nginx is missing (apt-get install nginx)"; exit 1; }
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

admin="$HEADLAB_TEST_POSTGRES_URL"
name="headlab_scale_$$"
"$psql_bin" -qX "$admin" -c "CREATE DATABASE $name" >/dev/null
db="${admin%/*}/$name"

# Two servers, the same --db. Every client reaches them through nginx from 127.0.0.1, so the
# per-address limits are the class's, not one learner's.
ports=()
for i in 1 2; do
  port="$(free_port)"
  "$build/headlab" serve --no-model --port "$port" --db "$db" --progress-writes-per-minute 0 \
    --max-connections-per-ip 4000 >"$tmp/serve$i.log" 2>&1 &
  pids+=($!)
  disown $!  # the SIGKILL below is meant: no "Killed" from bash
  ports+=("$port")
done
for i in 0 1; do
  for _ in $(seq 100); do grep -q "press Ctrl-C" "$tmp/serve$((i + 1)).log" 2>/dev/null && break; sleep 0.1; done
  grep -q "progress is kept in postgresql://" "$tmp/serve$((i + 1)).log" ||
    { say "server $((i + 1)) did not start on PostgreSQL"; cat "$tmp/serve$((i + 1)).log"; exit 1; }
done

# docs/school-nginx.conf as a school would use it, only its ports changed.
lb_port="$(free_port)"
sed -e "s/127.0.0.1:8081/127.0.0.1:${ports[0]}/" -e "s/127.0.0.1:8082/127.0.0.1:${ports[1]}/" \
    -e "s/listen 127.0.0.1:8080/listen 127.0.0.1:$lb_port/" "$root/docs/school-nginx.conf" >"$tmp/headlab.conf"
grep -q "${ports[1]}" "$tmp/headlab.conf" && grep -q "$lb_port" "$tmp/headlab.conf" ||
  { say "docs/school-nginx.conf no longer has the ports this test changes"; exit 1; }
cat >"$tmp/nginx.conf" <<CONF
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  include $tmp/headlab.conf;
}
CONF
"$nginx_bin" -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/nginx-error.log"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$lb_port/api/health" >/dev/null && break; sleep 0.1; done

kill_first="${HEADLAB_SCALE_KILL:-1}"
say "$learners learners for ${seconds}s through nginx on port $lb_port to servers on ${ports[*]}$(
  [ "$kill_first" = 1 ] && echo "; SIGKILL to the first at $((seconds * 2 / 5))s")"
killer=""
if [ "$kill_first" = 1 ]; then
  ( sleep "$((seconds * 2 / 5))"; kill -KILL "${pids[0]}"; echo "killed" >"$tmp/killed" ) &
  killer=$!
fi
/usr/bin/python3 "$root/tests/scale/learners.py" drive --url "http://127.0.0.1:$lb_port" --learners "$learners" \
  --seconds "$seconds" --think "${HEADLAB_SCALE_THINK:-0}" --acked "$tmp/acked.txt" | tee "$tmp/drive.txt"
[ -z "$killer" ] || wait "$killer" || true
failed=0
if [ "$kill_first" = 1 ]; then
  [ -f "$tmp/killed" ] && ! kill -0 "${pids[0]}" 2>/dev/null || { say "FAILED: the first server was not killed"; failed=1; }
fi
kill -0 "${pids[1]}" 2>/dev/null || { say "FAILED: the second server died"; failed=1; }

/usr/bin/python3 "$root/tests/scale/learners.py" verify --url "http://127.0.0.1:$lb_port" --acked "$tmp/acked.txt" || failed=1
in_db="$("$psql_bin" -qAtX "$db" -c "SELECT count(*) FROM progress WHERE challenge = 'induction-next-word'")"
acked="$(wc -l <"$tmp/acked.txt")"
say "acknowledged $acked, in PostgreSQL $in_db (never fewer; more only for a write done but not answered when the server died)"
[ "$in_db" -ge "$acked" ] || { say "FAILED: acknowledged writes are missing from PostgreSQL"; failed=1; }
grep -q "failed 0 " "$tmp/drive.txt" || { say "FAILED: some requests failed (see statuses above)"; failed=1; }
"$psql_bin" -qX "$admin" -c "DROP DATABASE $name WITH (FORCE)" >/dev/null || true
if [ $failed -ne 0 ]; then
  tail -5 "$tmp/nginx-error.log" "$tmp/serve2.log" || true
  exit 1
fi
say "passed: no acknowledged write lost, no request failed$([ "$kill_first" = 1 ] && echo ", across a SIGKILL of one of two servers")"
