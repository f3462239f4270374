#!/usr/bin/python3
"""llama.cpp as the peer of headlab's GGUF support: writes small random-weight models in
the Hugging Face layout, has headlab export them to GGUF (`headlab export --gguf`), has
llama.cpp (libllama from the npm package @node-llama-cpp/linux-x64, driven by
tools/reference/llama_logits.c) compute their logits and quantize them, and saves into
tests/fixtures/gguf/:
  gpt2_random/          the GPT-2 model (config.json, model.safetensors, vocab.json, merges.txt)
  qwen2_random/, pythia_random/   a Qwen2 (GQA, q/k/v biases) and a GPT-NeoX (partial rotary,
                        parallel residual) model in the same layout
  gpt2_random.q8_0.gguf llama.cpp's Q8_0 quantization of headlab's F32 export
  llama_random.q4_k_m.gguf, llama_random.q6_k.gguf
                        llama.cpp's Q4_K_M and Q6_K quantizations of a Llama model (C = 256 so
                        the K-quants' blocks of 256 apply) that headlab exported
  qwen3_random.q8_0.gguf, gemma2_random.q8_0.gguf, gemma3_random.q8_0.gguf
                        llama.cpp's Q8_0 quantizations of the Qwen 3, Gemma 2 and Gemma 3 models
                        below as headlab exported them (llama.cpp keeps what Q8_0's blocks of 32
                        cannot cover, F = 48, in another type)
  qwen3_random/, gemma2_random/, gemma3_random/, llama3_random/, mistral_random/
                        one model of each of these families, made with the family maths of
                        make_family_fixtures.py and shaped to what llama.cpp's architecture
                        can say: Qwen 3 (q/k norm, HS 16 > C / NH, GQA, no window: llama.cpp's
                        qwen3 has none), Gemma 2 (query_pre_attn_scalar = HS, as llama.cpp
                        derives it; soft-capping 8 and 5; layer 0 sliding over 3 keys), Gemma 3
                        (3 layers, pattern 3, local base 1e4, global linear scaling 8, MQA,
                        q/k norm), Llama 3.1's rope scaling (factor 8, low 1, high 4, and an
                        original context of 64 instead of 8192 so that at T = 8 the scaling
                        moves the logits: llama.cpp stores it as rope_freqs.weight), Mistral
                        (HS 12, D != C; its config's window of 4096 keys is longer than the model's
                        32 positions, so it hides nothing and the file is llama.cpp's llama)
  expected.json         llama.cpp's logits on each file, for the same ids, and on each quantized
                        file dequantized to F32 by llama.cpp ("<name>.dequantized": the same
                        weights with float32 activations, where llama.cpp's own run on the
                        quantized file rounds its activations to 8 bits too); "reference": the
                        PyTorch reference's logits (float64, make_family_fixtures.family_forward)
                        of the five family models above
  blocks.json           for each type (F16, BF16, Q4_0 ... Q6_K) two rows of 256 weights of the
                        Llama's token_embd as llama.cpp quantized them (hex) and as llama.cpp
                        dequantizes them
Run (after `npm ci --prefix data/npm` and building headlab):
  /usr/bin/python3 tools/reference/make_llama_fixtures.py build/headlab
With `seeds` after the path it writes the GGUF fuzzer's seed corpus instead (fuzz/corpus/gguf/:
a tiny GPT-2 and a tiny Gemma 3 as headlab exports them, in F16), which needs headlab only.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model_fixtures import rounded, write_safetensors  # noqa: E402
import make_family_fixtures as families  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf")
NPM = os.path.join(ROOT, "data", "npm", "node_modules")
BINS = os.path.join(NPM, "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
BUNDLE = os.path.join(NPM, "node-llama-cpp", "llama", "gitRelease.bundle")
IDS = [261, 40, 5, 258, 17, 100, 259, 3]  # the ids every file is run on (T = 8)

# llama_ftype numbers (llama.h)
FTYPES = {"q8_0": 7, "q4_k_m": 15, "q6_k": 18}
# the ftype that makes each tensor type when every matrix gets one type ("pure")
BLOCK_FTYPES = {"F16": 1, "BF16": 32, "Q8_0": 7, "Q4_0": 2, "Q4_1": 3, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
                "Q3_K": 12, "Q4_K": 15, "Q5_K": 17, "Q6_K": 18}


def byte_order():
    """GPT-2's bytes_to_unicode: the 256 bytes' characters, in id order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_tokenizer(d):
    """256 byte tokens, 5 merges and <|endoftext|>: V = 262."""
    vocab = {ch: i for i, ch in enumerate(byte_order())}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return len(vocab)


def gpt2_model(d, V):
    """GPT-2: L = 2, C = 32, NH = 2, maxT = 16, tied."""
    L, C, maxT = 2, 32, 16
    g = torch.Generator().manual_seed(14)
    r = lambda *s, std=0.1: torch.randn(*s, generator=g) * std
    t = {"transformer.wte.weight": r(V, C, std=0.5), "transformer.wpe.weight": r(maxT, C)}
    for l in range(L):
        h = f"transformer.h.{l}."
        t[h + "ln_1.weight"] = 1 + r(C)
        t[h + "ln_1.bias"] = r(C)
        t[h + "attn.c_attn.weight"] = r(C, 3 * C, std=0.3)  # Conv1D (in, out)
        t[h + "attn.c_attn.bias"] = r(3 * C)
        t[h + "attn.c_proj.weight"] = r(C, C, std=0.2)
        t[h + "attn.c_proj.bias"] = r(C)
        t[h + "ln_2.weight"] = 1 + r(C)
        t[h + "ln_2.bias"] = r(C)
        t[h + "mlp.c_fc.weight"] = r(C, 4 * C, std=0.2)
        t[h + "mlp.c_fc.bias"] = r(4 * C)
        t[h + "mlp.c_proj.weight"] = r(4 * C, C, std=0.1)
        t[h + "mlp.c_proj.bias"] = r(C)
    t["transformer.ln_f.weight"] = 1 + r(C)
    t["transformer.ln_f.bias"] = r(C)
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
              "n_layer": L, "n_head": 2, "n_embd": C, "n_positions": maxT, "n_ctx": maxT, "vocab_size": V,
              "layer_norm_epsilon": 1e-5, "bos_token_id": V - 1, "eos_token_id": V - 1, "tie_word_embeddings": True}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(d, "model.safetensors"), t, "F32")


def llama_model(d, V):
    """Llama: L = 1, C = 256, 2 query heads of 64 and 1 KV head (D = 128 != C), F = 64, tied."""
    C, NH, NKV, HS, F = 256, 2, 1, 64, 64
    g = torch.Generator().manual_seed(15)
    r = lambda *s, std=0.1: torch.randn(*s, generator=g) * std
    h = "model.layers.0."
    t = {"model.embed_tokens.weight": r(V, C, std=0.5),
         h + "input_layernorm.weight": 1 + r(C),
         h + "self_attn.q_proj.weight": r(NH * HS, C, std=0.15),
         h + "self_attn.k_proj.weight": r(NKV * HS, C, std=0.15),
         h + "self_attn.v_proj.weight": r(NKV * HS, C),
         h + "self_attn.o_proj.weight": r(C, NH * HS),
         h + "post_attention_layernorm.weight": 1 + r(C),
         h + "mlp.gate_proj.weight": r(F, C),
         h + "mlp.up_proj.weight": r(F, C),
         h + "mlp.down_proj.weight": r(C, F),
         "model.norm.weight": 1 + r(C)}
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C,
              "num_attention_heads": NH, "num_key_value_heads": NKV, "head_dim": HS, "num_hidden_layers": 1,
              "intermediate_size": F, "vocab_size": V, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": True,
              "bos_token_id": V - 1, "eos_token_id": V - 1}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(d, "model.safetensors"), t, "F32")


def qwen2_model(d, V):
    """Qwen2: L = 1, C = 32, 4 query heads of 8, 2 KV heads, q/k/v biases, F = 48, tied."""
    C, NH, NKV, HS, F = 32, 4, 2, 8, 48
    g = torch.Generator().manual_seed(17)
    r = lambda *s, std=0.1: torch.randn(*s, generator=g) * std
    h = "model.layers.0."
    t = {"model.embed_tokens.weight": r(V, C, std=0.5), h + "input_layernorm.weight": 1 + r(C),
         h + "self_attn.q_proj.weight": r(NH * HS, C, std=0.3), h + "self_attn.q_proj.bias": r(NH * HS),
         h + "self_attn.k_proj.weight": r(NKV * HS, C, std=0.3), h + "self_attn.k_proj.bias": r(NKV * HS),
         h + "self_attn.v_proj.weight": r(NKV * HS, C, std=0.3), h + "self_attn.v_proj.bias": r(NKV * HS),
         h + "self_attn.o_proj.weight": r(C, NH * HS, std=0.2), h + "post_attention_layernorm.weight": 1 + r(C),
         h + "mlp.gate_proj.weight": r(F, C, std=0.2), h + "mlp.up_proj.weight": r(F, C, std=0.2),
         h + "mlp.down_proj.weight": r(C, F, std=0.2), "model.norm.weight": 1 + r(C)}
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": C, "num_attention_heads": NH,
              "num_key_value_heads": NKV, "num_hidden_layers": 1, "intermediate_size": F, "vocab_size": V,
              "max_position_embeddings": 32, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
              "tie_word_embeddings": True, "use_sliding_window": False, "bos_token_id": V - 1, "eos_token_id": V - 1}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(d, "model.safetensors"), t, "F32")


def pythia_model(d, V):
    """GPT-NeoX (Pythia): L = 1, C = 32, 4 heads of 8 with a quarter rotated, parallel residual, untied."""
    C, NH, HS = 32, 4, 8
    g = torch.Generator().manual_seed(18)
    r = lambda *s, std=0.1: torch.randn(*s, generator=g) * std
    h = "gpt_neox.layers.0."
    t = {"gpt_neox.embed_in.weight": r(V, C, std=0.5), h + "input_layernorm.weight": 1 + r(C),
         h + "input_layernorm.bias": r(C), h + "post_attention_layernorm.weight": 1 + r(C),
         h + "post_attention_layernorm.bias": r(C),
         h + "attention.query_key_value.weight": r(3 * C, C, std=0.3),  # rows (NH, 3, HS): Pythia's own order
         h + "attention.query_key_value.bias": r(3 * C), h + "attention.dense.weight": r(C, C, std=0.2),
         h + "attention.dense.bias": r(C), h + "mlp.dense_h_to_4h.weight": r(4 * C, C, std=0.2),
         h + "mlp.dense_h_to_4h.bias": r(4 * C), h + "mlp.dense_4h_to_h.weight": r(C, 4 * C, std=0.2),
         h + "mlp.dense_4h_to_h.bias": r(C), "gpt_neox.final_layer_norm.weight": 1 + r(C),
         "gpt_neox.final_layer_norm.bias": r(C), "embed_out.weight": r(V, C, std=0.5)}
    config = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": C,
              "num_attention_heads": NH, "num_hidden_layers": 1, "intermediate_size": 4 * C, "vocab_size": V,
              "max_position_embeddings": 32, "rotary_pct": 0.25, "rotary_emb_base": 10000, "layer_norm_eps": 1e-5,
              "use_parallel_residual": True, "hidden_act": "gelu", "tie_word_embeddings": False,
              "bos_token_id": V - 1, "eos_token_id": V - 1}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(d, "model.safetensors"), t, "F32")


# The family models that go through headlab's export and llama.cpp (V = the tokenizer's 262).
FAMILY_MODELS = [
    dict(name="qwen3_random", model_type="qwen3", L=2, C=32, NH=4, NKV=2, HS=16, F=48, n_ctx=32,
         theta=1000000.0, tied=True, qkv_bias=False, qk_norm=True),
    dict(name="gemma2_random", model_type="gemma2", L=2, C=32, NH=4, NKV=2, HS=16, F=48, n_ctx=32,
         theta=10000.0, tied=True, qkv_bias=False, gemma=True, qpas=16.0, attn_cap=8.0, final_cap=5.0,
         window=3, sliding=[True, False]),
    dict(name="gemma3_random", model_type="gemma3_text", L=3, C=32, NH=4, NKV=1, HS=16, F=48, n_ctx=32,
         theta=1000000.0, local_theta=10000.0, tied=True, qkv_bias=False, gemma=True, qk_norm=True, qpas=16.0,
         rope_scaling={"rope_type": "linear", "factor": 8.0}, window=3, sliding=[True, True, False]),
    dict(name="mistral_random", model_type="mistral", L=2, C=32, NH=4, NKV=2, HS=12, F=48, n_ctx=32,
         theta=1000000.0, tied=False, qkv_bias=False),
    dict(name="llama3_random", model_type="llama", L=2, C=32, NH=4, NKV=2, HS=16, F=48, n_ctx=32,
         theta=500000.0, tied=False, qkv_bias=False,
         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 64}),
]


def family_model(d, V, f, seed):
    """A random model of family `f` in the Hugging Face layout (F32), and the PyTorch
    reference's logits on IDS for the weights as stored."""
    f = dict(f, V=V)
    g = torch.Generator().manual_seed(seed)
    w = families.make_weights(f, g)
    config = families.config_json(dict(f, window=f.get("window", 4096)))
    if f["model_type"] == "qwen3":
        config.update({"use_sliding_window": False, "sliding_window": None, "max_window_layers": f["L"]})
    config["bos_token_id"] = config["eos_token_id"] = V - 1
    with open(os.path.join(d, "config.json"), "w") as out:
        json.dump(config, out, indent=2)
        out.write("\n")
    write_safetensors(os.path.join(d, "model.safetensors"), w, "F32")
    stored = {k: v.to(torch.float32).to(torch.float64) for k, v in w.items()}
    logits, _, _, _ = families.family_forward(f, stored, IDS)
    return [rounded(r) for r in logits]


def build_peer(tmp):
    src = os.path.join(tmp, "llama.cpp")
    subprocess.run(["git", "-c", "advice.detachedHead=false", "clone", "-q", BUNDLE, src], check=True)
    exe = os.path.join(tmp, "llama_logits")
    subprocess.run(["gcc", "-O1", "-o", exe, os.path.join(HERE, "llama_logits.c"), "-I" + os.path.join(src, "include"),
                    "-I" + os.path.join(src, "ggml", "include"), "-L" + BINS, "-l:libllama.v0.4.0.so",
                    "-l:libggml.v0.4.0.so", "-l:libggml-base.so", "-Wl,-rpath," + BINS], check=True)
    return exe, src


def gguf_rows(gguf_py, path, name, rows):
    """The raw bytes (hex) and the float values of the first rows of a tensor, read by gguf-py."""
    sys.path.insert(0, gguf_py)
    from gguf import GGUFReader  # noqa: E402
    t = next(t for t in GGUFReader(path).tensors if t.name == name)
    data = t.data.reshape(int(t.shape[1]), -1)[:rows]
    return t.tensor_type.name, data.tobytes().hex(), data


def tiny_gpt2(d, V):
    """GPT-2 at its smallest: L = 1, C = 8, NH = 2, maxT = 4."""
    g = torch.Generator().manual_seed(16)
    r = lambda *s: torch.randn(*s, generator=g) * 0.1
    C = 8
    t = {"transformer.wte.weight": r(V, C), "transformer.wpe.weight": r(4, C), "transformer.ln_f.weight": 1 + r(C),
         "transformer.ln_f.bias": r(C)}
    for name, shape in [("ln_1.weight", (C,)), ("ln_1.bias", (C,)), ("attn.c_attn.weight", (C, 3 * C)),
                        ("attn.c_attn.bias", (3 * C,)), ("attn.c_proj.weight", (C, C)), ("attn.c_proj.bias", (C,)),
                        ("ln_2.weight", (C,)), ("ln_2.bias", (C,)), ("mlp.c_fc.weight", (C, 4 * C)),
                        ("mlp.c_fc.bias", (4 * C,)), ("mlp.c_proj.weight", (4 * C, C)), ("mlp.c_proj.bias", (C,))]:
        t["transformer.h.0." + name] = r(*shape)
    config = {"model_type": "gpt2", "activation_function": "gelu_new", "n_layer": 1, "n_head": 2, "n_embd": C,
              "n_positions": 4, "n_ctx": 4, "vocab_size": V, "bos_token_id": V - 1, "eos_token_id": V - 1}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    write_safetensors(os.path.join(d, "model.safetensors"), t, "F32")


def seeds(headlab):
    out = os.path.join(ROOT, "fuzz", "corpus", "gguf")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        V = write_tokenizer(tmp)
        tiny_gpt2(tmp, V)
        subprocess.run([headlab, "export", "--gguf", os.path.join(out, "tiny_gpt2_f16.gguf"), "--model", tmp,
                        "--dtype", "f16"], check=True)
    with tempfile.TemporaryDirectory() as tmp:  # a Gemma 3: q/k norms, norms after attention and MLP, windows
        V = write_tokenizer(tmp)
        tiny = dict(model_type="gemma3_text", L=2, C=8, NH=2, NKV=1, HS=8, F=16, n_ctx=4, theta=1000000.0,
                    local_theta=10000.0, tied=True, qkv_bias=False, gemma=True, qk_norm=True, qpas=8.0,
                    rope_scaling={"rope_type": "linear", "factor": 8.0}, window=2, sliding=[True, True])
        family_model(tmp, V, tiny, 19)
        subprocess.run([headlab, "export", "--gguf", os.path.join(out, "tiny_gemma3_f16.gguf"), "--model", tmp,
                        "--dtype", "f16"], check=True)


def main():
    headlab = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "headlab"))
    if sys.argv[2:] == ["seeds"]:
        return seeds(headlab)
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, LLAMA_BACKEND_DIR=BINS)
    expected = {"ids": IDS, "peer": "llama.cpp through @node-llama-cpp/linux-x64@3.21.1 (2 threads, F32 KV cache, "
                                     "flash attention off)", "logits": {}}
    with tempfile.TemporaryDirectory() as tmp:
        peer, llama_src = build_peer(tmp)
        gguf_py = os.path.join(llama_src, "gguf-py")

        def logits(path):
            out = subprocess.run([peer, "logits", path] + [str(i) for i in IDS], check=True, env=env,
                                 capture_output=True, text=True).stdout
            return [[float(f"{v:.7g}") for v in row] for row in json.loads(out)]

        gpt2 = os.path.join(OUT, "gpt2_random")
        os.makedirs(gpt2, exist_ok=True)
        V = write_tokenizer(gpt2)
        gpt2_model(gpt2, V)
        others = []
        for name, make in [("qwen2_random", qwen2_model), ("pythia_random", pythia_model)]:
            d = os.path.join(OUT, name)
            os.makedirs(d, exist_ok=True)
            write_tokenizer(d)
            make(d, V)
            others.append((name + ".f32", d, "f32"))
        expected["reference"] = {}
        for seed, f in enumerate(FAMILY_MODELS, start=30):
            d = os.path.join(OUT, f["name"])
            os.makedirs(d, exist_ok=True)
            write_tokenizer(d)
            expected["reference"][f["name"]] = family_model(d, V, f, seed)
            others.append((f["name"] + ".f32", d, "f32"))
        llama = os.path.join(tmp, "llama_random")
        os.makedirs(llama)
        write_tokenizer(llama)
        llama_model(llama, V)
        for name, d, dtype in [("gpt2_random.f32", gpt2, "f32"), ("gpt2_random.f16", gpt2, "f16"),
                               ("llama_random.f32", llama, "f32")] + others:
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run([headlab, "export", "--gguf", path, "--model", d, "--dtype", dtype], check=True)
            expected["logits"][name] = logits(path)
        for name, src, kind in [("gpt2_random.q8_0", "gpt2_random.f32", "q8_0"),
                                ("llama_random.q4_k_m", "llama_random.f32", "q4_k_m"),
                                ("llama_random.q6_k", "llama_random.f32", "q6_k"),
                                ("qwen3_random.q8_0", "qwen3_random.f32", "q8_0"),
                                ("gemma2_random.q8_0", "gemma2_random.f32", "q8_0"),
                                ("gemma3_random.q8_0", "gemma3_random.f32", "q8_0")]:
            path = os.path.join(OUT, name + ".gguf")
            subprocess.run([peer, "quantize", os.path.join(tmp, src + ".gguf"), path, str(FTYPES[kind])], check=True, env=env)
            expected["logits"][name] = logits(path)
            plain = os.path.join(tmp, name + ".dequantized.gguf")
            subprocess.run([peer, "quantize", path, plain, "0"], check=True, env=env)
            expected["logits"][name + ".dequantized"] = logits(plain)
        blocks = {"tensor": "token_embd.weight of llama_random, rows 0 and 1", "types": {}}
        for kind, ftype in BLOCK_FTYPES.items():
            path = os.path.join(tmp, "pure." + kind + ".gguf")
            subprocess.run([peer, "quantize", os.path.join(tmp, "llama_random.f32.gguf"), path, str(ftype), "pure"],
                           check=True, env=env)
            plain = os.path.join(tmp, "pure." + kind + ".f32.gguf")
            subprocess.run([peer, "quantize", path, plain, "0"], check=True, env=env)
            type_name, raw, _ = gguf_rows(gguf_py, path, "token_embd.weight", 2)
            assert type_name == kind, (kind, type_name)
            _, _, values = gguf_rows(gguf_py, plain, "token_embd.weight", 2)
            blocks["types"][kind] = {"hex": raw, "values": [float(v) for v in values.flatten().tolist()]}
    with open(os.path.join(OUT, "blocks.json"), "w") as f:
        json.dump(blocks, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
