#!/usr/bin/python3
"""The PyTorch peer of bench/patch_bench.cpp: TransformerLens's activation-patching loop
(generic_activation_patch: one full forward of the corrupted batch per index, a hook that
overwrites the slice with the clean run's, every logit, then the metric), on the same
GPT-2-family weights and the same ids, written from TL's patching.py (not imported: Debian has
no TransformerLens). The batch runs as one forward per index, as TL runs it.

  /usr/bin/python3 bench/torch_patch_bench.py --model DIR --what resid_pre --pairs 8 --tokens 15

prints: what=resid_pre pairs=8 tokens=15 wall_ms=... cpu_ms=... runs=... peak_rss_mb=... checksum=...
"""
import argparse
import json
import math
import os
import resource
import time

import torch

from bench_common import read_safetensors


def bench_token_id(t, V):
    return (t * 7919 + 13) % V


class HookedGPT2:
    """GPT-2 over a batch (B, T) with TL's hook points resid_pre and z: hook(name, layer, act)
    may write act in place."""

    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w

    def __call__(self, idx, hook=None):
        cfg, w = self.cfg, self.w
        C, NH = cfg["n_embd"], cfg["n_head"]
        HS = C // NH
        B, T = idx.shape
        x = w["wte.weight"][idx] + w["wpe.weight"][:T]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for l in range(cfg["n_layer"]):
            if hook:
                hook("resid_pre", l, x)
            h = f"h.{l}."
            a = torch.nn.functional.layer_norm(x, (C,), w[h + "ln_1.weight"], w[h + "ln_1.bias"], 1e-5)
            qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]
            q, k, v = (t.view(B, T, NH, HS).transpose(1, 2) for t in qkv.split(C, dim=2))
            att = ((q @ k.transpose(2, 3)) * (1.0 / math.sqrt(HS))).masked_fill(~mask, float("-inf")).softmax(-1)
            z = (att @ v).transpose(1, 2)  # (B, T, NH, HS): TL's hook_z
            if hook:
                z = z.contiguous()
                hook("z", l, z)
            x = x + z.reshape(B, T, C) @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
            m = torch.nn.functional.layer_norm(x, (C,), w[h + "ln_2.weight"], w[h + "ln_2.bias"], 1e-5)
            m = torch.nn.functional.gelu(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"], approximate="tanh")
            x = x + m @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        x = torch.nn.functional.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
        return x @ w["wte.weight"].T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--what", default="resid_pre", choices=["resid_pre", "z_all_pos", "z_by_pos"])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=15)
    ap.add_argument("--layers", default="")
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    model = HookedGPT2(cfg, read_safetensors(os.path.join(args.model, "model.safetensors"), strip_prefix="transformer."))
    V, T, L, NH = cfg["vocab_size"], args.tokens, cfg["n_layer"], cfg["n_head"]
    clean = torch.tensor([[(bench_token_id(t, V) + 1009 * k) % V for t in range(T)] for k in range(args.pairs)])
    corrupted = clean.clone()
    for t in (2, 5):
        corrupted[:, t] = (clean[:, t] + 4409) % V
    answer, wrong = 464 % V, 1757 % V
    layers = range(L)
    if args.layers:
        a, b = (int(s) for s in args.layers.split("-"))
        layers = range(a, b + 1)
    point = "resid_pre" if args.what == "resid_pre" else "z"
    if args.what == "resid_pre":
        index = [(l, p) for l in layers for p in range(T)]
    elif args.what == "z_all_pos":
        index = [(l, h) for l in layers for h in range(NH)]
    else:
        index = [(l, p, h) for l in layers for p in range(T) for h in range(NH)]

    def metric(logits):  # the mean logit difference at the last position
        return (logits[:, -1, answer] - logits[:, -1, wrong]).mean().item()

    c0, t0 = time.process_time(), time.perf_counter()
    values = []
    with torch.inference_mode():
        cache = {}
        model(clean, lambda name, l, act: cache.__setitem__((name, l), act.clone()) if name == point else None)
        for ix in index:
            src = cache[(point, ix[0])]

            def patch(name, l, act, ix=ix, src=src):
                if name != point or l != ix[0]:
                    return
                if args.what == "resid_pre":
                    act[:, ix[1]] = src[:, ix[1]]
                elif args.what == "z_all_pos":
                    act[:, :, ix[1]] = src[:, :, ix[1]]
                else:
                    act[:, ix[1], ix[2]] = src[:, ix[1], ix[2]]

            values.append(metric(model(corrupted, patch)))
    t1, c1 = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"what={args.what} pairs={args.pairs} tokens={T} wall_ms={(t1 - t0) * 1000:.1f} "
          f"cpu_ms={(c1 - c0) * 1000:.1f} runs={len(index) + 1} peak_rss_mb={rss:.0f} checksum={sum(values):.6f}")


if __name__ == "__main__":
    main()
