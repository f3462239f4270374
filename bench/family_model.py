#!/usr/bin/python3
"""The random-weight models of the family benchmark (bench/run_family_bench.sh), in the Hugging
Face layout: config.json as the real model's, model.safetensors in BF16 (as the real checkpoint
ships), and a byte-level BPE tokenizer of the right size (vocab.json + merges.txt: made-up
tokens, there only because `headlab export --gguf` writes a tokenizer into the GGUF; the
benchmark feeds token ids).

  /usr/bin/python3 bench/family_model.py DIR [--shape qwen2.5-0.5b] [--seed 1]

Shapes:
  qwen2.5-0.5b   Qwen2.5-0.5B: 24 layers, C 896, 14 query heads and 2 KV heads of 64, MLP 4,864
                 (SwiGLU), V 151,936, tied embeddings, q/k/v biases, rope_theta 1e6, RMSNorm
                 eps 1e-6: 494 M weights, 0.99 GB in BF16
  llama-12x768   the Llama of issue 14's llama.cpp scale figure: 12 layers, C 768, 12 heads
                 (no GQA), MLP 4,096, V 32,000, untied, rope_theta 1e4, eps 1e-5: 166 M weights.
                 The issue gives layers, width and vocabulary; MLP 4,096 is the width that makes
                 GPT-2 small "about 0.75 of those FLOPs" (0.74) and is Llama's 8C/3 rounded up.
Weights are N(0, 0.02), biases N(0, 0.02), norms 1: the residual stream stays near 1 over the
layers, patterns are soft, and the last logits have a standard deviation near 0.6, so the
argmax is stable to float32 rounding but not to 16-bit activations.
"""
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "reference"))
from make_llama_fixtures import byte_order  # noqa: E402  GPT-2's byte alphabet

SHAPES = {
    "qwen2.5-0.5b": dict(model_type="qwen2", L=24, C=896, NH=14, NKV=2, F=4864, V=151936, n_ctx=32768,
                         theta=1000000.0, eps=1e-6, tied=True, qkv_bias=True, eos=151643),
    "llama-12x768": dict(model_type="llama", L=12, C=768, NH=12, NKV=12, F=4096, V=32000, n_ctx=4096,
                         theta=10000.0, eps=1e-5, tied=False, qkv_bias=False, eos=2),
}


def config_json(s):
    """config.json as the model's Hugging Face class writes it (Qwen2.5-0.5B's own, key by key)."""
    c = {"architectures": ["Qwen2ForCausalLM" if s["model_type"] == "qwen2" else "LlamaForCausalLM"],
         "model_type": s["model_type"], "hidden_size": s["C"], "num_hidden_layers": s["L"],
         "num_attention_heads": s["NH"], "num_key_value_heads": s["NKV"], "intermediate_size": s["F"],
         "vocab_size": s["V"], "max_position_embeddings": s["n_ctx"], "rope_theta": s["theta"],
         "rms_norm_eps": s["eps"], "hidden_act": "silu", "tie_word_embeddings": s["tied"],
         "bos_token_id": s["eos"], "eos_token_id": s["eos"], "attention_dropout": 0.0, "initializer_range": 0.02,
         "torch_dtype": "bfloat16", "use_cache": True}
    if s["model_type"] == "qwen2":
        c.update({"use_sliding_window": False, "sliding_window": s["n_ctx"], "max_window_layers": s["L"]})
    else:
        c.update({"attention_bias": False, "mlp_bias": False, "rope_scaling": None, "pretraining_tp": 1})
    return c


def tensor_shapes(s):
    """(name, shape, kind) in the checkpoint's order; kind: "matrix", "bias" or "norm"."""
    C, HS, F = s["C"], s["C"] // s["NH"], s["F"]
    out = [("model.embed_tokens.weight", (s["V"], C), "matrix")]
    for l in range(s["L"]):
        h = f"model.layers.{l}."
        out.append((h + "input_layernorm.weight", (C,), "norm"))
        for name, rows in [("q_proj", s["NH"] * HS), ("k_proj", s["NKV"] * HS), ("v_proj", s["NKV"] * HS)]:
            out.append((h + f"self_attn.{name}.weight", (rows, C), "matrix"))
            if s["qkv_bias"]:
                out.append((h + f"self_attn.{name}.bias", (rows,), "bias"))
        out += [(h + "self_attn.o_proj.weight", (C, s["NH"] * HS), "matrix"),
                (h + "post_attention_layernorm.weight", (C,), "norm"),
                (h + "mlp.gate_proj.weight", (F, C), "matrix"), (h + "mlp.up_proj.weight", (F, C), "matrix"),
                (h + "mlp.down_proj.weight", (C, F), "matrix")]
    out.append(("model.norm.weight", (C,), "norm"))
    if not s["tied"]:
        out.append(("lm_head.weight", (s["V"], C), "matrix"))
    return out


def write_weights(path, s, seed):
    """model.safetensors in BF16, written one tensor at a time (the header first: the offsets
    follow from the shapes), so making 494 M weights takes one tensor's memory."""
    shapes = tensor_shapes(s)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in shapes:
        n = 2 * int(torch.Size(shape).numel())
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    g = torch.Generator().manual_seed(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, shape, kind in shapes:
            t = torch.ones(shape) if kind == "norm" else torch.randn(shape, generator=g) * 0.02
            f.write(t.to(torch.bfloat16).view(torch.int16).numpy().tobytes())


def write_tokenizer(d, V, eos):
    """V tokens: the 256 bytes, then every pair of them and triples (merges "ab c"), with
    <|endoftext|> at id eos. Made-up pieces: only their number matters here."""
    chars = byte_order()
    tokens = list(chars)
    merges = []
    need = V - 1 - len(tokens)
    for a in chars:
        for b in chars:
            if len(merges) < need:
                tokens.append(a + b)
                merges.append(f"{a} {b}")
    pairs = tokens[256:]
    for ab in pairs:
        for c in chars:
            if len(merges) >= need:
                break
            tokens.append(ab + c)
            merges.append(f"{ab} {c}")
    tokens.insert(eos, "<|endoftext|>")
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump({t: i for i, t in enumerate(tokens)}, f, ensure_ascii=False)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))


def make_model(d, shape, seed=1):
    s = SHAPES[shape]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config_json(s), f, indent=2)
    write_tokenizer(d, s["V"], s["eos"])
    write_weights(os.path.join(d, "model.safetensors"), s, seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen2.5-0.5b")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    make_model(a.dir, a.shape, a.seed)


if __name__ == "__main__":
    main()
