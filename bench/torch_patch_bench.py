#!/usr/bin/python3
"""Issue 27's patching benchmark, the PyTorch side (bench/run_patch_bench.sh runs it next to
`headlab patch`): TransformerLens's patching loop written out in PyTorch on a GPT-2-small-
shaped model — for each index of a sweep, one full forward of the corrupted batch with a hook
that overwrites that slice with the clean run's (TL's patching.py `generic_activation_patch`),
the metric the logit difference at the last position, averaged over the batch.

  /usr/bin/python3 bench/torch_patch_bench.py make DIR            # the model folder and prompts.jsonl
  /usr/bin/python3 bench/torch_patch_bench.py run DIR --what resid_pre [--out values.json]

make: GPT-2 small's shape (12 layers, C 768, 12 heads, V 50,257, n_ctx 1,024), weights
N(0, 0.02) in F32, norms 1, and a byte tokenizer (the 256 bytes, no merges, filler tokens up
to V) so that each letter of a prompt is one token; prompts.jsonl: 8 pairs of 14 letters (15
tokens with BOS, IOI's length), the corrupted prompt one letter different, one-letter answers.
run: the sweep (`resid_pre` by (layer, pos), `z_all_pos` by (layer, head), `z_by_pos` by
(layer, pos, head)), printing `what=... load_s=... sweep_s=... forwards=... peak_rss_mb=...`
and writing the values (TL's axis order) for the comparison with headlab's. `--sample K` runs
only K indexes, evenly spread, and extrapolates the loop's time linearly (every index is one
identical forward): the line then says `sampled=K` and the time actually spent, and the values
of the indexes not run are null.
"""
import argparse
import itertools
import json
import math
import os
import random
import struct
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "reference"))
from bench_common import peak_rss_mb, read_safetensors  # noqa: E402
from make_llama_fixtures import byte_order  # noqa: E402  GPT-2's byte alphabet

L, C, NH, V, N_CTX = 12, 768, 12, 50257, 1024
HS = C // NH
PAIRS, LETTERS = 8, 14


def make(d, seed=1):
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    w = {"wte.weight": (V, C), "wpe.weight": (N_CTX, C)}
    for l in range(L):
        p = f"h.{l}."
        w.update({p + "ln_1.weight": (C,), p + "ln_1.bias": (C,), p + "attn.c_attn.weight": (C, 3 * C),
                  p + "attn.c_attn.bias": (3 * C,), p + "attn.c_proj.weight": (C, C), p + "attn.c_proj.bias": (C,),
                  p + "ln_2.weight": (C,), p + "ln_2.bias": (C,), p + "mlp.c_fc.weight": (C, 4 * C),
                  p + "mlp.c_fc.bias": (4 * C,), p + "mlp.c_proj.weight": (4 * C, C), p + "mlp.c_proj.bias": (C,)})
    w.update({"ln_f.weight": (C,), "ln_f.bias": (C,)})
    header, blobs, off = {}, [], 0
    for name, shape in w.items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            t = torch.ones(shape)
        else:
            t = torch.randn(shape, generator=g) * 0.02
        b = t.numpy().astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": L, "n_embd": C, "n_head": NH,
                   "n_positions": N_CTX, "n_ctx": N_CTX, "vocab_size": V, "bos_token_id": V - 1, "eos_token_id": V - 1,
                   "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "tie_word_embeddings": True}, f)
    vocab = {byte_order()[i]: i for i in range(256)}
    for i in range(256, V - 1):
        vocab[f"<|fill{i}|>"] = i
    vocab["<|endoftext|>"] = V - 1
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    with open(os.path.join(d, "prompts.jsonl"), "w") as f:
        for _ in range(PAIRS):
            clean = [rng.choice(letters) for _ in range(LETTERS)]
            corrupted = list(clean)
            corrupted[5] = rng.choice([c for c in letters if c != clean[5]])
            answer, wrong = rng.sample(letters, 2)
            f.write(json.dumps({"clean": "".join(clean), "corrupted": "".join(corrupted), "answer": answer, "wrong": wrong}) + "\n")


def load(d):
    w = read_safetensors(os.path.join(d, "model.safetensors"), torch.float32)
    enc = {ch: i for i, ch in enumerate(byte_order())}
    pairs = [json.loads(line) for line in open(os.path.join(d, "prompts.jsonl"))]
    ids = lambda s: [V - 1] + [enc[chr(b)] if chr(b) in enc else b for b in s.encode()]  # BOS, then a byte a token
    clean = torch.tensor([ids(p["clean"]) for p in pairs])
    corrupted = torch.tensor([ids(p["corrupted"]) for p in pairs])
    one = lambda s: byte_order().index(s) if s in byte_order() else ord(s)
    answer = torch.tensor([one(p["answer"]) for p in pairs])
    wrong = torch.tensor([one(p["wrong"]) for p in pairs])
    return w, clean, corrupted, answer, wrong


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def forward(w, idx, hook=None):
    """GPT-2 (nanoGPT's Block), batch first; hook(name, layer, tensor) may return a replacement
    for resid_pre (B, T, C) and z (B, T, NH, HS), as TransformerLens's hooks do."""
    B, T = idx.shape
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(L):
        p = f"h.{l}."
        if hook:
            x = hook("resid_pre", l, x)
        h = torch.nn.functional.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, NH, HS).transpose(1, 2)
        k = k.view(B, T, NH, HS).transpose(1, 2)
        v = v.view(B, T, NH, HS).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HS) + mask, dim=-1)
        z = (att @ v).transpose(1, 2)  # (B, T, NH, HS): TL's hook_z
        if hook:
            z = hook("z", l, z)
        x = x + z.reshape(B, T, C) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = torch.nn.functional.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5)
        x = x + gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]) @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = torch.nn.functional.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
    return x @ w["wte.weight"].T  # (B, T, V)


def run(d, what, out, sample=0):
    t0 = time.perf_counter()
    w, clean, corrupted, answer, wrong = load(d)
    load_s = time.perf_counter() - t0
    B, T = clean.shape
    rows = torch.arange(B)

    def metric(logits):
        last = logits[:, -1]
        return float((last[rows, answer] - last[rows, wrong]).mean())

    with torch.inference_mode():
        cache = {}

        def save(name, l, t):
            cache[(name, l)] = t.clone()
            return t

        t0 = time.perf_counter()
        forward(w, clean, save)
        forwards = 1

        def patched(name, layer, index):
            def hook(n, l, t):
                if n == name and l == layer:
                    t = t.clone()
                    t[index] = cache[(n, l)][index]
                return t
            return metric(forward(w, corrupted, hook))

        if what == "resid_pre":  # (layer, pos)
            shape, index = (L, T), lambda l, p: ("resid_pre", l, (slice(None), p))
        elif what == "z_all_pos":  # (layer, head)
            shape, index = (L, NH), lambda l, h: ("z", l, (slice(None), slice(None), h))
        elif what == "z_by_pos":  # (layer, pos, head)
            shape, index = (L, T, NH), lambda l, p, h: ("z", l, (slice(None), p, h))
        else:
            raise SystemExit(f"unknown --what {what}")
        cells = list(itertools.product(*(range(k) for k in shape)))
        n = len(cells)
        # --sample K: K indexes evenly spread over the sweep (each is one identical full forward
        # of the corrupted batch, so the loop's time is linear in them); the rest stay null
        chosen = cells if not sample or sample >= n else [cells[round(i * (n - 1) / (sample - 1))] for i in range(sample)]
        values = np.full(shape, np.nan)
        t1 = time.perf_counter()
        for cell in chosen:
            values[cell] = patched(*index(*cell))
        loop_s = time.perf_counter() - t1
        sweep_s = (t1 - t0) + loop_s / len(chosen) * n
    timed = "" if len(chosen) == n else f" sampled={len(chosen)} extrapolated_from_s={(t1 - t0) + loop_s:.2f}"
    print(f"what={what} load_s={load_s:.2f} sweep_s={sweep_s:.2f} forwards={n + forwards} peak_rss_mb={peak_rss_mb():.0f}"
          f"{timed}")
    values = [None if np.isnan(v) else float(v) for v in values.ravel()]
    values = np.array(values, dtype=object).reshape(shape).tolist()
    if out:
        with open(out, "w") as f:
            json.dump({"what": what, "values": values}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["make", "run"])
    ap.add_argument("dir")
    ap.add_argument("--what", default="resid_pre")
    ap.add_argument("--out")
    ap.add_argument("--sample", type=int, default=0,
                    help="time the loop on this many indexes, evenly spread, and extrapolate (0: every index)")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    if a.mode == "make":
        make(a.dir)
    else:
        run(a.dir, a.what, a.out, a.sample)


if __name__ == "__main__":
    main()
