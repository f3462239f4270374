#!/usr/bin/python3
"""tools/reference/train/train_step_reference.py — PyTorch reference for one training step.

For small GPT-2-family models (attention-only with tied unembedding, and with MLP blocks
and a separate lm_head; learned positions, rotary positions on half of each head (NeoX
halves, as GPT-NeoX's rotate_half), and no positions) it builds random weights, runs one step — forward, mean
cross-entropy (targets of -1 ignored), backward, global-norm clipping, AdamW with decay on
matrices and embeddings only — and writes a fixture directory per model:
    config.json            the model (HF GPT-2 keys + headlab_mlp, headlab_positions)
    model.safetensors      the weights before the step (HF layout, Conv1D (in, out))
    grads.safetensors      dloss/dweight, same names and layout
    updated.safetensors    the weights after the AdamW step
    step.json              inputs, targets, loss, the optimiser settings
headlab's tests/train/train_step_reference_test.cpp loads them and compares.
Run with Debian's torch:  /usr/bin/python3 tools/reference/train/train_step_reference.py
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "train", "data", "train_step")

OPT = dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0)


def save_safetensors(path, tensors):
    """The safetensors format by hand: u64 header length, JSON header, F32 bytes."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_params(cfg, gen):
    """GPT-2-like random weights, named as in HF checkpoints (Conv1D weights are (in, out))."""
    C, V, T, L = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"], cfg["n_layer"]
    mlp = cfg["headlab_mlp"]

    def randn(*shape, std=0.2):
        return (torch.randn(*shape, generator=gen) * std).requires_grad_()

    p = {"transformer.wte.weight": randn(V, C)}
    if positions(cfg) == "learned":
        p["transformer.wpe.weight"] = randn(T, C)
    for l in range(L):
        h = f"transformer.h.{l}."
        p[h + "ln_1.weight"] = (1.0 + torch.randn(C, generator=gen) * 0.1).requires_grad_()
        p[h + "ln_1.bias"] = randn(C, std=0.1)
        p[h + "attn.c_attn.weight"] = randn(C, 3 * C)
        p[h + "attn.c_attn.bias"] = randn(3 * C, std=0.1)
        p[h + "attn.c_proj.weight"] = randn(C, C)
        p[h + "attn.c_proj.bias"] = randn(C, std=0.1)
        if mlp:
            p[h + "ln_2.weight"] = (1.0 + torch.randn(C, generator=gen) * 0.1).requires_grad_()
            p[h + "ln_2.bias"] = randn(C, std=0.1)
            p[h + "mlp.c_fc.weight"] = randn(C, 4 * C)
            p[h + "mlp.c_fc.bias"] = randn(4 * C, std=0.1)
            p[h + "mlp.c_proj.weight"] = randn(4 * C, C)
            p[h + "mlp.c_proj.bias"] = randn(C, std=0.1)
    p["transformer.ln_f.weight"] = (1.0 + torch.randn(C, generator=gen) * 0.1).requires_grad_()
    p["transformer.ln_f.bias"] = randn(C, std=0.1)
    if not cfg["tie_word_embeddings"]:
        p["lm_head.weight"] = randn(V, C)
    return p


def positions(cfg):
    return cfg.get("headlab_positions", "learned")


def rotate(x, cfg):
    """Rotary positions (Su et al. 2021) as GPT-NeoX applies them: the first rotary_dim
    channels of each head, channel i paired with i + d/2 (rotate_half), turned by
    t * theta^(-2i/d); the other channels pass through. x: (B, NH, T, HS)."""
    T, d = x.shape[2], cfg["rotary_dim"]
    inv_freq = (1.0 / (cfg["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))).float()
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq.double()[None, :]  # (T, d/2)
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1).float()  # (T, d)
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1).float()
    rot, rest = x[..., :d], x[..., d:]
    half = torch.cat([-rot[..., d // 2:], rot[..., :d // 2]], dim=-1)  # rotate_half
    return torch.cat([rot * cos + half * sin, rest], dim=-1)


def forward(cfg, p, idx, targets):
    """nanoGPT's forward: pre-LayerNorm blocks, causal attention, GELU-tanh MLP; positions
    learned (wpe added to the input), rotary (q and k turned) or none."""
    B, T = idx.shape
    C, NH, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    HS = C // NH
    eps = cfg["layer_norm_epsilon"]
    x = p["transformer.wte.weight"][idx]
    if positions(cfg) == "learned":
        x = x + p["transformer.wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = f"transformer.h.{l}."
        a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps)
        qkv = a @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, NH, HS).transpose(1, 2) for t in (q, k, v))
        if positions(cfg) == "rotary":
            q, k = rotate(q, cfg), rotate(k, cfg)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(HS)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
        if cfg["headlab_mlp"]:
            m = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps)
            m = F.gelu(m @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"], approximate="tanh")
            x = x + m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    unembed = p["transformer.wte.weight"] if cfg["tie_word_embeddings"] else p["lm_head.weight"]
    logits = x @ unembed.t()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def decays(name, t):
    # matrices and embeddings (2-D), not biases or LayerNorm weights: as headlab's trainer
    return t.dim() >= 2


def make_fixture(name, cfg, seed):
    gen = torch.Generator().manual_seed(seed)
    p = make_params(cfg, gen)
    B, T, V = 3, cfg["n_positions"], cfg["vocab_size"]
    bos = cfg["bos_token_id"]
    idx = torch.randint(0, V - 1, (B, T), generator=gen)
    idx[:, 0] = bos
    targets = torch.cat([idx[:, 1:], torch.randint(0, V - 1, (B, 1), generator=gen)], dim=1)
    targets[1, 3] = -1  # an ignored position
    initial = {k: v.detach().clone() for k, v in p.items()}

    loss = forward(cfg, p, idx, targets)
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in p.items()}
    norm = torch.nn.utils.clip_grad_norm_(list(p.values()), OPT["grad_clip"])
    groups = [
        {"params": [v for k, v in p.items() if decays(k, v)], "weight_decay": OPT["weight_decay"]},
        {"params": [v for k, v in p.items() if not decays(k, v)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"])
    opt.step()

    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    config = dict(cfg, model_type="gpt2", activation_function="gelu_new", n_ctx=cfg["n_positions"])
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    save_safetensors(os.path.join(d, "model.safetensors"), initial)
    save_safetensors(os.path.join(d, "grads.safetensors"), grads)
    save_safetensors(os.path.join(d, "updated.safetensors"), {k: v.detach() for k, v in p.items()})
    with open(os.path.join(d, "step.json"), "w") as f:
        json.dump({"inputs": idx.tolist(), "targets": targets.tolist(), "loss": loss.item(),
                   "grad_norm": norm.item(), **OPT, "torch": torch.__version__}, f, indent=1)
    print(f"{name}: loss {loss.item():.6f}, grad norm {norm.item():.4f} -> {d}")


def main():
    torch.set_num_threads(1)
    base = dict(n_layer=2, n_head=2, n_embd=16, n_positions=8, vocab_size=33, bos_token_id=32, eos_token_id=32,
                layer_norm_epsilon=1e-5)
    make_fixture("attention_only_tied", dict(base, headlab_mlp=False, tie_word_embeddings=True), seed=1)
    make_fixture("mlp_untied", dict(base, headlab_mlp=True, tie_word_embeddings=False), seed=2)
    # rotary on half of each head of 8 (partial, as Pythia), a base small enough that every
    # pair turns visibly within 8 positions
    make_fixture("rotary_untied", dict(base, headlab_mlp=False, tie_word_embeddings=False,
                                       headlab_positions="rotary", rope_theta=100.0, rotary_dim=4), seed=3)
    make_fixture("no_positions_untied", dict(base, headlab_mlp=False, tie_word_embeddings=False,
                                             headlab_positions="none"), seed=4)


if __name__ == "__main__":
    sys.exit(main())
