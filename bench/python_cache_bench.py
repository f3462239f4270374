#!/usr/bin/python3
"""The Python module's run_with_cache (issue 28) on the GPT-2-small shape: every hook at T tokens
from Python, with the logits (as bench/torch_cache_bench.py's forward returns them) and without
(as bench/cache_bench.cpp's engine-only figure), and the calling overhead of one call on the
built-in model at one token.

  PYTHONPATH=SITE /usr/bin/python3 bench/python_cache_bench.py --model DIR --tokens 128 --repeats 5

bench/run_python_cache_bench.sh runs it beside PyTorch and the C++ figure.
"""
import argparse
import os
import time

import numpy as np

import headlab


def token_ids(T, V):
    """bench_common.token_ids (bench/bench_clock.h's ids), without importing PyTorch into this process."""
    return [(t * 7919 + 13) % V for t in range(T)]


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def median_ms(run, repeats):
    times = []
    for r in range(repeats + 1):
        t0 = time.perf_counter()
        out = run()
        t1 = time.perf_counter()
        del out
        if r > 0:
            times.append((t1 - t0) * 1000)
    times.sort()
    return times[len(times) // 2], times[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    m = headlab.load(args.model, cache=False)
    ids = np.array(token_ids(args.tokens, m.cfg["d_vocab"]), dtype=np.int64)
    with_logits, _ = median_ms(lambda: m.run_with_cache(ids), args.repeats)
    no_logits, _ = median_ms(lambda: m.run_with_cache(ids, return_logits=False), args.repeats)
    logits, cache = m.run_with_cache(ids)
    check = float(cache[f"blocks.{m.cfg['n_layers'] - 1}.hook_resid_post"].astype(np.float64).sum())
    cache_mb = cache.nbytes() / 1048576
    del logits, cache
    # the calling overhead: one token, one hook, on the built-in model, best of 5 rounds of 1,000
    # calls in wall time and in the process's CPU time (bench/engine_call_time.cpp times the same
    # call in C++ the same two ways)
    tiny = headlab.load(os.path.join(ROOT, "models", "headlab-tiny"), cache=False)
    one = np.array([1], dtype=np.int64)
    for _ in range(100):
        tiny.run_with_cache(one, names_filter="hook_embed", return_logits=False)
    call_us = call_cpu_us = float("inf")
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(1000):
            tiny.run_with_cache(one, names_filter="hook_embed", return_logits=False)
        call_us = min(call_us, (time.perf_counter() - t0) / 1000 * 1e6)
        call_cpu_us = min(call_cpu_us, (time.process_time() - c0) / 1000 * 1e6)
    print(f"tokens={args.tokens} median_ms={with_logits:.1f} no_logits_ms={no_logits:.1f} peak_rss_mb={peak_rss_mb():.0f} "
          f"cache_mb={cache_mb:.1f} tensors={len(m.hook_names())} check_sum={check:.4f} tiny_call_us={call_us:.1f} "
          f"tiny_call_cpu_us={call_cpu_us:.1f}")


if __name__ == "__main__":
    main()
