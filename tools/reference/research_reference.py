"""The PyTorch reference for headlab's research toolbox (issue 27): one hooked forward over the
families, written from the same maths as make_family_fixtures.py and make_model_fixtures.py
(whose norms, rotary and activations it imports), that returns every activation under its
TransformerLens (TL) name and lets a caller overwrite any of them, and the measures built on it,
each from its published definition:

  patching   TL's patching.py generic_activation_patch: one full corrupted forward per index,
             with a hook that overwrites the slice by the clean run's (denoising), or the reverse
  lens       nostalgebraist 2020; TL's ActivationCache.accumulated_resid, then ln_final with its
             statistics recomputed for each layer (TL >= 2.18's apply_ln) and the unembedding
  dla        TL's decompose_resid / stack_head_results / apply_ln_to_stack with the final norm's
             scale frozen from the run: the parts add up to the logit difference less b_U's
  compose    TL's all_composition_scores (Elhage et al. 2021): |W_A W_B|_F / (|W_A|_F |W_B|_F)
  copying    Elhage et al. 2021: sum(lambda) / sum(|lambda|) over the eigenvalues of W_E W_V W_O W_U
  path_patch Wang et al. 2022 (IOI) appendix B, ARENA's IOI chapter: each sender head's z from the
             new run, every other head's frozen to the orig run; the logits, or receiver heads'
             q/k/v put into a free orig run

Everything is float64 from the weights as stored. The activations follow headlab's hook table
(src/model/hooks.h): hook_normalized is the norm's output (after weight and bias), the scores
are after the scale, the soft-cap and the mask (-inf where masked), k and v keep the KV heads,
hook_result is z_h W_O,h without b_O. Shapes are TL's without the batch axis.

    m = load("llama", "tests/fixtures/model/families/llama")
    logits, cache = run_with_hooks(m, ids)                       # cache["blocks.1.attn.hook_z"]: (T, NH, HS)
    def patch(z):                                                 # TL-style: overwrite one slice
        z[:, 2] = clean_cache["blocks.1.attn.hook_z"][:, 2]
        return z
    patched, _ = run_with_hooks(m, corrupted_ids, {"blocks.1.attn.hook_z": patch})
"""
import json
import math
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_family_fixtures import FAMILIES, gelu_tanh, rotary  # noqa: E402
from make_model_fixtures import gpt2_forward  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# ---- loading ---------------------------------------------------------------------------------

SAFETENSORS_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """{name: float64 tensor}: 8 bytes of header length, the JSON header, the raw tensors."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dtype = SAFETENSORS_DTYPES[info["dtype"]]
        raw = bytearray(data[a:b])
        t = torch.frombuffer(raw, dtype=torch.int16 if dtype != torch.float32 else torch.float32)
        if dtype != torch.float32:
            t = t.view(dtype)
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out


class Model:
    """One configured block, TL's HookedTransformerConfig in spirit, with TL's weight layout:
      W_E (V, C), W_pos (n_ctx, C) or None, W_U (C, V), b_U (V) or None
      per layer l: W_Q[l] (NH, C, HS), W_K[l], W_V[l] (NKV, C, HS), b_Q/b_K/b_V or None,
                   W_O[l] (NH, HS, C), b_O[l] (C) or None,
                   W_in[l] (C, F), b_in[l], W_gate[l] (C, F) for gated MLPs, W_out[l] (F, C), b_out[l]
      norms: ln1/ln2/ln_final (weight, bias or None); Gemma's ln1_post/ln2_post (weight).
    Gemma's norm weights are stored here as 1 + w (the factor its RMSNorm multiplies by)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def group(self):
        return self.NH // self.NKV


def load_gpt2(model_dir):
    """GPT-2 (Conv1D weights stored (in, out)); headlab_mlp false: attention-only blocks."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    raw = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    w = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in raw.items()}
    L, NH, C, V = cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["vocab_size"]
    HS = C // NH
    mlp = cfg.get("headlab_mlp", True)
    tied = cfg.get("tie_word_embeddings", True)
    m = Model(family="gpt2", name=os.path.basename(os.path.normpath(model_dir)), L=L, C=C, NH=NH, NKV=NH, HS=HS,
              F=4 * C if mlp else 0, V=V, norm="LN", eps=cfg.get("layer_norm_epsilon", 1e-5), mlp=mlp,
              mlp_act="gelu_tanh", gated=False, parallel=False, sandwich=False, rotary_dim=0,
              embed_scale=1.0, attn_scale_dim=HS, attn_cap=None, final_cap=None, window=[None] * L,
              W_E=w["wte.weight"], W_pos=w["wpe.weight"], W_U=(w["wte.weight"] if tied else w["lm_head.weight"]).T,
              b_U=None, raw=w, config=cfg)

    def heads(mat, n):  # (C, n*HS) -> (n, C, HS)
        return mat.view(C, n, HS).permute(1, 0, 2).contiguous()
    m.W_Q, m.W_K, m.W_V, m.b_Q, m.b_K, m.b_V, m.W_O, m.b_O = [], [], [], [], [], [], [], []
    m.ln1, m.ln2, m.W_in, m.b_in, m.W_out, m.b_out = [], [], [], [], [], []
    for l in range(L):
        h = f"h.{l}."
        wq, wk, wv = w[h + "attn.c_attn.weight"].split(C, dim=1)
        bq, bk, bv = w[h + "attn.c_attn.bias"].split(C)
        m.W_Q.append(heads(wq, NH)), m.W_K.append(heads(wk, NH)), m.W_V.append(heads(wv, NH))
        m.b_Q.append(bq.view(NH, HS)), m.b_K.append(bk.view(NH, HS)), m.b_V.append(bv.view(NH, HS))
        m.W_O.append(w[h + "attn.c_proj.weight"].view(NH, HS, C))
        m.b_O.append(w[h + "attn.c_proj.bias"])
        m.ln1.append((w[h + "ln_1.weight"], w[h + "ln_1.bias"]))
        if mlp:
            m.ln2.append((w[h + "ln_2.weight"], w[h + "ln_2.bias"]))
            m.W_in.append(w[h + "mlp.c_fc.weight"]), m.b_in.append(w[h + "mlp.c_fc.bias"])
            m.W_out.append(w[h + "mlp.c_proj.weight"]), m.b_out.append(w[h + "mlp.c_proj.bias"])
    m.ln_final = (w["ln_f.weight"], w["ln_f.bias"])
    return m


def load_family(model_dir, name):
    """A model written by make_family_fixtures.py (its FAMILIES entry gives the shapes), from
    its model.safetensors (F32) under the family's own tensor names."""
    f = next(x for x in FAMILIES if x["name"] == name)
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    L, C, NH, NKV, HS, F, V = f["L"], f["C"], f["NH"], f["NKV"], f["HS"], f["F"], f["V"]
    neox = f["model_type"] == "gpt_neox"
    gemma = bool(f.get("gemma"))
    if f.get("qk_norm") or f.get("rope_scaling") or f.get("local_theta"):
        raise ValueError(f"{name}: q/k norm and rope_scaling are not in this reference (not needed for its fixtures)")
    window = [f["window"] if "sliding" in f and f["sliding"][l] else None for l in range(L)]
    m = Model(family=f["model_type"], name=name, L=L, C=C, NH=NH, NKV=NKV, HS=HS, F=F, V=V,
              norm="LN" if neox else "RMS", eps=1e-5 if neox else 1e-6, mlp=True,
              mlp_act="gelu_erf" if neox else ("geglu" if gemma else "swiglu"), gated=not neox,
              parallel=bool(f.get("parallel")), sandwich=gemma,
              rotary_dim=int(HS * f["rotary_pct"]) if neox else HS, theta=f["theta"],
              embed_scale=math.sqrt(C) if gemma else 1.0, attn_scale_dim=f.get("qpas", HS),
              attn_cap=f.get("attn_cap"), final_cap=f.get("final_cap"), window=window, W_pos=None, b_U=None,
              raw=w, spec=f)
    plus = (lambda x: 1.0 + x) if gemma else (lambda x: x)
    m.W_Q, m.W_K, m.W_V, m.b_Q, m.b_K, m.b_V, m.W_O, m.b_O = [], [], [], [], [], [], [], []
    m.ln1, m.ln2, m.ln1_post, m.ln2_post = [], [], [], []
    m.W_in, m.b_in, m.W_gate, m.W_out, m.b_out = [], [], [], [], []
    if neox:
        m.W_E = w["gpt_neox.embed_in.weight"]
        m.W_U = w["embed_out.weight"].T
        for l in range(L):
            h = f"gpt_neox.layers.{l}."
            qkv = w[h + "attention.query_key_value.weight"].view(NH, 3, HS, C)   # fused per head
            qkvb = w[h + "attention.query_key_value.bias"].view(NH, 3, HS)
            m.W_Q.append(qkv[:, 0].transpose(1, 2)), m.W_K.append(qkv[:, 1].transpose(1, 2))
            m.W_V.append(qkv[:, 2].transpose(1, 2))
            m.b_Q.append(qkvb[:, 0]), m.b_K.append(qkvb[:, 1]), m.b_V.append(qkvb[:, 2])
            m.W_O.append(w[h + "attention.dense.weight"].T.reshape(NH, HS, C))
            m.b_O.append(w[h + "attention.dense.bias"])
            m.ln1.append((w[h + "input_layernorm.weight"], w[h + "input_layernorm.bias"]))
            m.ln2.append((w[h + "post_attention_layernorm.weight"], w[h + "post_attention_layernorm.bias"]))
            m.W_in.append(w[h + "mlp.dense_h_to_4h.weight"].T), m.b_in.append(w[h + "mlp.dense_h_to_4h.bias"])
            m.W_out.append(w[h + "mlp.dense_4h_to_h.weight"].T), m.b_out.append(w[h + "mlp.dense_4h_to_h.bias"])
        m.ln_final = (w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"])
        return m
    m.W_E = w["model.embed_tokens.weight"]
    m.W_U = (w["model.embed_tokens.weight"] if f["tied"] else w["lm_head.weight"]).T
    for l in range(L):
        h = f"model.layers.{l}."

        def proj(n, heads):  # Linear (heads*HS, C) -> (heads, C, HS)
            return w[h + f"self_attn.{n}.weight"].view(heads, HS, C).transpose(1, 2)

        def bias(n, heads):
            return w[h + f"self_attn.{n}.bias"].view(heads, HS) if f["qkv_bias"] else None
        m.W_Q.append(proj("q_proj", NH)), m.W_K.append(proj("k_proj", NKV)), m.W_V.append(proj("v_proj", NKV))
        m.b_Q.append(bias("q_proj", NH)), m.b_K.append(bias("k_proj", NKV)), m.b_V.append(bias("v_proj", NKV))
        m.W_O.append(w[h + "self_attn.o_proj.weight"].T.reshape(NH, HS, C))
        m.b_O.append(None)
        m.ln1.append((plus(w[h + "input_layernorm.weight"]), None))
        if gemma:
            m.ln1_post.append(plus(w[h + "post_attention_layernorm.weight"]))
            m.ln2.append((plus(w[h + "pre_feedforward_layernorm.weight"]), None))
            m.ln2_post.append(plus(w[h + "post_feedforward_layernorm.weight"]))
        else:
            m.ln2.append((w[h + "post_attention_layernorm.weight"], None))
        m.W_gate.append(w[h + "mlp.gate_proj.weight"].T), m.W_in.append(w[h + "mlp.up_proj.weight"].T)
        m.W_out.append(w[h + "mlp.down_proj.weight"].T)
        m.b_in.append(None), m.b_out.append(None)
    m.ln_final = (plus(w["model.norm.weight"]), None)
    return m


def load(name, model_dir):
    """The five research fixtures' models: gpt2_tiny, headlab_tiny (GPT-2 layout), or a family."""
    if name in ("gpt2_tiny", "headlab_tiny"):
        return load_gpt2(model_dir)
    return load_family(model_dir, name)


# ---- the hooked forward -----------------------------------------------------------------------

def norm_scale(m, x):
    """TL's hook_scale: sqrt(var + eps) for LayerNorm, sqrt(mean(x^2) + eps) for RMSNorm.  (T, 1)"""
    if m.norm == "LN":
        x = x - x.mean(-1, keepdim=True)
    return torch.sqrt((x * x).mean(-1, keepdim=True) + m.eps)


def norm_apply(m, x, scale, weight, bias):
    """The norm's output from its scale: LayerNorm centres first; weight and bias after."""
    if m.norm == "LN":
        x = x - x.mean(-1, keepdim=True)
    y = x / scale * weight
    return y + bias if bias is not None else y


def hook_names(m):
    """Every hook the model has, in the forward's order (headlab's model_hooks(): TL's names,
    hook_exists's rules: no pos_embed with rotary, rot_q/k only with rotary, no resid_mid in a
    parallel or attention-only block, pre_linear only for gated MLPs, *_post only for Gemma)."""
    names = ["hook_embed"] + (["hook_pos_embed"] if m.W_pos is not None else [])
    for l in range(m.L):
        b = f"blocks.{l}."
        names += [b + "hook_resid_pre", b + "ln1.hook_scale", b + "ln1.hook_normalized",
                  b + "attn.hook_q", b + "attn.hook_k", b + "attn.hook_v"]
        if m.rotary_dim:
            names += [b + "attn.hook_rot_q", b + "attn.hook_rot_k"]
        names += [b + "attn.hook_attn_scores", b + "attn.hook_pattern", b + "attn.hook_z", b + "attn.hook_result"]
        if m.sandwich:
            names += [b + "ln1_post.hook_scale", b + "ln1_post.hook_normalized"]
        names += [b + "hook_attn_out"]
        if m.mlp and not m.parallel:
            names += [b + "hook_resid_mid"]
        if m.mlp:
            names += [b + "ln2.hook_scale", b + "ln2.hook_normalized", b + "mlp.hook_pre"]
            if m.gated:
                names += [b + "mlp.hook_pre_linear"]
            names += [b + "mlp.hook_post"]
            if m.sandwich:
                names += [b + "ln2_post.hook_scale", b + "ln2_post.hook_normalized"]
            names += [b + "hook_mlp_out"]
        names += [b + "hook_resid_post"]
    return names + ["ln_final.hook_scale", "ln_final.hook_normalized"]


def run_with_hooks(m, ids, overrides=None):
    """The forward, TL-style: every activation passes through hook(name, x), which records it and,
    when `overrides` has the name, replaces it by overrides[name](x) for the rest of the run.
    Returns (logits (T, V) after Gemma 2's soft-cap, cache {TL name: tensor without batch axis})."""
    overrides = overrides or {}
    cache = {}

    def hook(name, x):
        if name in overrides:
            x = overrides[name](x.clone())
        cache[name] = x
        return x

    T = len(ids)
    idx = torch.tensor(ids)
    # 0. x = W_E[ids] (* sqrt(C) for Gemma) + W_pos[0..T)
    x = hook("hook_embed", m.W_E[idx] * m.embed_scale)                                    # (T, C)
    if m.W_pos is not None:
        x = x + hook("hook_pos_embed", m.W_pos[:T])
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)                   # True = masked
    for l in range(m.L):
        b = f"blocks.{l}."
        x = hook(b + "hook_resid_pre", x)
        resid_pre = x
        # 1. q, k, v from ln1(x)
        scale1 = hook(b + "ln1.hook_scale", norm_scale(m, x))                              # (T, 1)
        n1 = hook(b + "ln1.hook_normalized", norm_apply(m, x, scale1, *m.ln1[l]))          # (T, C)

        def qkv(W, bias, name):
            y = torch.einsum("tc,nch->tnh", n1, W)                                          # (T, heads, HS)
            return hook(b + name, y + bias if bias is not None else y)
        q = qkv(m.W_Q[l], m.b_Q[l], "attn.hook_q")                                          # (T, NH, HS)
        k = qkv(m.W_K[l], m.b_K[l], "attn.hook_k")                                          # (T, NKV, HS)
        v = qkv(m.W_V[l], m.b_V[l], "attn.hook_v")                                          # (T, NKV, HS)
        if m.rotary_dim:
            q = hook(b + "attn.hook_rot_q", rotary(q.transpose(0, 1), m.rotary_dim, m.theta).transpose(0, 1))
            k = hook(b + "attn.hook_rot_k", rotary(k.transpose(0, 1), m.rotary_dim, m.theta).transpose(0, 1))
        # 2. scores = q.k / sqrt(HS or query_pre_attn_scalar), soft-capped, masked; softmax
        # query head h reads KV head h // group
        k_rep = k.repeat_interleave(m.group, dim=1)                                         # (T, NH, HS)
        v_rep = v.repeat_interleave(m.group, dim=1)
        scores = torch.einsum("qnh,knh->nqk", q, k_rep) / math.sqrt(m.attn_scale_dim)       # (NH, T, T)
        if m.attn_cap is not None:
            scores = m.attn_cap * torch.tanh(scores / m.attn_cap)
        mask = causal
        if m.window[l] is not None:
            mask = mask | torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-m.window[l])
        scores = hook(b + "attn.hook_attn_scores", scores.masked_fill(mask, float("-inf")))
        pattern = hook(b + "attn.hook_pattern", torch.softmax(scores, dim=-1))             # (NH, T, T), 0 where masked
        z = hook(b + "attn.hook_z", torch.einsum("nqk,knh->qnh", pattern, v_rep))           # (T, NH, HS)
        result = hook(b + "attn.hook_result", torch.einsum("tnh,nhc->tnc", z, m.W_O[l]))    # (T, NH, C)
        attn = result.sum(1)
        if m.b_O[l] is not None:
            attn = attn + m.b_O[l]
        # 3. Gemma: the attention output is normed (post_attention_layernorm) before the add
        if m.sandwich:
            s = hook(b + "ln1_post.hook_scale", norm_scale(m, attn))
            attn = hook(b + "ln1_post.hook_normalized", norm_apply(m, attn, s, m.ln1_post[l], None))
        attn = hook(b + "hook_attn_out", attn)                                              # (T, C)
        if not m.mlp:
            x = hook(b + "hook_resid_post", x + attn)
            continue
        if not m.parallel:
            x = hook(b + "hook_resid_mid", x + attn)
        # 4. mlp = W_out act(ln2(x) W_in + b_in)  (gated: act(ln2(x) W_gate) * ln2(x) W_in)
        mlp_in = resid_pre if m.parallel else x
        scale2 = hook(b + "ln2.hook_scale", norm_scale(m, mlp_in))
        n2 = hook(b + "ln2.hook_normalized", norm_apply(m, mlp_in, scale2, *m.ln2[l]))
        if m.gated:
            pre = hook(b + "mlp.hook_pre", n2 @ m.W_gate[l])                                # (T, F) the gate
            pre_linear = hook(b + "mlp.hook_pre_linear", n2 @ m.W_in[l])                    # (T, F) the up projection
            act = torch.nn.functional.silu(pre) if m.mlp_act == "swiglu" else gelu_tanh(pre)
            post = hook(b + "mlp.hook_post", act * pre_linear)
        else:
            pre = hook(b + "mlp.hook_pre", n2 @ m.W_in[l] + m.b_in[l])
            if m.mlp_act == "gelu_erf":
                act = 0.5 * pre * (1.0 + torch.erf(pre / math.sqrt(2.0)))
            else:
                act = gelu_tanh(pre)
            post = hook(b + "mlp.hook_post", act)
        mlp = post @ m.W_out[l]
        if m.b_out[l] is not None:
            mlp = mlp + m.b_out[l]
        if m.sandwich:
            s = hook(b + "ln2_post.hook_scale", norm_scale(m, mlp))
            mlp = hook(b + "ln2_post.hook_normalized", norm_apply(m, mlp, s, m.ln2_post[l], None))
        mlp = hook(b + "hook_mlp_out", mlp)
        x = hook(b + "hook_resid_post", (resid_pre + attn + mlp) if m.parallel else x + mlp)
    # 5. logits = ln_final(x) W_U + b_U (Gemma 2: cap * tanh(logits / cap))
    scale = hook("ln_final.hook_scale", norm_scale(m, x))
    xf = hook("ln_final.hook_normalized", norm_apply(m, x, scale, *m.ln_final))
    return unembed(m, xf), cache


def unembed_raw(m, xf):
    """(..., C) after ln_final -> logits (..., V) before any soft-cap."""
    logits = xf @ m.W_U
    return logits + m.b_U if m.b_U is not None else logits


def unembed(m, xf):
    """(..., C) after ln_final -> logits (..., V), soft-capped as the model does."""
    logits = unembed_raw(m, xf)
    if m.final_cap is not None:
        logits = m.final_cap * torch.tanh(logits / m.final_cap)
    return logits


def ln_final(m, x):
    """The final norm with its statistics computed from x itself (the lens's per-layer recompute)."""
    return norm_apply(m, x, norm_scale(m, x), *m.ln_final)


# ---- patching (TL's patching.py) --------------------------------------------------------------

def logit_diff(logits, answer, wrong):
    """The metric: logits[answer] - logits[wrong] at the LAST position."""
    return (logits[-1, answer] - logits[-1, wrong]).item()


def patch_sweep(m, target_ids, source_cache, what, metric):
    """generic_activation_patch: for every index of `what`, one full forward on target_ids whose
    hook overwrites that slice by source_cache's (denoising: target = corrupted, source = clean
    cache; noising: the reverse). Returns nested lists in TL's axis order.
      resid_pre, resid_mid, attn_out, mlp_out   [layer][pos]        (layer_pos_patch_setter)
      z/q/k/v_all_pos                           [layer][head]       (layer_head_vector_patch_setter;
                                                 k and v over the NKV heads, as TL's n_key_value_heads)
      pattern_all_pos                           [layer][head]       (layer_head_pattern_patch_setter)
      z_by_pos                                  [layer][pos][head]  (layer_pos_head_vector_patch_setter)"""
    T = len(target_ids)

    def one(name, setter):
        src = source_cache[name]

        def override(x):
            setter(x, src)
            return x
        logits, _ = run_with_hooks(m, target_ids, {name: override})
        return metric(logits)

    def at(l, act):
        return f"blocks.{l}.hook_{act}" if act in ("resid_pre", "resid_mid", "attn_out", "mlp_out") \
            else f"blocks.{l}.attn.hook_{act}"

    if what in ("resid_pre", "resid_mid", "attn_out", "mlp_out"):
        def set_pos(p):
            def s(x, src):
                x[p] = src[p]
            return s
        return [[one(at(l, what), set_pos(p)) for p in range(T)] for l in range(m.L)]
    if what in ("z_all_pos", "q_all_pos", "k_all_pos", "v_all_pos"):
        act = what[0]
        heads = m.NKV if act in ("k", "v") else m.NH

        def set_head(h):
            def s(x, src):
                x[:, h] = src[:, h]
            return s
        return [[one(at(l, act), set_head(h)) for h in range(heads)] for l in range(m.L)]
    if what == "pattern_all_pos":
        def set_pattern(h):
            def s(x, src):
                x[h] = src[h]
            return s
        return [[one(at(l, "pattern"), set_pattern(h)) for h in range(m.NH)] for l in range(m.L)]
    if what == "z_by_pos":
        def set_pos_head(p, h):
            def s(x, src):
                x[p, h] = src[p, h]
            return s
        return [[[one(at(l, "z"), set_pos_head(p, h)) for h in range(m.NH)] for p in range(T)] for l in range(m.L)]
    raise ValueError(f"patch_sweep: no sweep {what!r}")


# ---- attribution patching (Nanda 2023; Syed, Rager & Conmy 2023; Kramar et al. 2024) ------------

def attribution_patch(m, base_ids, source_cache, metric, whats):
    """Attribution patching from its definition: on the base run, the metric's gradient (torch
    autograd) at each hooked activation a, times (a_source - a_base), summed over the slice that
    activation patching would replace; each value is the estimated patched metric
    metric(base) + attribution, in patch_sweep's axes. The gradient at a hook point is taken
    through a zero tensor added there (d metric / d delta = d metric / d a, every other point's
    delta 0 too). Returns {what: nested lists}; whats among resid_pre, resid_mid, attn_out,
    mlp_out, z/q/k/v_all_pos, z/q/k/v_by_pos, pattern_all_pos [layer][head] and pattern_by_pos
    [layer][head][dest_pos] (k and v over the NKV heads, q and k before the rotary, as TL's hooks)."""
    def name_of(l, what):
        act = what.split("_")[0]
        return f"blocks.{l}.attn.hook_{act}" if act in ("z", "q", "k", "v", "pattern") else f"blocks.{l}.hook_{what}"
    names = sorted({name_of(l, w) for w in whats for l in range(m.L)})
    deltas = {}

    def add_delta(name):
        def f(x):
            d = torch.zeros_like(x, requires_grad=True)
            deltas[name] = d
            return x + d
        return f
    logits, cache = run_with_hooks(m, base_ids, {n: add_delta(n) for n in names})
    value = metric(logits)  # a 0-d tensor
    grads = dict(zip(names, torch.autograd.grad(value, [deltas[n] for n in names])))
    base = value.item()
    out = {}
    for what in whats:
        rows = []
        for l in range(m.L):
            n = name_of(l, what)
            a = grads[n] * (source_cache[n] - cache[n].detach())  # (T, C), (T, heads, HS) or (NH, T, T)
            if what == "pattern_all_pos":
                rows.append((base + a.sum(dim=(1, 2))).tolist())    # [head]
            elif what == "pattern_by_pos":
                rows.append((base + a.sum(dim=2)).tolist())         # [head][dest_pos]
            elif what.endswith("_all_pos"):
                rows.append((base + a.sum(dim=(0, 2))).tolist())    # [head]
            elif what.endswith("_by_pos"):
                rows.append((base + a.sum(dim=2)).tolist())         # [pos][head]
            else:
                rows.append((base + a.sum(dim=1)).tolist())         # [pos]
        out[what] = rows
    return out


# ---- path patching (Wang et al. 2022, appendix B; ARENA's IOI chapter) ----------------------------

def path_patch(m, orig_ids, new_ids, metric, receivers=()):
    """Path patching, from the definition, with full runs only: for every sender head (l, h) of the
    model, [l][h] = metric of
      run 2: orig_ids with hook_z[:, h] at layer l from new_ids' run and every other head's hook_z
             (every layer) frozen to orig_ids' run; the MLPs and norms recomputed
      receivers empty (the final residual stream): run 2's logits
      receivers [(layer, head, "q"|"k"|"v")]: run 3, orig_ids with only those heads' inputs
             (attn.hook_q/k/v[:, head], k and v over the KV heads) set to run 2's, the rest free
    ARENA's orig = clean, new = corrupted (noising) is the caller's choice of ids."""
    _, orig_cache = run_with_hooks(m, orig_ids)
    _, new_cache = run_with_hooks(m, new_ids)
    z = [f"blocks.{l}.attn.hook_z" for l in range(m.L)]
    inputs = [f"blocks.{l}.attn.hook_{x}" for (l, _, x) in receivers]

    def freeze(sl, sh):
        def at(l):
            def f(x):
                x[...] = orig_cache[z[l]]
                if l == sl:
                    x[:, sh] = new_cache[z[l]][:, sh]
                return x
            return f
        return {z[l]: at(l) for l in range(m.L)}

    out = []
    for sl in range(m.L):
        row = []
        for sh in range(m.NH):
            logits, cache2 = run_with_hooks(m, orig_ids, freeze(sl, sh))
            if receivers:
                put = {}
                for name in set(inputs):
                    heads = [h for (l, h, x), n in zip(receivers, inputs) if n == name]

                    def f(x, name=name, heads=heads):
                        for h in heads:
                            x[:, h] = cache2[name][:, h]
                        return x
                    put[name] = f
                logits, _ = run_with_hooks(m, orig_ids, put)
            row.append(metric(logits))
        out.append(row)
    return out


# ---- logit lens --------------------------------------------------------------------------------

def accumulated_resid(m, cache):
    """TL's accumulated_resid(incl_mid=False): resid_pre of each layer, then the final
    resid_post.  (L + 1, T, C)"""
    return torch.stack([cache[f"blocks.{l}.hook_resid_pre"] for l in range(m.L)] +
                       [cache[f"blocks.{m.L - 1}.hook_resid_post"]])


TIE = 1e-4  # the fixtures' tolerance: logits closer than this may swap order in float32


def logit_lens(m, cache, answer, k=5):
    """Each accumulated residual through ln_final (its statistics recomputed for that residual)
    and the unembedding. Per [layer][pos]: the top k ids, log p(answer), the answer's rank (the
    number of tokens with a larger logit: 0 = top), the entropy and KL(final || layer), in nats;
    also the top k's logits and, per cell, how many other tokens tie with the answer within TIE."""
    logits = unembed(m, ln_final(m, accumulated_resid(m, cache)))                          # (L+1, T, V)
    logp = torch.log_softmax(logits, dim=-1)
    final = logp[-1]
    entropy = -(logp.exp() * logp).sum(-1)                                                  # (L+1, T)
    kl = (final.exp() * (final - logp)).sum(-1)                                             # KL(final || layer)
    top = torch.sort(logits, dim=-1, descending=True, stable=True)
    a = logits[..., answer:answer + 1]
    rank = (logits > a).sum(-1)
    # tokens other than the answer whose logit is within TIE of its: a float32 run may order them
    # either way, so a rank may differ from this one by up to that count
    ties = ((logits - a).abs() <= TIE).sum(-1) - 1
    return {"logits": logits, "top5": top.indices[..., :k].tolist(), "top5_logit": top.values[..., :k].tolist(),
            "logprob_answer": logp[..., answer].tolist(), "rank_answer": rank.tolist(),
            "rank_answer_ties": ties.tolist(), "entropy": entropy.tolist(), "kl_to_final": kl.tolist()}


# ---- direct logit attribution -------------------------------------------------------------------

def direct_logit_attribution(m, cache, answer, wrong, pos=-1):
    """TL's decompose_resid + stack_head_results + apply_ln_to_stack(layer = n_layers) at one
    position: each component c of the final residual contributes
        (LN: c - mean(c); RMSNorm: c) / ln_final.hook_scale * w_final . (W_U[:, answer] - W_U[:, wrong])
    with the scale frozen from the run (TL folds w_final into W_U; here it multiplies). Gemma 2's
    post-norms make the heads non-additive: its components are each layer's attn_out and mlp_out
    (the post-norms' outputs) and the sum is the logit difference before the final soft-cap.
    Returns {part: value or [per layer] or [layer][head]} with "sum" and "target"."""
    d = m.W_U[:, answer] - m.W_U[:, wrong]                                                  # (C)
    scale = cache["ln_final.hook_scale"][pos]                                               # (1)
    w_final, b_final = m.ln_final

    def attr(c):  # c (..., C)
        if m.norm == "LN":
            c = c - c.mean(-1, keepdim=True)
        return ((c / scale * w_final) @ d).tolist()
    out = {"embed": attr(cache["hook_embed"][pos])}
    if m.W_pos is not None:
        out["pos_embed"] = attr(cache["hook_pos_embed"][pos])
    if m.sandwich:
        out["attn_out"] = [attr(cache[f"blocks.{l}.hook_attn_out"][pos]) for l in range(m.L)]
    else:
        out["heads"] = [attr(cache[f"blocks.{l}.attn.hook_result"][pos]) for l in range(m.L)]   # [layer][head]
        if m.b_O[0] is not None:
            out["attn_bias"] = [attr(m.b_O[l]) for l in range(m.L)]
    if m.mlp:
        out["mlp_out"] = [attr(cache[f"blocks.{l}.hook_mlp_out"][pos]) for l in range(m.L)]
    if b_final is not None:
        out["ln_final_bias"] = (b_final @ d).item()
    total = 0.0
    for v in out.values():
        total += sum(sum(r) if isinstance(r, list) else r for r in v) if isinstance(v, list) else v
    out["sum"] = total
    return out


# ---- weights: composition and copying ------------------------------------------------------------

def per_query_head(W, m):
    """K and V weights per query head (TL's W_K / W_V repeat the KV heads for GQA)."""
    return W.repeat_interleave(m.group, dim=0)


def composition_scores(m):
    """TL's all_composition_scores on the raw weights: with OV = W_V W_O and QK = W_Q W_K^T
    (C, C) per head, score[l1][h1][l2][h2] = |A B|_F / (|A|_F |B|_F) where A = OV of the sender
    (l1, h1) and B = QK (Q-composition), QK^T (K-composition) or OV (V-composition) of the
    receiver (l2, h2); zero unless l1 < l2. Returns {"q", "k", "v"}: (L, NH, L, NH) tensors."""
    OV = torch.stack([per_query_head(m.W_V[l], m) @ m.W_O[l] for l in range(m.L)])                     # (L, NH, C, C)
    QK = torch.stack([m.W_Q[l] @ per_query_head(m.W_K[l], m).transpose(1, 2) for l in range(m.L)])    # (L, NH, C, C)

    def scores(A, B):
        prod = torch.einsum("acd,bde->abce", A.reshape(-1, m.C, m.C), B.reshape(-1, m.C, m.C))
        s = prod.norm(dim=(-2, -1)) / A.reshape(-1, m.C, m.C).norm(dim=(-2, -1))[:, None] \
            / B.reshape(-1, m.C, m.C).norm(dim=(-2, -1))[None, :]
        s = s.reshape(m.L, m.NH, m.L, m.NH)
        mask = (torch.arange(m.L)[:, None, None, None] < torch.arange(m.L)[None, None, :, None])
        return torch.where(mask, s, torch.zeros_like(s))
    return {"q": scores(OV, QK), "k": scores(OV, QK.transpose(-1, -2)), "v": scores(OV, OV)}


def ov_copying_scores(m):
    """Elhage et al.'s copying score of each head's full OV circuit W_E W_V W_O W_U (V, V):
    sum(Re lambda) / sum(|lambda|) over its eigenvalues, taken from the (HS, HS) matrix
    W_O W_U W_E W_V, which has the same nonzero eigenvalues (AB and BA). The sum of the
    eigenvalues of a real matrix is real, so Re changes only rounding. Returns (L, NH)."""
    out = torch.zeros(m.L, m.NH, dtype=torch.float64)
    W_E = m.W_E * m.embed_scale
    for l in range(m.L):
        W_V = per_query_head(m.W_V[l], m)
        for h in range(m.NH):
            small = m.W_O[l][h] @ m.W_U @ W_E @ W_V[h]                                                   # (HS, HS)
            lam = torch.linalg.eigvals(small)
            out[l, h] = lam.real.sum() / lam.abs().sum()
    return out


# ---- the independent forwards it is checked against ---------------------------------------------

def other_forward(m, ids):
    """The logits of make_family_fixtures.family_forward / make_model_fixtures.gpt2_forward on the
    same weights (written separately, without hooks)."""
    if m.family == "gpt2":
        s = dict(L=m.L, NH=m.NH, C=m.C, mlp=m.mlp, tied=False)
        w = dict(m.raw)
        w["lm_head.weight"] = m.W_U.T
        return gpt2_forward(s, w, ids)[0]
    from make_family_fixtures import family_forward
    return family_forward(m.spec, m.raw, ids)[0]
