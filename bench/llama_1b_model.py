#!/usr/bin/python3
"""A random-weight folder of Llama-3.2-1B's shape for the load benchmark (issue 25: "load in
seconds"), or of Llama-3.1-8B's (--shape 8b: 32 layers, C 4,096, 32 query heads and 8 KV heads of
128, MLP 14,336, V 128,256, untied; 8.03 B weights, 16.1 GB in BF16) for the by-hand check that a
Q4_K_M file of it runs within 6.5 GB, or of Llama-3.2-3B's (--shape 3b: 28 layers, C 3,072, 24 query
heads and 8 KV heads of 128, MLP 8,192, tied, the 1B's rope scaling; 3.21 B weights, 6.4 GB in BF16)
for the Q4_K_M speed benchmark against llama.cpp (bench/run_q4km_bench.sh); written with numpy alone (no PyTorch): config.json with the real model's keys (16
layers, C 2,048, 32 query heads and 8 KV heads of 64, MLP 8,192, V 128,256, tied, rope_theta
5e5 with llama3 scaling 32 / 1 / 4 / 8,192), model.safetensors in BF16 (1.24 B weights,
2.47 GB; N(0, 0.02) matrices, norms 1) and a made-up byte-level tokenizer of 128,256 pieces
(only its size matters: `headlab run --text` and `headlab serve` need one).

  /usr/bin/python3 bench/llama_1b_model.py /work/tmp-models/llama-1b [--seed 32] [--shape 1b|3b|8b]

The same shapes and config keys as `tools/reference/make_family_fixtures.py --llama-3.2-1b`
(which needs PyTorch and writes no tokenizer); the weights differ (another generator).
Written a block of rows at a time: making them needs little memory.
"""
import argparse
import json
import math
import os
import struct

import numpy as np

L, C, NH, NKV, HS, F, V = 16, 2048, 32, 8, 64, 8192, 128256
TIED, ROPE_FACTOR, NAME = True, 32.0, "Llama-3.2-1B"
BOS, EOS = 128000, 128001


def use_8b():
    """Llama-3.1-8B's config: wider, deeper, an untied lm_head, rope scaling factor 8."""
    global L, C, HS, F, TIED, ROPE_FACTOR, NAME
    L, C, HS, F, TIED, ROPE_FACTOR, NAME = 32, 4096, 128, 14336, False, 8.0, "Llama-3.1-8B"


def use_3b():
    """Llama-3.2-3B's config: 28 layers, C 3,072, 24 query heads and 8 KV heads of 128, MLP 8,192,
    tied, the same rope scaling as the 1B (factor 32)."""
    global L, C, NH, HS, F, NAME
    L, C, NH, HS, F, NAME = 28, 3072, 24, 128, 8192, "Llama-3.2-3B"


def shapes():
    s = {"model.embed_tokens.weight": (V, C)}
    for l in range(L):
        h = f"model.layers.{l}."
        s.update({h + "input_layernorm.weight": (C,), h + "self_attn.q_proj.weight": (NH * HS, C),
                  h + "self_attn.k_proj.weight": (NKV * HS, C), h + "self_attn.v_proj.weight": (NKV * HS, C),
                  h + "self_attn.o_proj.weight": (C, NH * HS), h + "post_attention_layernorm.weight": (C,),
                  h + "mlp.gate_proj.weight": (F, C), h + "mlp.up_proj.weight": (F, C),
                  h + "mlp.down_proj.weight": (C, F)})
    s["model.norm.weight"] = (C,)
    if not TIED:
        s["lm_head.weight"] = (V, C)
    return s


def config_json():
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C,
            "num_attention_heads": NH, "num_key_value_heads": NKV, "num_hidden_layers": L,
            "intermediate_size": F, "vocab_size": V, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
            "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": TIED, "bos_token_id": BOS,
            "eos_token_id": EOS, "torch_dtype": "bfloat16", "use_cache": True, "initializer_range": 0.02,
            "attention_dropout": 0.0, "attention_bias": False, "mlp_bias": False, "pretraining_tp": 1,
            "head_dim": HS,
            "rope_scaling": {"rope_type": "llama3", "factor": ROPE_FACTOR, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}


def to_bf16(x):
    """float32 -> bfloat16 bits, rounded to nearest even."""
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def write_weights(path, seed):
    sh = shapes()
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in sh.items():
        n = math.prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for shape in sh.values():
            if len(shape) == 1:
                out.write(to_bf16(np.ones(shape, np.float32)).tobytes())
                continue
            for r in range(0, shape[0], 4096):
                rows = rng.standard_normal((min(4096, shape[0] - r), shape[1]), dtype=np.float32) * 0.02
                out.write(to_bf16(rows).tobytes())
    return sum(math.prod(s) for s in sh.values())


def byte_order():
    """GPT-2's byte alphabet: byte b as one printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def write_tokenizer(d):
    """V pieces: the 256 bytes, pairs, then triples (merges), with two specials at BOS and EOS."""
    chars = byte_order()
    tokens, merges = list(chars), []
    need = V - 2 - len(tokens)
    for a in chars:
        for b in chars:
            if len(merges) < need:
                tokens.append(a + b)
                merges.append(f"{a} {b}")
    for ab in tokens[256:256 + 65536]:
        for c in chars:
            if len(merges) >= need:
                break
            tokens.append(ab + c)
            merges.append(f"{ab} {c}")
    tokens.insert(BOS, "<|begin_of_text|>")
    tokens.insert(EOS, "<|end_of_text|>")
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump({t: i for i, t in enumerate(tokens)}, f, ensure_ascii=False)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--shape", choices=["1b", "3b", "8b"], default="1b",
                    help="Llama-3.2-1B's (default), Llama-3.2-3B's or Llama-3.1-8B's")
    a = ap.parse_args()
    if a.shape == "8b":
        use_8b()
    elif a.shape == "3b":
        use_3b()
    os.makedirs(a.dir, exist_ok=True)
    with open(os.path.join(a.dir, "config.json"), "w") as f:
        json.dump(config_json(), f, indent=2)
    write_tokenizer(a.dir)
    n = write_weights(os.path.join(a.dir, "model.safetensors"), a.seed)
    print(f"wrote a random {NAME}-shaped model ({n} weights, BF16) to {a.dir}")


if __name__ == "__main__":
    main()
