#!/usr/bin/python3
"""The PyTorch peer of headlab_engine_bench on a Llama-family model (Llama, Qwen2), the figure
bench/run_family_bench.sh sets next to headlab's: the forward Hugging Face's eager attention
runs with output_attentions=True (transformers' modeling_llama / modeling_qwen2: RMSNorm in
float32, q/k/v projections with Qwen2's biases, rotary by rotate_half, repeat_kv for grouped-
query attention, scores q.k^T / sqrt(HS) plus an additive causal mask, softmax in float32,
SwiGLU, tied or untied unembedding), every layer's (1, NH, T, T) pattern kept and returned,
logits of every position. Batch 1, one length per process, timed like the C programs.

  /usr/bin/python3 bench/torch_family_bench.py --model DIR --tokens 256 [--repeats 5] [--dtype float32]

--dtype float32 (the default, and the peer of the ratio): from_pretrained loads a BF16
checkpoint as float32 unless told otherwise, and float32 is the arithmetic headlab does.
--dtype bfloat16 keeps the weights and the activations in bfloat16 (softmax in float32, as
transformers does): another arithmetic, printed beside the ratio, never in it.
Run it in its fair configuration (bench/run_family_bench.sh does): 2 threads,
OMP_WAIT_POLICY=PASSIVE, jemalloc with MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1, and
OpenBLAS's kernels as headlab chooses them (OPENBLAS_CORETYPE).
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

from bench_common import read_safetensors, result_line, time_forwards, token_ids


def rms_norm(x, weight, eps):
    """transformers' LlamaRMSNorm / Qwen2RMSNorm: in float32, back to the input's dtype."""
    dtype = x.dtype
    x = x.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    """(1, NKV, T, HS) -> (1, NKV * n_rep, T, HS): query head h reads KV head h // n_rep."""
    if n_rep == 1:
        return x
    b, nkv, T, hs = x.shape
    return x[:, :, None, :, :].expand(b, nkv, n_rep, T, hs).reshape(b, nkv * n_rep, T, hs)


class LlamaFamily(torch.nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        self.cfg, self.w = cfg, w
        self.C, self.NH = cfg["hidden_size"], cfg["num_attention_heads"]
        self.NKV = cfg.get("num_key_value_heads", self.NH)
        self.HS = cfg.get("head_dim", self.C // self.NH)
        self.eps = cfg["rms_norm_eps"]
        self.unembedding = w["model.embed_tokens.weight" if cfg.get("tie_word_embeddings") else "lm_head.weight"]
        self.inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.HS, 2, dtype=torch.float32) / self.HS))

    def forward(self, idx):
        w, T, NH, NKV, HS = self.w, idx.shape[1], self.NH, self.NKV, self.HS
        x = F.embedding(idx, w["model.embed_tokens.weight"])                       # (1, T, C)
        dtype = x.dtype
        freqs = torch.arange(T, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)                                    # (T, HS)
        cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
        mask = torch.full((T, T), torch.finfo(dtype).min, dtype=dtype).triu(1)     # additive
        patterns = []
        for l in range(self.cfg["num_hidden_layers"]):
            h = f"model.layers.{l}."
            a = rms_norm(x, w[h + "input_layernorm.weight"], self.eps)
            q = F.linear(a, w[h + "self_attn.q_proj.weight"], w.get(h + "self_attn.q_proj.bias"))
            k = F.linear(a, w[h + "self_attn.k_proj.weight"], w.get(h + "self_attn.k_proj.bias"))
            v = F.linear(a, w[h + "self_attn.v_proj.weight"], w.get(h + "self_attn.v_proj.bias"))
            q = q.view(1, T, NH, HS).transpose(1, 2)                               # (1, NH, T, HS)
            k = k.view(1, T, NKV, HS).transpose(1, 2)                              # (1, NKV, T, HS)
            v = v.view(1, T, NKV, HS).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k, v = repeat_kv(k, NH // NKV), repeat_kv(v, NH // NKV)
            att = torch.matmul(q, k.transpose(2, 3)) * HS ** -0.5 + mask           # (1, NH, T, T)
            att = F.softmax(att, dim=-1, dtype=torch.float32).to(dtype)
            patterns.append(att)
            z = torch.matmul(att, v).transpose(1, 2).reshape(1, T, NH * HS)
            x = x + F.linear(z, w[h + "self_attn.o_proj.weight"])
            m = rms_norm(x, w[h + "post_attention_layernorm.weight"], self.eps)
            gate = F.silu(F.linear(m, w[h + "mlp.gate_proj.weight"]))
            x = x + F.linear(gate * F.linear(m, w[h + "mlp.up_proj.weight"]), w[h + "mlp.down_proj.weight"])
        x = rms_norm(x, w["model.norm.weight"], self.eps)
        return F.linear(x, self.unembedding).float()[0], patterns                 # (T, V)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--dump-last", help="write the last position's logits here (float32)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    if cfg["model_type"] not in ("llama", "qwen2", "mistral") or cfg.get("rope_scaling") or cfg.get("use_sliding_window"):
        raise SystemExit(f"torch_family_bench: {cfg['model_type']} with these keys is not this peer's family "
                         "(Llama / Qwen2 / Mistral without rope_scaling or a sliding window)")
    dtype = getattr(torch, args.dtype)
    model = LlamaFamily(cfg, read_safetensors(os.path.join(args.model, "model.safetensors"), dtype))
    T = args.tokens
    idx = torch.tensor([token_ids(T, cfg["vocab_size"])])
    times, cpu, (logits, _) = time_forwards(lambda: model(idx), args.repeats)
    print(result_line(T, times, cpu, logits[-1], args.dump_last, dtype=args.dtype))


if __name__ == "__main__":
    main()
