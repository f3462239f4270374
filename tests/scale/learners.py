#!/usr/bin/env python3
"""tests/scale/learners.py — simulated learners for the scale-out test (tests/scale/run.sh).

Each learner is a thread with its own keep-alive connection to the load balancer: it reports
what it has on screen (POST /api/progress/check, which records a challenge), reads its
progress back, and moves on to a new learner id, until the time is up. A write counts as
acknowledged when its answer was 200 with the challenge done; those ids go to --acked.
Then `verify` reads every acknowledged learner back through the load balancer.

  learners.py drive  --url http://127.0.0.1:8080 --learners 40 --seconds 20 --acked acked.txt [--think 2]
  learners.py verify --url http://127.0.0.1:8080 --acked acked.txt
Standard library only; loopback only; bounded in time and count.
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse

LESSON = "causal-mask"
CHALLENGE = "induction-next-word"
BODY = {"lesson": LESSON, "sentence": "the cat chased the dog . the cat chased the",
        "head": "induction", "mask": True, "query": 8}


class Client:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def request(self, method, path, body=None):
        """(status, parsed JSON or None); status 0 when the connection failed."""
        for attempt in range(2):  # a keep-alive connection the balancer closed: open another
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
                headers = {"Content-Type": "application/json"} if body is not None else {}
                self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
                r = self.conn.getresponse()
                data = r.read()
                try:
                    return r.status, json.loads(data)
                except ValueError:
                    return r.status, None
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 1 or method == "POST":
                    return 0, None
        return 0, None


def percentile(values, p):
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))]


def drive(args):
    deadline = time.monotonic() + args.seconds
    lock = threading.Lock()
    acked, statuses, latencies = [], {}, []

    def learner(n):
        c = Client(args.url)
        i = 0
        while time.monotonic() < deadline:
            lid = f"class{n % 40:02d}-learner{n:04d}-{i:05d}"
            i += 1
            t0 = time.monotonic()
            status, body = c.request("POST", "/api/progress/check", dict(BODY, learner=lid))
            t1 = time.monotonic()
            ok = status == 200 and any(ch["id"] == CHALLENGE and ch["done"] for ch in (body or {}).get("challenges", []))
            status2, _ = c.request("GET", f"/api/progress?learner={lid}&lesson={LESSON}")
            t2 = time.monotonic()
            if args.think > 0:
                time.sleep(args.think)  # a person reading the page before the next step
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                statuses[status2] = statuses.get(status2, 0) + 1
                latencies.extend([t1 - t0, t2 - t1])
                if ok:
                    acked.append(lid)

    threading.stack_size(256 * 1024)  # thousands of learners
    threads = [threading.Thread(target=learner, args=(n,)) for n in range(args.learners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(args.acked, "w") as f:
        f.write("".join(a + "\n" for a in acked))
    total = sum(statuses.values())
    failed = total - statuses.get(200, 0)
    print(f"learners {args.learners} seconds {args.seconds} requests {total} failed {failed} "
          f"statuses {json.dumps(statuses, sort_keys=True)} acknowledged_writes {len(acked)} "
          f"p50_ms {percentile(latencies, 0.50) * 1000:.1f} p99_ms {percentile(latencies, 0.99) * 1000:.1f}")
    return 0


def verify(args):
    with open(args.acked) as f:
        acked = [line.strip() for line in f if line.strip()]
    missing, errors = [], []
    lock = threading.Lock()
    chunks = [acked[i::8] for i in range(8)]

    def check(ids):
        c = Client(args.url)
        for lid in ids:
            status, body = c.request("GET", f"/api/progress?learner={lid}&lesson={LESSON}")
            done = status == 200 and any(ch["id"] == CHALLENGE and ch["done"] for ch in body.get("challenges", []))
            if not done:
                with lock:
                    (missing if status == 200 else errors).append((lid, status))

    threads = [threading.Thread(target=check, args=(ids,)) for ids in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"verified {len(acked)} acknowledged writes through the balancer: missing {len(missing)} "
          f"unreadable {len(errors)}")
    for lid, status in (missing + errors)[:10]:
        print(f"  {lid}: status {status}")
    return 0 if not missing and not errors and acked else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["drive", "verify"])
    p.add_argument("--url", required=True)
    p.add_argument("--learners", type=int, default=40)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--think", type=float, default=0, help="seconds each learner waits between steps")
    p.add_argument("--acked", required=True)
    args = p.parse_args()
    host = urllib.parse.urlsplit(args.url).hostname
    if not (host == "localhost" or host.startswith("127.") or host == "::1"):
        sys.exit("learners.py: loopback addresses only")
    sys.exit(drive(args) if args.mode == "drive" else verify(args))


if __name__ == "__main__":
    main()
