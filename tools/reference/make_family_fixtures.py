#!/usr/bin/python3
"""The PyTorch reference for headlab's configured block: writes tiny random-weight models of
the families other than GPT-2 in the Hugging Face layout (config.json with the family's own
keys, model.safetensors with its own tensor names) and what each family's published maths
computes on them into tests/fixtures/model/families/<name>/expected.json: the logits, every
query head's pattern, q and k of layer 0 after the rotary, and the logits with one head
ablated.

Run with Debian's torch:   /usr/bin/python3 tools/reference/make_family_fixtures.py
(--help lists the other uses; it needs no torch and writes nothing.)
No `transformers` package: each family's forward is written below from its papers and its
reference code's maths (GPT-NeoX: Black et al. 2022; Llama: Touvron et al. 2023, Llama 3.1's
rope_scaling from Meta's llama-models reference; Mistral: Jiang et al. 2023; Qwen2: Yang et
al. 2024; Qwen3: Qwen team 2025; Gemma 2: Gemma team 2024; Gemma 3: Gemma team 2025), in
float64 from the weights as stored.

The shapes follow the real configs, small: 2 layers, C = 64, 4 query heads; Llama has 2 KV
heads (GQA), Qwen2 1 (MQA) with q/k/v biases and tied embeddings, Mistral a head size (24)
that is not C / NH, Pythia a quarter of each head rotated and the parallel residual.
The later ones: Llama 3.1's rope_scaling (llama3, its real factors); Mistral with a sliding
window of 6 keys over T = 20; Qwen 3 with q/k norm, a head size (32) above C / NH, and
use_sliding_window with max_window_layers 1 (layer 0 global, layer 1 sliding); Gemma 2 with
(1 + w) norms around attention and MLP, GeGLU, sqrt(C) embedding, query_pre_attn_scalar 24
(not HS), soft-capping (caps 8 and 5, smaller than the real 50 and 30 so that tanh bends at
these scores) and layer 0 sliding; Gemma 3 with 3 layers, sliding_window_pattern 3 (layers 0
and 1 local with rope_local_base_freq, layer 2 global with linear rope_scaling), q/k norm.
New families are appended to FAMILIES: the random stream of the earlier ones stays the same,
so their files do not change. Each family's "dtypes" are the files written of the same weights:
model.safetensors (F32), model.bf16.safetensors, model.f16.safetensors, each with the answer for
the weights exactly as that file stores them (headlab keeps BF16 and F16 matrices 16-bit).
"""
import argparse
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    from make_model_fixtures import causal_half, rounded, write_safetensors  # noqa: E402
except ModuleNotFoundError as missing:  # --help needs no torch; writing anything does
    torch = None
    TORCH_MISSING = missing

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "model", "families")

T = 20
ABLATE = (1, 2)  # (layer, head) whose z is zeroed for the "ablated" logits

FAMILIES = [
    dict(name="pythia", model_type="gpt_neox", L=2, C=64, NH=4, NKV=4, HS=16, F=128, V=48, n_ctx=64,
         rotary_pct=0.25, theta=10000.0, parallel=True, tied=False, dtypes=["F32"]),
    dict(name="llama", model_type="llama", L=2, C=64, NH=4, NKV=2, HS=16, F=96, V=48, n_ctx=64,
         theta=500000.0, tied=False, qkv_bias=False, dtypes=["F32", "BF16", "F16"]),
    dict(name="mistral", model_type="mistral", L=2, C=64, NH=4, NKV=2, HS=24, F=96, V=48, n_ctx=64,
         theta=1000000.0, tied=False, qkv_bias=False, dtypes=["F32"]),
    dict(name="qwen2", model_type="qwen2", L=2, C=64, NH=4, NKV=1, HS=16, F=96, V=48, n_ctx=64,
         theta=1000000.0, tied=True, qkv_bias=True, dtypes=["F32", "BF16", "F16"]),
    dict(name="llama3", model_type="llama", L=2, C=64, NH=4, NKV=2, HS=16, F=96, V=48, n_ctx=64,
         theta=500000.0, tied=False, qkv_bias=False, dtypes=["F32"],
         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192}),
    dict(name="mistral_window", model_type="mistral", L=2, C=64, NH=4, NKV=2, HS=16, F=96, V=48, n_ctx=64,
         theta=1000000.0, tied=False, qkv_bias=False, dtypes=["F32"], window=6, sliding=[True, True]),
    dict(name="qwen3", model_type="qwen3", L=2, C=64, NH=4, NKV=2, HS=32, F=96, V=48, n_ctx=64,
         theta=1000000.0, tied=True, qkv_bias=False, qk_norm=True, dtypes=["F32"], window=6, sliding=[False, True]),
    dict(name="gemma2", model_type="gemma2", L=2, C=64, NH=4, NKV=2, HS=32, F=96, V=48, n_ctx=64,
         theta=10000.0, tied=True, qkv_bias=False, gemma=True, qpas=24.0, attn_cap=8.0, final_cap=5.0,
         dtypes=["F32"], window=6, sliding=[True, False]),
    dict(name="gemma3", model_type="gemma3_text", L=3, C=64, NH=4, NKV=1, HS=32, F=96, V=48, n_ctx=64,
         theta=1000000.0, local_theta=10000.0, tied=True, qkv_bias=False, gemma=True, qk_norm=True, qpas=32.0,
         rope_scaling={"rope_type": "linear", "factor": 8.0}, dtypes=["F32"], window=6, sliding=[True, True, False]),
]


def config_json(f):
    """The config.json each family's Hugging Face class writes, with its own key names."""
    if f["model_type"] == "gpt_neox":
        return {
            "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
            "hidden_size": f["C"], "num_attention_heads": f["NH"], "num_hidden_layers": f["L"],
            "intermediate_size": f["F"], "vocab_size": f["V"], "max_position_embeddings": f["n_ctx"],
            "rotary_pct": f["rotary_pct"], "rotary_emb_base": f["theta"], "hidden_act": "gelu",
            "layer_norm_eps": 1e-5, "use_parallel_residual": f["parallel"], "tie_word_embeddings": False,
            "attention_bias": True, "bos_token_id": 0, "eos_token_id": 0, "rope_scaling": None,
            "torch_dtype": "float32", "use_cache": True, "initializer_range": 0.02,
            "attention_dropout": 0.0, "hidden_dropout": 0.0, "classifier_dropout": 0.1,
        }
    if f.get("gemma"):
        return gemma_config_json(f)
    arch = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "qwen3": "Qwen3ForCausalLM"}
    c = {
        "architectures": [arch[f["model_type"]]], "model_type": f["model_type"],
        "hidden_size": f["C"], "num_attention_heads": f["NH"], "num_key_value_heads": f["NKV"],
        "num_hidden_layers": f["L"], "intermediate_size": f["F"], "vocab_size": f["V"],
        "max_position_embeddings": f["n_ctx"], "rms_norm_eps": 1e-6, "rope_theta": f["theta"],
        "hidden_act": "silu", "tie_word_embeddings": f["tied"], "bos_token_id": 1, "eos_token_id": 2,
        "rope_scaling": None, "torch_dtype": "float32", "use_cache": True, "initializer_range": 0.02,
        "attention_dropout": 0.0,
    }
    if f["model_type"] == "llama":
        c.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1, "head_dim": f["HS"]})
        if "rope_scaling" in f:
            c["rope_scaling"] = f["rope_scaling"]
    if f["model_type"] == "mistral":
        c.update({"sliding_window": f.get("window", 4096), "head_dim": f["HS"]})
    if f["model_type"] == "qwen2":
        c.update({"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 21})
    if f["model_type"] == "qwen3":
        c.update({"head_dim": f["HS"], "attention_bias": False, "use_sliding_window": True,
                  "sliding_window": f["window"], "max_window_layers": 1})
    return c


def gemma_config_json(f):
    """Gemma2Config / Gemma3TextConfig as transformers writes them."""
    c = {
        "architectures": ["Gemma2ForCausalLM" if f["model_type"] == "gemma2" else "Gemma3ForCausalLM"],
        "model_type": f["model_type"], "hidden_size": f["C"], "num_attention_heads": f["NH"],
        "num_key_value_heads": f["NKV"], "head_dim": f["HS"], "num_hidden_layers": f["L"],
        "intermediate_size": f["F"], "vocab_size": f["V"], "max_position_embeddings": f["n_ctx"],
        "rms_norm_eps": 1e-6, "rope_theta": f["theta"], "hidden_activation": "gelu_pytorch_tanh",
        "hidden_act": "gelu_pytorch_tanh", "query_pre_attn_scalar": f["qpas"], "sliding_window": f["window"],
        "attn_logit_softcapping": f.get("attn_cap"), "final_logit_softcapping": f.get("final_cap"),
        "tie_word_embeddings": True, "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 2,
        "eos_token_id": 1, "pad_token_id": 0, "torch_dtype": "float32", "use_cache": True,
        "initializer_range": 0.02, "cache_implementation": "hybrid",
    }
    if f["model_type"] == "gemma3_text":
        c.update({"rope_local_base_freq": f["local_theta"], "sliding_window_pattern": 3,
                  "rope_scaling": f["rope_scaling"]})
    return c


def make_weights(f, g):
    """Random weights under each family's names. Larger than the usual init (0.02) so the
    heads have sharp, varied patterns worth comparing."""
    L, C, NH, NKV, HS, F, V = f["L"], f["C"], f["NH"], f["NKV"], f["HS"], f["F"], f["V"]

    def n(*shape, std=0.3):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std

    w = {}
    if f["model_type"] == "gpt_neox":
        w["gpt_neox.embed_in.weight"] = n(V, C, std=0.5)
        for l in range(L):
            h = f"gpt_neox.layers.{l}."
            w[h + "input_layernorm.weight"] = 1.0 + n(C, std=0.2)
            w[h + "input_layernorm.bias"] = n(C, std=0.1)
            w[h + "post_attention_layernorm.weight"] = 1.0 + n(C, std=0.2)
            w[h + "post_attention_layernorm.bias"] = n(C, std=0.1)
            w[h + "attention.query_key_value.weight"] = n(3 * NH * HS, C)  # rows (NH, 3, HS)
            w[h + "attention.query_key_value.bias"] = n(3 * NH * HS, std=0.1)
            w[h + "attention.dense.weight"] = n(C, NH * HS, std=0.15)
            w[h + "attention.dense.bias"] = n(C, std=0.1)
            w[h + "mlp.dense_h_to_4h.weight"] = n(F, C, std=0.2)
            w[h + "mlp.dense_h_to_4h.bias"] = n(F, std=0.1)
            w[h + "mlp.dense_4h_to_h.weight"] = n(C, F, std=0.1)
            w[h + "mlp.dense_4h_to_h.bias"] = n(C, std=0.1)
        w["gpt_neox.final_layer_norm.weight"] = 1.0 + n(C, std=0.2)
        w["gpt_neox.final_layer_norm.bias"] = n(C, std=0.1)
        w["embed_out.weight"] = n(V, C, std=0.5)
        return w
    if f.get("gemma"):
        return gemma_weights(f, n)
    w["model.embed_tokens.weight"] = n(V, C, std=0.5)
    for l in range(L):
        h = f"model.layers.{l}."
        w[h + "input_layernorm.weight"] = 1.0 + n(C, std=0.2)
        if f.get("qk_norm"):
            w[h + "self_attn.q_norm.weight"] = 1.0 + n(HS, std=0.2)
            w[h + "self_attn.k_norm.weight"] = 1.0 + n(HS, std=0.2)
        w[h + "self_attn.q_proj.weight"] = n(NH * HS, C)
        w[h + "self_attn.k_proj.weight"] = n(NKV * HS, C)
        w[h + "self_attn.v_proj.weight"] = n(NKV * HS, C)
        if f["qkv_bias"]:
            w[h + "self_attn.q_proj.bias"] = n(NH * HS, std=0.1)
            w[h + "self_attn.k_proj.bias"] = n(NKV * HS, std=0.1)
            w[h + "self_attn.v_proj.bias"] = n(NKV * HS, std=0.1)
        w[h + "self_attn.o_proj.weight"] = n(C, NH * HS, std=0.15)
        w[h + "post_attention_layernorm.weight"] = 1.0 + n(C, std=0.2)
        w[h + "mlp.gate_proj.weight"] = n(F, C, std=0.2)
        w[h + "mlp.up_proj.weight"] = n(F, C, std=0.2)
        w[h + "mlp.down_proj.weight"] = n(C, F, std=0.1)
    w["model.norm.weight"] = 1.0 + n(C, std=0.2)
    if not f["tied"]:
        w["lm_head.weight"] = n(V, C, std=0.5)
    return w


def gemma_weights(f, n):
    """Gemma's names: four norms a layer, stored as offsets from 1 (the norm multiplies by 1 + w)."""
    L, C, NH, NKV, HS, F, V = f["L"], f["C"], f["NH"], f["NKV"], f["HS"], f["F"], f["V"]
    w = {"model.embed_tokens.weight": n(V, C, std=0.1)}  # * sqrt(C) = 0.8 at the input
    for l in range(L):
        h = f"model.layers.{l}."
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            w[h + norm + ".weight"] = n(C, std=0.2)
        w[h + "self_attn.q_proj.weight"] = n(NH * HS, C)
        w[h + "self_attn.k_proj.weight"] = n(NKV * HS, C)
        w[h + "self_attn.v_proj.weight"] = n(NKV * HS, C)
        if f.get("qk_norm"):
            w[h + "self_attn.q_norm.weight"] = n(HS, std=0.2)
            w[h + "self_attn.k_norm.weight"] = n(HS, std=0.2)
        w[h + "self_attn.o_proj.weight"] = n(C, NH * HS, std=0.15)
        w[h + "mlp.gate_proj.weight"] = n(F, C, std=0.2)
        w[h + "mlp.up_proj.weight"] = n(F, C, std=0.2)
        w[h + "mlp.down_proj.weight"] = n(C, F, std=0.1)
    w["model.norm.weight"] = n(C, std=0.2)
    return w


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def rms_norm(x, weight, eps):
    """RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * w, no mean, no bias."""
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def gemma_rms_norm(x, weight, eps):
    """Gemma's RMSNorm: the same, times (1 + w)."""
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * (1.0 + weight)


def llama3_frequencies(inv_freq, rs):
    """Llama 3.1's rope_scaling: with wavelength w = 2 pi / f and the original context n, keep
    the frequencies of w < n / high, divide those of w > n / low by the factor, and blend the
    ones between by s = (n / w - low) / (high - low)."""
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    n = rs["original_max_position_embeddings"]
    out = []
    for f in inv_freq.tolist():
        w = 2 * math.pi / f
        if w < n / high:
            out.append(f)
        elif w > n / low:
            out.append(f / factor)
        else:
            s = (n / w - low) / (high - low)
            out.append((1 - s) * f / factor + s * f)
    return torch.tensor(out, dtype=torch.float64)


def rotary(x, rotary_dim, theta, scaling=None):
    """RoPE with the NeoX pairing (rotate_half): channel i turns with channel i + d/2 by the
    angle t * theta^(-2i/d), over the first d channels of each head. x: (heads, T, HS).
    scaling: rope_scaling (linear: positions / factor; llama3: the frequencies changed)."""
    d, half = rotary_dim, rotary_dim // 2
    t = torch.arange(x.shape[1], dtype=torch.float64)
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)   # (d/2)
    if scaling is not None and scaling["rope_type"] == "linear":
        t = t / scaling["factor"]
    if scaling is not None and scaling["rope_type"] == "llama3":
        inv_freq = llama3_frequencies(inv_freq, scaling)
    angle = t[:, None] * inv_freq[None, :]                                  # (T, d/2)
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b, rest = x[..., :half], x[..., half:d], x[..., d:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin, rest], dim=-1)


def attention(q, k, v, HS, ablate_head=None, scale_dim=None, softcap=None, window=None):
    """q (NH, T, HS); k, v (NKV, T, HS): query head h reads KV head h // (NH / NKV).
    scale_dim: the scores are q.k / sqrt(scale_dim) (Gemma's query_pre_attn_scalar; HS when None);
    softcap: scores = cap * tanh(scores / cap) before the mask; window: query t sees key t2 only
    when t - t2 < window (sliding-window attention)."""
    NH, NKV, T_ = q.shape[0], k.shape[0], q.shape[1]
    k = k.repeat_interleave(NH // NKV, dim=0)
    v = v.repeat_interleave(NH // NKV, dim=0)
    scores = q @ k.transpose(-1, -2) / math.sqrt(HS if scale_dim is None else scale_dim)  # (NH, T, T)
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    mask = torch.triu(torch.ones(T_, T_, dtype=torch.bool), diagonal=1)
    if window is not None:
        mask = mask | torch.tril(torch.ones(T_, T_, dtype=torch.bool), diagonal=-window)
    pattern = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    z = pattern @ v                                                        # (NH, T, HS)
    if ablate_head is not None:
        z[ablate_head] = 0.0
    return z, scores, pattern


def family_forward(f, w, ids, ablate=None):
    """The family's forward; returns logits (T, V), patterns and scores (L, NH, T, T), and
    q, k of layer 0 after the rotary ((T, NH*HS) and (T, NKV*HS))."""
    if f.get("gemma"):
        return gemma_forward(f, w, ids, ablate)
    L, C, NH, NKV, HS = f["L"], f["C"], f["NH"], f["NKV"], f["HS"]
    neox = f["model_type"] == "gpt_neox"
    T_ = len(ids)
    x = (w["gpt_neox.embed_in.weight"] if neox else w["model.embed_tokens.weight"])[ids]
    patterns, scores_all, q0k0 = [], [], None
    for l in range(L):
        ablate_head = ablate[1] if ablate is not None and ablate[0] == l else None
        if neox:
            h = f"gpt_neox.layers.{l}."
            ln1 = layer_norm(x, w[h + "input_layernorm.weight"], w[h + "input_layernorm.bias"], 1e-5)
            qkv = ln1 @ w[h + "attention.query_key_value.weight"].T + w[h + "attention.query_key_value.bias"]
            qkv = qkv.view(T_, NH, 3, HS)                                  # GPT-NeoX fuses per head
            q, k, v = (qkv[:, :, s].transpose(0, 1) for s in range(3))     # (NH, T, HS)
            rd = int(HS * f["rotary_pct"])
        else:
            h = f"model.layers.{l}."
            ln1 = rms_norm(x, w[h + "input_layernorm.weight"], 1e-6)

            def proj(name, heads):
                y = ln1 @ w[h + f"self_attn.{name}.weight"].T
                if f["qkv_bias"]:
                    y = y + w[h + f"self_attn.{name}.bias"]
                return y.view(T_, heads, HS).transpose(0, 1)
            q, k, v = proj("q_proj", NH), proj("k_proj", NKV), proj("v_proj", NKV)
            if f.get("qk_norm"):  # Qwen 3: RMSNorm over each head, before the rotation
                q = rms_norm(q, w[h + "self_attn.q_norm.weight"], 1e-6)
                k = rms_norm(k, w[h + "self_attn.k_norm.weight"], 1e-6)
            rd = HS
        q, k = rotary(q, rd, f["theta"], f.get("rope_scaling")), rotary(k, rd, f["theta"], f.get("rope_scaling"))
        if l == 0:
            q0k0 = (q.transpose(0, 1).reshape(T_, -1), k.transpose(0, 1).reshape(T_, -1))
        window = f["window"] if "sliding" in f and f["sliding"][l] else None
        z, scores, pattern = attention(q, k, v, HS, ablate_head, window=window)
        patterns.append(pattern)
        scores_all.append(scores)
        z = z.transpose(0, 1).reshape(T_, NH * HS)
        if neox:
            attn = z @ w[h + "attention.dense.weight"].T + w[h + "attention.dense.bias"]
            mlp_in = x if f["parallel"] else x + attn
            ln2 = layer_norm(mlp_in, w[h + "post_attention_layernorm.weight"], w[h + "post_attention_layernorm.bias"],
                             1e-5)
            hidden = ln2 @ w[h + "mlp.dense_h_to_4h.weight"].T + w[h + "mlp.dense_h_to_4h.bias"]
            hidden = 0.5 * hidden * (1.0 + torch.erf(hidden / math.sqrt(2.0)))   # GELU, exact (erf)
            mlp = hidden @ w[h + "mlp.dense_4h_to_h.weight"].T + w[h + "mlp.dense_4h_to_h.bias"]
            x = x + attn + mlp
        else:
            x = x + z @ w[h + "self_attn.o_proj.weight"].T
            ln2 = rms_norm(x, w[h + "post_attention_layernorm.weight"], 1e-6)
            gate = ln2 @ w[h + "mlp.gate_proj.weight"].T
            up = ln2 @ w[h + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ w[h + "mlp.down_proj.weight"].T  # SwiGLU
    if neox:
        xf = layer_norm(x, w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"], 1e-5)
        logits = xf @ w["embed_out.weight"].T
    else:
        xf = rms_norm(x, w["model.norm.weight"], 1e-6)
        logits = xf @ (w["model.embed_tokens.weight"] if f["tied"] else w["lm_head.weight"]).T
    return logits, torch.stack(patterns), torch.stack(scores_all), q0k0


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gemma_forward(f, w, ids, ablate=None):
    """Gemma 2 and 3 (text): x = embed * sqrt(C); per layer
         x = x + norm(attn(norm(x)));  x = x + norm(mlp(norm(x)))      (RMSNorm with 1 + w)
       attention: scores / sqrt(query_pre_attn_scalar), soft-capped (Gemma 2), the sliding
       layers masked to the window; Gemma 3: q/k norm, local layers rotate with
       rope_local_base_freq and no scaling, global ones with rope_theta and rope_scaling.
       mlp: down(gelu_tanh(gate) * up). logits = norm(x) @ embed^T, soft-capped (Gemma 2)."""
    L, C, NH, NKV, HS = f["L"], f["C"], f["NH"], f["NKV"], f["HS"]
    T_ = len(ids)
    eps = 1e-6
    x = w["model.embed_tokens.weight"][ids] * math.sqrt(C)
    patterns, scores_all, q0k0 = [], [], None
    for l in range(L):
        h = f"model.layers.{l}."
        ablate_head = ablate[1] if ablate is not None and ablate[0] == l else None
        ln1 = gemma_rms_norm(x, w[h + "input_layernorm.weight"], eps)

        def proj(name, heads):
            return (ln1 @ w[h + f"self_attn.{name}.weight"].T).view(T_, heads, HS).transpose(0, 1)
        q, k, v = proj("q_proj", NH), proj("k_proj", NKV), proj("v_proj", NKV)
        if f.get("qk_norm"):
            q = gemma_rms_norm(q, w[h + "self_attn.q_norm.weight"], eps)
            k = gemma_rms_norm(k, w[h + "self_attn.k_norm.weight"], eps)
        sliding = f["sliding"][l]
        if "local_theta" in f and sliding:
            theta, scaling = f["local_theta"], None
        else:
            theta, scaling = f["theta"], f.get("rope_scaling")
        q, k = rotary(q, HS, theta, scaling), rotary(k, HS, theta, scaling)
        if l == 0:
            q0k0 = (q.transpose(0, 1).reshape(T_, -1), k.transpose(0, 1).reshape(T_, -1))
        z, scores, pattern = attention(q, k, v, HS, ablate_head, scale_dim=f["qpas"], softcap=f.get("attn_cap"),
                                       window=f["window"] if sliding else None)
        patterns.append(pattern)
        scores_all.append(scores)
        z = z.transpose(0, 1).reshape(T_, NH * HS)
        attn = z @ w[h + "self_attn.o_proj.weight"].T
        x = x + gemma_rms_norm(attn, w[h + "post_attention_layernorm.weight"], eps)
        ln2 = gemma_rms_norm(x, w[h + "pre_feedforward_layernorm.weight"], eps)
        gate = ln2 @ w[h + "mlp.gate_proj.weight"].T
        up = ln2 @ w[h + "mlp.up_proj.weight"].T
        mlp = (gelu_tanh(gate) * up) @ w[h + "mlp.down_proj.weight"].T                      # GeGLU
        x = x + gemma_rms_norm(mlp, w[h + "post_feedforward_layernorm.weight"], eps)
    xf = gemma_rms_norm(x, w["model.norm.weight"], eps)
    logits = xf @ w["model.embed_tokens.weight"].T
    if f.get("final_cap") is not None:
        logits = f["final_cap"] * torch.tanh(logits / f["final_cap"])
    return logits, torch.stack(patterns), torch.stack(scores_all), q0k0


def main():
    g = torch.Generator().manual_seed(20261201)
    for f in FAMILIES:
        d = os.path.join(OUT, f["name"])
        os.makedirs(d, exist_ok=True)
        w = make_weights(f, g)
        ids = torch.randint(0, f["V"], (T,), generator=g).tolist()
        with open(os.path.join(d, "config.json"), "w") as out:
            json.dump(config_json(f), out, indent=2)
            out.write("\n")
        expected = {"ids": ids, "kv_heads": f["NKV"], "head_size": f["HS"], "ablate": list(ABLATE), "variants": {}}
        if "window" in f and "sliding" in f:
            expected["window"] = [f["window"] if s else 0 for s in f["sliding"]]
        for dtype in f["dtypes"]:
            name = "model.safetensors" if dtype == "F32" else f"model.{dtype.lower()}.safetensors"
            write_safetensors(os.path.join(d, name), w, dtype)
            # the answer for the weights exactly as this file stores them
            ws = {k: v.to({"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[dtype]).to(torch.float64)
                  for k, v in w.items()}
            logits, pattern, scores, (q0, k0) = family_forward(f, ws, ids)
            ablated, _, _, _ = family_forward(f, ws, ids, ablate=ABLATE)
            expected["variants"][dtype] = {
                "file": name,
                "logits": [rounded(r) for r in logits],
                "pattern": causal_half(pattern),
                "scores": causal_half(scores),
                "q_rotated_layer0": [rounded(r) for r in q0],
                "k_rotated_layer0": [rounded(r) for r in k0],
                "logits_ablated": [rounded(r) for r in ablated],
            }
        with open(os.path.join(d, "expected.json"), "w") as out:
            json.dump(expected, out, separators=(",", ":"))
            out.write("\n")
        print(f"{f['name']}: wrote {d}")


def demo(out_dir, tokenizer_dir, model_type):
    """A random-weight model of one family with the vocabulary of a headlab tokenizer, to try
    the CLI, the scanner and the server on (not a fixture):
      /usr/bin/python3 tools/reference/make_family_fixtures.py --demo /tmp/llama-demo models/headlab-tiny llama"""
    import shutil
    with open(os.path.join(tokenizer_dir, "config.json")) as f:
        tok = json.load(f)
    V = tok["vocab_size"]
    base = next((f for f in FAMILIES if model_type in (f["model_type"], f["name"])), None)
    if base is None:
        sys.exit(f"--demo: no family {model_type!r}; one of " + ", ".join(sorted({f["name"] for f in FAMILIES})))
    fam = dict(base, name="demo", V=V, n_ctx=128)
    g = torch.Generator().manual_seed(7)
    w = make_weights(fam, g)
    os.makedirs(out_dir, exist_ok=True)
    cfg = config_json(fam)
    cfg["bos_token_id"] = cfg["eos_token_id"] = tok.get("bos_token_id", V - 1)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), w, "BF16")
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        if os.path.exists(os.path.join(tokenizer_dir, name)):
            shutil.copy(os.path.join(tokenizer_dir, name), out_dir)
    print(f"wrote a random {model_type} model (V = {V}, BF16) to {out_dir}")


# Llama-3.2-1B's shape (1.24 B weights; its config.json's keys and llama3 rope scaling), for
# the by-hand check that a model of that size runs on these machines (not a fixture: 2.5 GB).
LLAMA_3_2_1B = dict(name="llama-3.2-1b", model_type="llama", L=16, C=2048, NH=32, NKV=8, HS=64, F=8192, V=128256,
                    n_ctx=131072, theta=500000.0, tied=True, qkv_bias=False,
                    rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})


def big(out_dir):
    """Random BF16 weights of Llama-3.2-1B's shape, written a block of rows at a time so that
    making them needs little memory (N(0, 0.02) matrices, norms 1; no tokenizer: run it with --ids):
      /usr/bin/python3 tools/reference/make_family_fixtures.py --llama-3.2-1b /tmp/llama-1b"""
    f = LLAMA_3_2_1B
    L, C, NH, NKV, HS, F, V = f["L"], f["C"], f["NH"], f["NKV"], f["HS"], f["F"], f["V"]
    shapes = {"model.embed_tokens.weight": (V, C)}
    for l in range(L):
        h = f"model.layers.{l}."
        shapes.update({h + "input_layernorm.weight": (C,), h + "self_attn.q_proj.weight": (NH * HS, C),
                       h + "self_attn.k_proj.weight": (NKV * HS, C), h + "self_attn.v_proj.weight": (NKV * HS, C),
                       h + "self_attn.o_proj.weight": (C, NH * HS), h + "post_attention_layernorm.weight": (C,),
                       h + "mlp.gate_proj.weight": (F, C), h + "mlp.up_proj.weight": (F, C),
                       h + "mlp.down_proj.weight": (C, F)})
    shapes["model.norm.weight"] = (C,)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes.items():
        n = math.prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    os.makedirs(out_dir, exist_ok=True)
    g = torch.Generator().manual_seed(32)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name, shape in shapes.items():
            if len(shape) == 1:
                out.write(torch.ones(shape, dtype=torch.bfloat16).view(torch.int16).numpy().tobytes())
                continue
            for r in range(0, shape[0], 4096):
                rows = torch.randn(min(4096, shape[0] - r), shape[1], generator=g) * 0.02
                out.write(rows.to(torch.bfloat16).view(torch.int16).numpy().tobytes())
    cfg = config_json(f)
    cfg.update({"torch_dtype": "bfloat16", "rms_norm_eps": 1e-5, "bos_token_id": 128000, "eos_token_id": 128001})
    with open(os.path.join(out_dir, "config.json"), "w") as out:
        json.dump(cfg, out, indent=2)
    print(f"wrote a random {f['name']} model ({sum(math.prod(s) for s in shapes.values())} weights, BF16) to {out_dir}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Without options: rewrite the family fixtures in " + os.path.relpath(OUT, os.getcwd()) +
                    " (config.json, model*.safetensors, expected.json of each family) from the PyTorch "
                    "reference. Needs Debian's python3-torch.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--demo", nargs=3, metavar=("OUT_DIR", "TOKENIZER_DIR", "MODEL_TYPE"),
                      help="write a random-weight model of one family with the vocabulary of a headlab tokenizer "
                           "folder to OUT_DIR (not a fixture), e.g. --demo /tmp/llama-demo models/headlab-tiny llama")
    mode.add_argument("--llama-3.2-1b", dest="llama_1b", metavar="OUT_DIR",
                      help="write random BF16 weights of Llama-3.2-1B's shape (2.5 GB, no tokenizer) to OUT_DIR")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    if torch is None:
        sys.exit(f"make_family_fixtures.py: needs PyTorch ({TORCH_MISSING}); install Debian's python3-torch")
    if args.demo:
        demo(*args.demo)
    elif args.llama_1b:
        big(args.llama_1b)
    else:
        main()
