#!/usr/bin/python3
"""bench/model_time_bench.py — issue 25's model-time benchmark: one client sending patching
sweeps back to back beside learners sending short runs, against one running `headlab serve`.

  bench/model_time_bench.py --port 18731 [--seconds 20] [--pairs 30] [--learners 10]

The sweeping client connects from 127.0.0.2 and posts POST /api/model/patch (--pairs random
prompt pairs, attn_head_by_pos_every) again as soon as it is answered (after a 429 it waits
0.5 s); each learner connects from its own address (127.0.1.N) and posts POST
/api/model/run with a distinct 12-word text every 0.2 s x --learners (so the class sends 5 runs
a second in all). Loopback on Linux answers every 127/8 address, so each is its own client.
Prints the learners' latency (p50, p90, max), the sweeps answered and refused (429) with their
Retry-After, for comparing `headlab serve --client-model-seconds N` with 0 or another build.

Standard library only (Debian's /usr/bin/python3).
"""
import argparse
import http.client
import json
import random
import threading
import time

WORDS = "gray whale ink crown plum fog violin arch cat sat mat dog ran far sun sea sky red blue tree".split()


def post(port, source, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    t = time.time()
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status, time.time() - t, r.getheader("Retry-After")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--learners", type=int, default=10)
    a = ap.parse_args()
    stop = time.time() + a.seconds
    sweeps = {"answered": 0, "refused": 0, "retry_after": []}
    learners = []
    lock = threading.Lock()

    def sweeper():
        while time.time() < stop:
            pairs = []
            for _ in range(a.pairs):
                w = [random.choice(WORDS) for _ in range(14)]
                c = w[:]
                c[6], c[7] = c[7], c[6]
                pairs.append({"clean": " " + " ".join(w), "corrupted": " " + " ".join(c), "answer": "#100", "wrong": "#200"})
            s, _, retry = post(a.port, "127.0.0.2", "/api/model/patch", {"prompts": pairs, "what": "attn_head_by_pos_every"})
            if s == 200:
                sweeps["answered"] += 1
            elif s == 429:
                sweeps["refused"] += 1
                sweeps["retry_after"].append(retry)
                time.sleep(0.5)
            else:
                raise SystemExit(f"a sweep answered {s}")

    def learner(source):
        time.sleep(random.random())
        while time.time() < stop:
            text = " ".join(random.choice(WORDS) for _ in range(12)) + " " + str(random.random())
            s, d, _ = post(a.port, source, "/api/model/run", {"text": text, "heads": [[0, 1]], "views": ["pattern"]})
            with lock:
                learners.append((s, d))
            time.sleep(0.2 * a.learners)

    threads = [threading.Thread(target=sweeper)]
    threads += [threading.Thread(target=learner, args=(f"127.0.1.{i + 1}",)) for i in range(a.learners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = sorted(d for s, d in learners if s == 200)
    print(f"learners: {len(learners)} runs, {len(learners) - len(ok)} not 200; latency p50 {ok[len(ok) // 2]:.3f} s, "
          f"p90 {ok[int(len(ok) * 0.9)]:.3f} s, max {ok[-1]:.3f} s")
    print(f"sweeps: {sweeps['answered']} answered, {sweeps['refused']} refused (429), Retry-After "
          f"{', '.join(sweeps['retry_after'][:5])}{' ...' if len(sweeps['retry_after']) > 5 else ''}")


if __name__ == "__main__":
    main()
