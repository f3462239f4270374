#!/usr/bin/python3
"""bench/class_bench.py — issue 25's class benchmark: a class of learners asking one running
`headlab serve` for the same model at the same moment.

  bench/class_bench.py --url http://127.0.0.1:18766 [--clients 40] [--tokens 32] [--layer L]
                       [--peak-gflops G] [--retry] [--warm-up]

Two bursts, each of --clients requests released together (a barrier, one thread each):
  distinct   every client its own text of --tokens words (so no answer is cached; the server's
             --max-tokens with "truncate": true makes each exactly as many tokens as it allows)
  shared     every client the lesson's default text (one forward, the rest from the cache)
Each request is POST /api/model/run asking for every head of one layer (the pattern view).
Prints per burst: p50 / p99 / max latency, the count of 200s and 503s (and other codes),
requests per second, and for the distinct burst the FLOP bound: the products the requests
need (2 x T x the matrices' weights, and attention's QK^T and PV over the causal half) over
the machine's measured peak (--peak-gflops, from headlab_matmul_bench --peak), and
throughput / bound. With --retry a client whose request answers 503 tries again after the
Retry-After the server sends (or 1 s), as the page does, and its latency counts from its
first try. With --warm-up one request of a text in neither burst goes first, alone and untimed:
the class after the teacher's first click (a fresh server's first forward also pays for its
first touch of the mapped weights and of its buffers).

Standard library only (Debian's /usr/bin/python3), so the clients cost the server little.
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse

WORDS = ("the cat dog bird fish tree river stone cloud light house garden window market bridge "
         "winter summer morning evening quiet bright small large green blue red yellow old new "
         "walks runs sings reads writes finds keeps opens closes carries").split()

LESSON_TEXT = "The cat sat on the mat. The cat sat on the mat."


def distinct_text(i, tokens):
    """Client i's text: about `tokens` words, none of the texts alike (a word-level counter)."""
    words = []
    x = 2654435761 * (i + 1) % 2**32
    for _ in range(tokens):
        x = (1103515245 * x + 12345) % 2**31
        words.append(WORDS[(x >> 8) % len(WORDS)])
    return " ".join(words) + f" {i}"


def post(url, route, body, timeout):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    data = json.dumps(body).encode()
    c.request("POST", route, data, {"Content-Type": "application/json", "Origin": url})
    r = c.getresponse()
    payload = r.read()
    retry = r.getheader("Retry-After")
    c.close()
    return r.status, payload, retry


def burst(url, bodies, retry, timeout):
    """Runs the bodies as one burst; returns [(status, seconds, tokens)] and the burst's wall time."""
    n = len(bodies)
    gate = threading.Barrier(n + 1)
    results = [None] * n

    def client(k):
        gate.wait()
        t0 = time.perf_counter()
        while True:
            try:
                status, payload, wait = post(url, "/api/model/run", bodies[k], timeout)
            except OSError as e:
                results[k] = (f"error {e.__class__.__name__}", time.perf_counter() - t0, 0)
                return
            if status == 503 and retry and time.perf_counter() - t0 < timeout:
                time.sleep(float(wait or 1))
                continue
            tokens = len(json.loads(payload).get("tokens", [])) if status == 200 else 0
            results[k] = (status, time.perf_counter() - t0, tokens)
            return

    threads = [threading.Thread(target=client, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return results, time.perf_counter() - t0


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def forward_flops(info, T):
    """Multiply-adds x 2 of one forward of T tokens (GET /api/model's config): the matrices (q, k,
    v, o, the MLP, the unembedding) and attention's QK^T and PV over the causal half."""
    cfg, block = info["config"], info["config"]["block"]
    C, L, V, NH = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_head"]
    HS, NKV, F = block["head_size"], block["n_kv_head"], block["d_mlp"]
    gated = block["mlp_kind"] in ("swiglu", "geglu")
    attn_w = C * NH * HS + 2 * C * NKV * HS + NH * HS * C
    mlp_w = ((3 if gated else 2) * C * F) if cfg.get("mlp", True) else 0
    matrices = 2 * T * (L * (attn_w + mlp_w) + C * V)
    attention = 2 * 2 * L * NH * HS * T * (T + 1) / 2
    return matrices + attention


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="the running server, e.g. http://127.0.0.1:18766")
    ap.add_argument("--clients", type=int, default=40)
    ap.add_argument("--tokens", type=int, default=32, help="words in each distinct text (sent with truncate: the server's --max-tokens sets the tokens)")
    ap.add_argument("--layer", type=int, default=0, help="the layer whose heads every request asks for")
    ap.add_argument("--peak-gflops", type=float, default=0.0, help="the machine's peak (headlab_matmul_bench --peak)")
    ap.add_argument("--retry", action="store_true", help="retry a 503 after its Retry-After, as the page does")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--warm-up", action="store_true", help="one untimed request of another text before the bursts")
    ap.add_argument("--no-predictions", action="store_true",
                    help='ask "predictions": false (the forward stops after --layer; docs/api.md)')
    a = ap.parse_args()

    u = urllib.parse.urlparse(a.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("GET", "/api/model")
    info = json.loads(c.getresponse().read())
    c.close()
    cfg = info["config"]
    heads = [[a.layer, h] for h in range(cfg["n_head"])]
    print(f"model: {info.get('name', '?')} family={cfg['family']} n_layer={cfg['n_layer']} n_head={cfg['n_head']} n_embd={cfg['n_embd']}"
          f" clients={a.clients} words={a.tokens} layer={a.layer} retry={'yes' if a.retry else 'no'} warm_up={'yes' if a.warm_up else 'no'}"
          f"{' predictions=no' if a.no_predictions else ''}")

    if a.warm_up:
        warm = {"text": distinct_text(a.clients + 1, a.tokens), "heads": heads[:1], "views": ["pattern"], "truncate": True}
        t0 = time.perf_counter()
        status = post(a.url, "/api/model/run", warm, a.timeout)[0]
        print(f"warm-up  one request of another text: {status} in {time.perf_counter() - t0:.2f} s (not counted)")
    for name, texts in (("distinct", [distinct_text(i, a.tokens) for i in range(a.clients)]),
                        ("shared", [LESSON_TEXT] * a.clients)):
        bodies = [{"text": t, "heads": heads, "views": ["pattern"], "truncate": True} for t in texts]
        if a.no_predictions:
            for b in bodies:
                b["predictions"] = False
        results, wall = burst(a.url, bodies, a.retry, a.timeout)
        ok = [r for r in results if r[0] == 200]
        lat = [r[1] for r in ok]
        codes = {}
        for r in results:
            codes[r[0]] = codes.get(r[0], 0) + 1
        line = (f"{name:8s} p50 {percentile(lat, 50):.2f} s  p99 {percentile(lat, 99):.2f} s  max {max(lat, default=float('nan')):.2f} s"
                f"  200s {len(ok)}  503s {codes.get(503, 0)}  other {sum(v for k, v in codes.items() if k not in (200, 503))}"
                f"  {len(ok) / wall:.2f} req/s  wall {wall:.2f} s")
        if name == "distinct" and a.peak_gflops > 0 and ok and not a.no_predictions:  # the bound counts every layer
            flops = sum(forward_flops(info, r[2]) for r in ok)
            bound = flops / (a.peak_gflops * 1e9)
            line += f"  FLOP bound {bound:.2f} s ({flops / 1e9:.0f} GFLOP at {a.peak_gflops:.0f} GFLOPS)  throughput/bound {bound / wall:.2f} (target >= 0.7)"
        if ok:
            line += f"  tokens {min(r[2] for r in ok)}-{max(r[2] for r in ok)}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
