#!/usr/bin/python3
"""The PyTorch reference for headlab's engine: writes random-weight GPT-2-family models in
the Hugging Face layout (config.json + model.safetensors in F32, F16 and BF16) and what a
plain PyTorch GPT-2 computes on them (logits, every head's scores and pattern, the loss,
and the logits under interventions) into tests/fixtures/model/<name>/expected.json.

Run with Debian's torch:   /usr/bin/python3 tools/reference/make_model_fixtures.py
It writes the safetensors files itself (the format is 8 bytes of header length, a JSON
header, then the raw little-endian tensors), so it needs only torch.

The reference computes in float64 from the weights exactly as stored (F16/BF16 weights are
widened first), so expected.json is the exact answer each file's weights give.
"""
import json
import math
import os
import struct
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "model")

# name, L, NH, C, n_ctx, V, mlp, tied, T, prefix, extra buffers
SHAPES = [
    dict(name="gpt2_tiny", L=2, NH=2, C=16, n_ctx=32, V=64, mlp=True, tied=True, T=20,
         prefix="transformer.", buffers=False),
    dict(name="attn_only", L=2, NH=4, C=32, n_ctx=24, V=50, mlp=False, tied=False, T=24,
         prefix="", buffers=False),
    # T = 70 crosses the 64-query blocks of the causal kernel; no prefix plus the
    # attn.bias / attn.masked_bias buffers, as the hub's gpt2 file has them.
    dict(name="gpt2_wide", L=3, NH=3, C=48, n_ctx=80, V=97, mlp=True, tied=True, T=70,
         prefix="", buffers=True),
]

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def make_weights(s, g):
    L, C, V, n_ctx = s["L"], s["C"], s["V"], s["n_ctx"]
    # Larger than GPT-2's 0.02 so the heads have sharp, varied patterns worth comparing.
    def n(*shape, std=0.3):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std
    w = {"wte.weight": n(V, C, std=0.5), "wpe.weight": n(n_ctx, C, std=0.5)}
    for l in range(L):
        h = f"h.{l}."
        w[h + "ln_1.weight"] = 1.0 + n(C, std=0.2)
        w[h + "ln_1.bias"] = n(C, std=0.1)
        w[h + "attn.c_attn.weight"] = n(C, 3 * C)      # Conv1D: (in, out)
        w[h + "attn.c_attn.bias"] = n(3 * C, std=0.1)
        w[h + "attn.c_proj.weight"] = n(C, C, std=0.15)
        w[h + "attn.c_proj.bias"] = n(C, std=0.1)
        if s["mlp"]:
            w[h + "ln_2.weight"] = 1.0 + n(C, std=0.2)
            w[h + "ln_2.bias"] = n(C, std=0.1)
            w[h + "mlp.c_fc.weight"] = n(C, 4 * C, std=0.2)
            w[h + "mlp.c_fc.bias"] = n(4 * C, std=0.1)
            w[h + "mlp.c_proj.weight"] = n(4 * C, C, std=0.1)
            w[h + "mlp.c_proj.bias"] = n(C, std=0.1)
    w["ln_f.weight"] = 1.0 + n(C, std=0.2)
    w["ln_f.bias"] = n(C, std=0.1)
    if not s["tied"]:
        w["lm_head.weight"] = n(V, C, std=0.5)
    return w


def layer_norm(x, weight, bias, eps=1e-5):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def gpt2_forward(s, w, ids, ablate=(), replace=(), block=()):
    """A plain GPT-2 (nanoGPT's Block: x + attn(ln_1(x)), x + mlp(ln_2(x))) in float64.
    ablate: [(layer, head)] zero the head's z; replace: [(layer, head)] uniform pattern;
    block: [(layer, head, key)] hide the key (head -1 = all heads) from queries that can see
    another key. Returns logits (T, V), scores and patterns (L, NH, T, T)."""
    L, NH, C = s["L"], s["NH"], s["C"]
    HS = C // NH
    T = len(ids)
    idx = torch.tensor(ids)
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    all_scores, all_patterns = [], []
    for l in range(L):
        h = f"h.{l}."
        a = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"])
        qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=1)
        q = q.view(T, NH, HS).transpose(0, 1)  # (NH, T, HS)
        k = k.view(T, NH, HS).transpose(0, 1)
        v = v.view(T, NH, HS).transpose(0, 1)
        scores = q @ k.transpose(1, 2) / math.sqrt(HS)  # (NH, T, T)
        masked = scores.masked_fill(~causal, float("-inf"))
        for (bl, bh, key) in block:
            if bl != l:
                continue
            for head in range(NH):
                if bh != -1 and bh != head:
                    continue
                for t in range(T):
                    if key <= t and t > 0:
                        masked[head, t, key] = float("-inf")
        pattern = torch.softmax(masked, dim=-1)
        for (rl, rh) in replace:
            if rl == l:
                pattern[rh] = causal.double() / causal.double().sum(dim=1, keepdim=True)
        z = (pattern @ v).transpose(0, 1).reshape(T, C)
        for (al, ah) in ablate:
            if al == l:
                z[:, ah * HS:(ah + 1) * HS] = 0.0
        x = x + z @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
        if s["mlp"]:
            m = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"])
            m = torch.nn.functional.gelu(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"], approximate="tanh")
            x = x + m @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        all_scores.append(scores)
        all_patterns.append(pattern)
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    unembed = w["wte.weight"] if s["tied"] else w["lm_head.weight"]
    logits = x @ unembed.T
    return logits, torch.stack(all_scores), torch.stack(all_patterns)


def next_token_loss(logits, ids):
    return torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:])).item()


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        b = t.to(DTYPES[dtype]).contiguous()
        raw = b.view(torch.int16).numpy().tobytes() if dtype != "F32" else b.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def rounded(t):
    return [float(f"{v:.7g}") for v in t.flatten().tolist()]


def causal_half(x):
    """(L, NH, T, T) -> [L][NH][query][keys 0..query]: the masked half is not stored."""
    L, NH, T, _ = x.shape
    return [[[rounded(x[l, h, t, :t + 1]) for t in range(T)] for h in range(NH)] for l in range(L)]


def main():
    g = torch.Generator().manual_seed(20260501)
    for s in SHAPES:
        d = os.path.join(OUT, s["name"])
        os.makedirs(d, exist_ok=True)
        w = make_weights(s, g)
        ids = torch.randint(0, s["V"], (s["T"],), generator=g).tolist()
        config = {
            "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
            "n_layer": s["L"], "n_head": s["NH"], "n_embd": s["C"], "n_positions": s["n_ctx"],
            "n_ctx": s["n_ctx"], "vocab_size": s["V"], "layer_norm_epsilon": 1e-5,
            "bos_token_id": s["V"] - 1, "eos_token_id": s["V"] - 1,
            "tie_word_embeddings": s["tied"], "headlab_mlp": s["mlp"],
        }
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        expected = {"ids": ids, "variants": {}}
        for dtype in ["F32", "F16", "BF16"]:
            stored = {}
            for name, t in w.items():
                # Conv1D weights are already (in, out) as HF stores them.
                key = (name if name.startswith("lm_head") else s["prefix"] + name)
                stored[key] = t.to(DTYPES[dtype]).to(torch.float64)
            if s["buffers"]:
                for l in range(s["L"]):
                    stored[f"{s['prefix']}h.{l}.attn.bias"] = torch.tril(torch.ones(1, 1, s["n_ctx"], s["n_ctx"]))
                    stored[f"{s['prefix']}h.{l}.attn.masked_bias"] = torch.tensor(-1e4)
            file = "model.safetensors" if dtype == "F32" else f"model.{dtype.lower()}.safetensors"
            write_safetensors(os.path.join(d, file), stored, dtype)
            # the reference runs on the weights exactly as stored in this file
            ws = {k[len(s["prefix"]):] if k.startswith(s["prefix"]) and s["prefix"] else k: v
                  for k, v in stored.items()}
            logits, scores, patterns = gpt2_forward(s, ws, ids)
            variant = {"file": file, "logits": [rounded(r) for r in logits],
                       "loss": next_token_loss(logits, ids)}
            if dtype == "F32":
                variant["scores"] = causal_half(scores)
                variant["pattern"] = causal_half(patterns)
                iv = {}
                l_last = s["L"] - 1
                iv["ablate_zero_l0h1"] = gpt2_forward(s, ws, ids, ablate=[(0, 1)])[0]
                iv["replace_uniform_l1h0"] = gpt2_forward(s, ws, ids, replace=[(1, 0)])[0]
                iv["block_key0_l0_all"] = gpt2_forward(s, ws, ids, block=[(0, -1, 0)])[0]
                iv["block_key3_last_h1"] = gpt2_forward(s, ws, ids, block=[(l_last, 1, 3)])[0]
                variant["interventions"] = {k: {"logits": [rounded(r) for r in v], "loss": next_token_loss(v, ids)}
                                            for k, v in iv.items()}
            expected["variants"][dtype] = variant
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump(expected, f, separators=(",", ":"))
        print(f"wrote {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
