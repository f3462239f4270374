#!/usr/bin/python3
"""The PyTorch peer of bench/engine_bench.cpp: the same GPT-2-family model (read from the
same model.safetensors), batch 1, every head's pattern recorded (kept, like
output_attentions=True), timed the same way. One length per process.

  /usr/bin/python3 bench/torch_engine_bench.py --model DIR --tokens 256 --repeats 5

Give it its fair configuration (bench/run_engine_bench.sh does): torch.set_num_threads(2),
OMP_WAIT_POLICY=PASSIVE, LD_PRELOAD=libjemalloc.so.2 with
MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1.
"""
import argparse
import json
import math
import os

import torch

from bench_common import read_safetensors, result_line, time_forwards, token_ids


class GPT2(torch.nn.Module):
    """nanoGPT's GPT-2, eager attention so the patterns exist to be recorded."""

    def __init__(self, cfg, w):
        super().__init__()
        self.cfg, self.w = cfg, w

    def forward(self, idx):
        cfg, w = self.cfg, self.w
        C, NH = cfg["n_embd"], cfg["n_head"]
        HS = C // NH
        T = idx.shape[0]
        x = w["wte.weight"][idx] + w["wpe.weight"][:T]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        patterns = []
        for l in range(cfg["n_layer"]):
            h = f"h.{l}."
            a = torch.nn.functional.layer_norm(x, (C,), w[h + "ln_1.weight"], w[h + "ln_1.bias"], 1e-5)
            qkv = torch.addmm(w[h + "attn.c_attn.bias"], a, w[h + "attn.c_attn.weight"])
            q, k, v = (t.view(T, NH, HS).transpose(0, 1) for t in qkv.split(C, dim=1))
            att = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(HS))
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            patterns.append(att)
            z = (att @ v).transpose(0, 1).reshape(T, C)
            x = x + torch.addmm(w[h + "attn.c_proj.bias"], z, w[h + "attn.c_proj.weight"])
            m = torch.nn.functional.layer_norm(x, (C,), w[h + "ln_2.weight"], w[h + "ln_2.bias"], 1e-5)
            m = torch.nn.functional.gelu(torch.addmm(w[h + "mlp.c_fc.bias"], m, w[h + "mlp.c_fc.weight"]),
                                         approximate="tanh")
            x = x + torch.addmm(w[h + "mlp.c_proj.bias"], m, w[h + "mlp.c_proj.weight"])
        x = torch.nn.functional.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
        return x @ w["wte.weight"].T, patterns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    model = GPT2(cfg, read_safetensors(os.path.join(args.model, "model.safetensors"), strip_prefix="transformer."))
    T = args.tokens
    idx = torch.tensor(token_ids(T, cfg["vocab_size"]))
    times, cpu, (logits, _) = time_forwards(lambda: model(idx), args.repeats)
    print(result_line(T, times, cpu, logits[-1]))


if __name__ == "__main__":
    main()
