#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizers/gpt2_python_split.json: the byte spans of GPT-2's
pre-tokenization pieces as GPT-2's own encoder.py finds them, with Python's `regex` module
(Debian python3-regex), whose \\s is Unicode White_Space. The texts are the tokenizer
fixtures' (make_tokenizer_fixtures.mjs) plus a few rare spaces.
    python3 tools/reference/make_gpt2_split_fixture.py
"""
import json
import pathlib

import regex

root = pathlib.Path(__file__).resolve().parents[2]
# encoder.py's pattern, verbatim
pat = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
cases = json.loads((root / "tests/fixtures/tokenizers/gpt2.json").read_text(encoding="utf-8"))["cases"]
texts = [c["text"] for c in cases] + [
    "a \u0085 b\u0085\u0085 c \ufeff\ufeff d\u2028\u2029 e \u00a0\u00a0f",
    "x\x1c\x1dy \x1c \u180e \u200b z",
]
out = []
for t in texts:
    spans = [[len(t[: m.start()].encode()), len(t[: m.end()].encode())] for m in pat.finditer(t)]
    out.append({"text": t, "spans": spans})
body = ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in out)
(root / "tests/fixtures/tokenizers/gpt2_python_split.json").write_text(
    '{"source": "python3 regex ' + regex.__version__ + '",\n "cases": [\n' + body + "\n]}\n", encoding="utf-8")
