#!/usr/bin/python3
"""bench/train/torch_train_bench.py — PyTorch training throughput of the same models as
headlab_train_bench (forward + backward + clipped AdamW, median step), the peer it is
compared with. Model code: tools/reference/train/train_step_reference.py.
    torch_train_bench.py attn|mlp|builtin [steps]   -> prints "<name> <tokens/s> blas=<OpenBLAS kernels>"
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "reference", "train"))
import train_step_reference as ref  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_engine_bench import blas_core  # noqa: E402  (the one reader of the kernels in use)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "attn"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    torch.set_num_threads(2)
    B, T = 16, 256
    cfg = dict(n_layer=2, n_head=8, n_embd=256, n_positions=256, vocab_size=256, layer_norm_epsilon=1e-5,
               headlab_mlp=which == "mlp", tie_word_embeddings=True)
    if which == "builtin":
        # models/headlab-tiny/train_config.json at its training batch
        cfg.update(n_head=4, n_embd=128, n_positions=128, vocab_size=4096, tie_word_embeddings=False)
        B, T = 32, 128
    gen = torch.Generator().manual_seed(1)
    p = ref.make_params(cfg, gen)
    x = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen)
    y = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen)
    params = list(p.values())
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = ref.forward(cfg, p, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    print(f"{which} {B * T / times[len(times) // 2]:.0f} blas={blas_core()}")


if __name__ == "__main__":
    main()
