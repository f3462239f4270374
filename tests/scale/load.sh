#!/usr/bin/env bash
# tests/scale/load.sh [BUILD_DIR] [SECONDS] [LEARNERS] [CLASSES] [THINK] — the load figures
# of docs/school.md (not run by CI: a few minutes of both cores): LEARNERS simulated learners
# (2,000) in CLASSES classes (40) with their teachers polling the class's view every 3 s, each
# learner pausing THINK seconds (2) between steps, for SECONDS (60):
#   1. two `headlab serve` on one PostgreSQL behind nginx (tests/scale/run.sh, no kill);
#   2. one `headlab serve` on an SQLite file behind the same nginx.
# Each run is verified as the scale-out test verifies (every acknowledged write read back, each
# class's view and CSV complete). Prints the machine's load average before each run and a
# table of the figures at the end. Run it on a quiet machine: the driver (Python threads),
# nginx, the servers and PostgreSQL share the cores, and a busy neighbour shows in the p99.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-60}"
learners="${3:-2000}"
classes="${4:-40}"
think="${5:-2}"
result="$(mktemp)"
trap 'rm -f "$result"' EXIT
# Thousands of threads and connections: the driver's and nginx's descriptors.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

for engine in postgresql sqlite; do
  # A minute's rest first, so the one-minute load average says more about the neighbours
  # than about the run before.
  [ "$engine" = postgresql ] || sleep 60
  echo "load: $(date -u +%H:%M:%SZ) load average before the $engine run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$result"
  HEADLAB_SCALE_ENGINE=$engine HEADLAB_SCALE_KILL=0 HEADLAB_SCALE_THINK="$think" HEADLAB_SCALE_RESULT="$result" \
    "$root/tests/scale/run.sh" "$build" "$seconds" "$learners" "$classes"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$result"
done

echo
echo "At the balancer (nginx's request time), and at the driver (which adds its own wait for a core):"
echo
echo "| setup | requests | failed | 503 | learner p50 | learner p99 | teacher view p50 | teacher view p99 | at the driver: learner p50 / p99 | driver lag p99 | load average before; after |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
awk '
  /^load average before:/ { before = $4 " " $5 " " $6 }
  /^engine/ { setup = ($2 == "postgresql") ? "two servers, PostgreSQL" : "one server, SQLite" }
  /^requests/ { requests = $2; failed = $4; unavailable = $6 }
  /^learner_p50_ms/ { lp50 = $2; lp99 = $4; lag = $12 }
  /^balancer_requests/ { blp50 = $4; blp99 = $6; bvp50 = $8; bvp99 = $10 }
  /^load average after:/ {
    printf "| %s | %s | %s | %s | %s ms | %s ms | %s ms | %s ms | %s / %s ms | %s ms | %s; %s |\n", setup, requests, failed,
           unavailable, blp50, blp99, bvp50, bvp99, lp50, lp99, lag, before, $4 " " $5 " " $6
  }' "$result"
