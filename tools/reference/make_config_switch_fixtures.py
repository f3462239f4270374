#!/usr/bin/python3
"""An independent reference for config.json's attention switches: a plain NumPy GPT-2
forward, written here from Hugging Face's GPT2Attention._attn and
_upcast_and_reordered_attn, run on one small random model under each setting of
scale_attn_weights, scale_attn_by_inverse_layer_idx and reorder_and_upcast_attn.

Writes tests/fixtures/model/config_switches/: config.json (the base config),
model.safetensors (F32) and expected.json = {"ids", "variants": {name: {"config": the keys
to add to config.json, "logits": (T, V), "scores"/"pattern": [layer][head][query][keys 0..query]}}}.

Run with Debian's NumPy:   /usr/bin/python3 tools/reference/make_config_switch_fixtures.py
The reference computes in float64 from the float32 weights as stored.
"""
import json
import math
import os
import struct
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "model", "config_switches")

# Three layers, so that dividing by layer_idx + 1 differs between every layer.
L, NH, C, N_CTX, V, T = 3, 2, 16, 16, 40, 12
HS = C // NH

VARIANTS = {
    "default": {},
    "no_scale_attn_weights": {"scale_attn_weights": False},
    "scale_attn_by_inverse_layer_idx": {"scale_attn_by_inverse_layer_idx": True},
    "reorder_and_upcast_attn": {"reorder_and_upcast_attn": True},
    "no_scale_and_inverse_layer_idx": {"scale_attn_weights": False, "scale_attn_by_inverse_layer_idx": True},
    "all_three": {"scale_attn_by_inverse_layer_idx": True, "reorder_and_upcast_attn": True},
}


def make_weights(rng):
    def n(*shape, std=0.3):
        return (rng.standard_normal(shape) * std).astype(np.float32)
    w = {"wte.weight": n(V, C, std=0.5), "wpe.weight": n(N_CTX, C, std=0.5)}
    for l in range(L):
        h = f"h.{l}."
        w[h + "ln_1.weight"] = (1.0 + n(C, std=0.2)).astype(np.float32)
        w[h + "ln_1.bias"] = n(C, std=0.1)
        # small enough that the unscaled scores (no 1/sqrt(HS)) still give soft patterns
        w[h + "attn.c_attn.weight"] = n(C, 3 * C, std=0.2)  # Conv1D: (in, out)
        w[h + "attn.c_attn.bias"] = n(3 * C, std=0.1)
        w[h + "attn.c_proj.weight"] = n(C, C, std=0.15)
        w[h + "attn.c_proj.bias"] = n(C, std=0.1)
        w[h + "ln_2.weight"] = (1.0 + n(C, std=0.2)).astype(np.float32)
        w[h + "ln_2.bias"] = n(C, std=0.1)
        w[h + "mlp.c_fc.weight"] = n(C, 4 * C, std=0.2)
        w[h + "mlp.c_fc.bias"] = n(4 * C, std=0.1)
        w[h + "mlp.c_proj.weight"] = n(4 * C, C, std=0.1)
        w[h + "mlp.c_proj.bias"] = n(C, std=0.1)
    w["ln_f.weight"] = (1.0 + n(C, std=0.2)).astype(np.float32)
    w["ln_f.bias"] = n(C, std=0.1)
    return w


def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def attention_scores(q, k, l, switches):
    """(NH, T, HS) q and k -> (NH, T, T) scores, as transformers' GPT2Attention does."""
    scale_weights = switches.get("scale_attn_weights", True)
    by_layer = switches.get("scale_attn_by_inverse_layer_idx", False)
    if switches.get("reorder_and_upcast_attn", False):
        # _upcast_and_reordered_attn: one scale factor, applied inside the product
        factor = 1.0
        if scale_weights:
            factor /= math.sqrt(HS)
        if by_layer:
            factor /= float(l + 1)
        return factor * (q @ k.transpose(0, 2, 1))
    # _attn: the product, then divided by sqrt(HS), then by layer_idx + 1
    scores = q @ k.transpose(0, 2, 1)
    if scale_weights:
        scores = scores / math.sqrt(HS)
    if by_layer:
        scores = scores / float(l + 1)
    return scores


def gpt2_forward(w, ids, switches):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["wte.weight"][ids] + w["wpe.weight"][:len(ids)]
    causal = np.tril(np.ones((T, T), dtype=bool))
    all_scores, all_patterns = [], []
    for l in range(L):
        h = f"h.{l}."
        a = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"])
        qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]
        q, k, v = (m.reshape(T, NH, HS).transpose(1, 0, 2) for m in np.split(qkv, 3, axis=1))
        scores = attention_scores(q, k, l, switches)
        masked = np.where(causal, scores, -np.inf)
        e = np.exp(masked - masked.max(axis=-1, keepdims=True))
        pattern = e / e.sum(axis=-1, keepdims=True)
        z = (pattern @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + z @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
        m = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"])
        m = gelu_new(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"])
        x = x + m @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        all_scores.append(scores)
        all_patterns.append(pattern)
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    return x @ w["wte.weight"].T, np.stack(all_scores), np.stack(all_patterns)


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        raw = np.ascontiguousarray(t, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def rounded(a):
    return [float(f"{v:.7g}") for v in np.asarray(a).flatten().tolist()]


def causal_half(x):
    return [[[rounded(x[l, h, t, :t + 1]) for t in range(T)] for h in range(NH)] for l in range(L)]


def main():
    rng = np.random.default_rng(20261201)
    os.makedirs(OUT, exist_ok=True)
    w = make_weights(rng)
    ids = rng.integers(0, V, size=T).tolist()
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
        "n_layer": L, "n_head": NH, "n_embd": C, "n_positions": N_CTX, "vocab_size": V,
        "layer_norm_epsilon": 1e-5, "bos_token_id": V - 1, "eos_token_id": V - 1, "tie_word_embeddings": True,
    }
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(OUT, "model.safetensors"), {"transformer." + k: v for k, v in w.items()})
    expected = {"ids": ids, "variants": {}}
    for name, switches in VARIANTS.items():
        logits, scores, patterns = gpt2_forward(w, np.array(ids), switches)
        expected["variants"][name] = {"config": switches, "logits": [rounded(r) for r in logits],
                                      "scores": causal_half(scores), "pattern": causal_half(patterns)}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, separators=(",", ":"))
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
