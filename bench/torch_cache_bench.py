#!/usr/bin/python3
"""The PyTorch peer of bench/cache_bench.cpp: GPT-2 (read from the same model.safetensors),
batch 1, a forward whose hooks keep every TransformerLens hook's tensor in a dict, as
run_with_cache does (`cache[name] = tensor.detach()`: a reference, no copy), with TL's shapes:
hook_result computed per head (z_h W_O,h, use_attn_result), the norms' scale and output kept.

  /usr/bin/python3 bench/torch_cache_bench.py --model DIR --tokens 128 --repeats 5

Give it its fair configuration (bench/run_cache_bench.sh does, through bench/bench_lib.sh).
"""
import argparse
import json
import os

import torch

from bench_common import peak_rss_mb, read_safetensors, token_ids, time_forwards, blas_core


def layer_norm(cache, name, x, w, b, eps=1e-5):
    x = x - x.mean(-1, keepdim=True)
    scale = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    cache[name + ".hook_scale"] = scale
    out = x / scale * w + b
    cache[name + ".hook_normalized"] = out
    return out


def forward_with_cache(cfg, w, idx):
    C, NH, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    HS, T = C // NH, idx.shape[0]
    cache = {}
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    e = w["wte.weight"][idx]
    p = w["wpe.weight"][:T]
    cache["hook_embed"], cache["hook_pos_embed"] = e, p
    x = e + p
    for l in range(L):
        h, n = f"h.{l}.", f"blocks.{l}."
        cache[n + "hook_resid_pre"] = x
        a = layer_norm(cache, n + "ln1", x, w[h + "ln_1.weight"], w[h + "ln_1.bias"])
        qkv = torch.addmm(w[h + "attn.c_attn.bias"], a, w[h + "attn.c_attn.weight"])
        q, k, v = (t.view(T, NH, HS) for t in qkv.split(C, dim=1))  # (T, NH, HS)
        cache[n + "attn.hook_q"], cache[n + "attn.hook_k"], cache[n + "attn.hook_v"] = q, k, v
        scores = torch.einsum("qnh,knh->nqk", q, k) / HS ** 0.5
        scores = scores.masked_fill(~mask, float("-inf"))  # (NH, T, T)
        cache[n + "attn.hook_attn_scores"] = scores
        pattern = scores.softmax(dim=-1)
        cache[n + "attn.hook_pattern"] = pattern
        z = torch.einsum("nqk,knh->qnh", pattern, v)  # (T, NH, HS)
        cache[n + "attn.hook_z"] = z
        result = torch.einsum("qnh,nhc->qnc", z, w[h + "attn.c_proj.weight"].view(NH, HS, C))  # (T, NH, C)
        cache[n + "attn.hook_result"] = result
        attn_out = result.sum(1) + w[h + "attn.c_proj.bias"]
        cache[n + "hook_attn_out"] = attn_out
        x = x + attn_out
        cache[n + "hook_resid_mid"] = x
        m = layer_norm(cache, n + "ln2", x, w[h + "ln_2.weight"], w[h + "ln_2.bias"])
        pre = torch.addmm(w[h + "mlp.c_fc.bias"], m, w[h + "mlp.c_fc.weight"])
        cache[n + "mlp.hook_pre"] = pre
        post = torch.nn.functional.gelu(pre, approximate="tanh")
        cache[n + "mlp.hook_post"] = post
        mlp_out = torch.addmm(w[h + "mlp.c_proj.bias"], post, w[h + "mlp.c_proj.weight"])
        cache[n + "hook_mlp_out"] = mlp_out
        x = x + mlp_out
        cache[n + "hook_resid_post"] = x
    x = layer_norm(cache, "ln_final", x, w["ln_f.weight"], w["ln_f.bias"])
    return x @ w["wte.weight"].T, cache


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    w = read_safetensors(os.path.join(args.model, "model.safetensors"), strip_prefix="transformer.")
    T = args.tokens
    idx = torch.tensor(token_ids(T, cfg["vocab_size"]))
    times, cpu, (logits, cache) = time_forwards(lambda: forward_with_cache(cfg, w, idx), args.repeats)
    cache_mb = sum(t.numel() * t.element_size() for t in cache.values()) / 1048576
    check = float(cache[f"blocks.{cfg['n_layer'] - 1}.hook_resid_post"].double().sum())
    print(f"tokens={T} median_ms={times[len(times) // 2]:.1f} min_ms={times[0]:.1f} cpu_ms={cpu[len(cpu) // 2]:.1f} "
          f"peak_rss_mb={peak_rss_mb():.0f} cache_mb={cache_mb:.1f} tensors={len(cache)} check_sum={check:.4f} "
          f"blas={blas_core()}")


if __name__ == "__main__":
    main()
