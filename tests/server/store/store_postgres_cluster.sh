#!/usr/bin/env bash
# tests/server/store/store_postgres_cluster.sh COMMAND [ARG...] — runs COMMAND beside a throwaway
# PostgreSQL cluster and stops the cluster afterwards, whatever COMMAND did (or a signal).
#
#   tests/server/store/store_postgres_cluster.sh ctest -R Store
#
# The cluster lives in a temporary folder (initdb, trust authentication, fsync off: it holds
# nothing worth keeping), listens on 127.0.0.1 on a free port with its unix socket in that
# folder, and runs as a non-root user: PostgreSQL refuses to run as root, so as root it runs
# as the Debian package's `postgres` user (or a system user `headlab-pg` made for it).
# COMMAND sees HEADLAB_TEST_POSTGRES_URL=postgresql://headlab@127.0.0.1:PORT/postgres, a
# superuser that may create and drop databases. Exits with COMMAND's status.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
say() { printf 'postgres cluster: %s\n' "$*" >&2; }

pg_bin=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then pg_bin="$d"; break; fi
done
if [ -z "$pg_bin" ]; then
  say "FAILED: no PostgreSQL server under /usr/lib/postgresql (Debian package postgresql); running without it"
  set +e; "$@"; status=$?; set -e
  [ $status -ne 0 ] || status=1
  exit $status
fi

run_as=()
if [ "$(id -u)" -eq 0 ]; then
  user=postgres
  if ! id -u "$user" >/dev/null 2>&1; then
    user=headlab-pg
    id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  fi
  run_as=(runuser -u "$user" --)
fi

dir="$(mktemp -d /tmp/headlab-pg.XXXXXX)"
chmod 755 "$dir"
[ ${#run_as[@]} -eq 0 ] || chown "$user" "$dir"

# A PostgreSQL program, as the cluster's user, from a folder that user may enter.
pg() { (cd "$dir" && "${run_as[@]}" "$pg_bin/$1" "${@:2}"); }

stop() {
  if [ -f "$dir/data/postmaster.pid" ]; then
    pg pg_ctl -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      pg pg_ctl -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
started=0
if ! pg initdb -D "$dir/data" -U headlab --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
  cat "$dir/initdb.log" >&2; say "FAILED: initdb"
elif ! pg pg_ctl -D "$dir/data" -l "$dir/server.log" -w -t 60 \
     -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off -c max_connections=200" \
     start >/dev/null; then
  cat "$dir/server.log" >&2; say "FAILED: the server did not start"
else
  started=1
  export HEADLAB_TEST_POSTGRES_URL="postgresql://headlab@127.0.0.1:$port/postgres"
  say "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (socket and data in $dir)"
fi

# Without a cluster COMMAND still runs (its PostgreSQL tests skip, saying so), so the other
# results are not lost, and this script fails afterwards.
set +e
"$@"
status=$?
set -e
if [ $started -ne 1 ]; then
  say "FAILED: COMMAND ran without PostgreSQL (see above)"
  [ $status -ne 0 ] || status=1
fi
exit $status
