#!/usr/bin/python3
"""The PyTorch peer of bench/amx_bench.cpp: Llama-3.2-1B's matrices at ROWS rows as bfloat16
products, `x @ w.T` with x (ROWS, k) and w (n, k) both bfloat16 (float32 sums), which PyTorch
hands to oneDNN (its AMX kernel where the CPU has AMX-BF16, the AVX-512 one otherwise), and the
same in float32 (OpenBLAS's sgemm) for scale. One line per matrix, the fields of headlab_amx_bench:

  matrix=gate_up rows=1280 k=2048 n=16384 dtype=bfloat16 ms=... gflops=...

  /usr/bin/python3 bench/torch_matmul_bench.py [--rows 1280] [--repeats 5]

Give it its fair configuration (bench/run_amx_bench.sh does, through bench/bench_lib.sh).
"""
import argparse
import time

import torch

MATRICES = [("qkv", 2048, 2048 + 2 * 512), ("o", 2048, 2048), ("gate_up", 2048, 2 * 8192),
            ("down", 8192, 2048), ("unembed", 2048, 128256)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1280)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(1)
    total = {"bfloat16": [0.0, 0.0], "float32": [0.0, 0.0]}
    for name, k, n in MATRICES:
        x32 = torch.randn(a.rows, k, generator=g)
        w32 = torch.randn(n, k, generator=g) * 0.02
        for dtype in (torch.bfloat16, torch.float32):
            x, w = x32.to(dtype), w32.to(dtype)
            best = float("inf")
            with torch.no_grad():
                for r in range(a.repeats + 1):  # round 0 warms up
                    t = time.perf_counter()
                    torch.matmul(x, w.t())
                    s = time.perf_counter() - t
                    if r > 0:
                        best = min(best, s)
            flop = 2.0 * a.rows * k * n
            times = 1 if name == "unembed" else 16  # a forward: 16 layers and the unembedding
            d = str(dtype).replace("torch.", "")
            total[d][0] += flop * times
            total[d][1] += best * times
            print(f"matrix={name} rows={a.rows} k={k} n={n} dtype={d} ms={best * 1e3:.2f} gflops={flop / best / 1e9:.0f}", flush=True)
    for d, (flop, s) in total.items():
        print(f"matrix=forward rows={a.rows} dtype={d} ms={s * 1e3:.1f} gflops={flop / s / 1e9:.0f}")


if __name__ == "__main__":
    main()
