#!/usr/bin/env python3
"""Regenerates the examples in docs/api.md from a real run.

Starts `headlab serve` with the built-in model (models/headlab-tiny) on a free loopback
port, sends each documented request, and writes the request and its response, shortened
where long, between the markers in docs/api.md:

    <!-- api-example: NAME -->
    ...replaced...
    <!-- /api-example -->

Usage: scripts/api_examples.py [--bin build/headlab] [--check]
  --check  exit 1 (and change nothing) when docs/api.md differs from a fresh run

Only the standard library; the server's answers are deterministic for one model.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "api.md")
MODEL = os.path.join(ROOT, "models", "headlab-tiny")

TEXT = "the cat sat on the mat . the cat sat on the"

# name -> (method, path, body or None). The names are the markers in docs/api.md.
EXAMPLES = {
    "health": ("GET", "/api/health", None),
    "model": ("GET", "/api/model", None),
    "model-run": ("POST", "/api/model/run",
                  {"text": "the cat sat on the mat", "bos": True, "heads": [[0, 3], [1, 2]],
                   "views": ["pattern", "value_weighted"], "rollout": True, "top_k": 3}),
    "model-run-window": ("POST", "/api/model/run",
                         {"text": TEXT, "window": {"queries": [8, 13], "keys": [8, 13]},
                          "heads": [[1, 2]], "views": ["pattern"], "top_k": 0}),
    "model-run-error": ("POST", "/api/model/run", {"text": "the cat", "heads": [[0, 4]]}),
    "model-intervene": ("POST", "/api/model/intervene",
                        {"text": TEXT, "bos": True,
                         "ablate": [{"layer": 1, "head": 2, "kind": "zero"}],
                         "block": [{"layer": 0, "head": -1, "key": 0}],
                         "replace": [], "top_k": 2}),
    # the research toolbox: steering (ActAdd) in the interventions
    "model-intervene-steer": ("POST", "/api/model/intervene",
                              {"text": TEXT, "steer": [{"layer": 1, "coef": 4.0, "plus": "the dog", "minus": "the cat"}],
                               "top_k": 2}),
    "model-scan": ("GET", "/api/model/scan", None),
    "model-training-log": ("GET", "/api/model/training-log", None),
    "model-patch": ("POST", "/api/model/patch",
                    {"clean": " gray whale ink crown plum fog violin arch gray whale ink crown plum fog",
                     "corrupted": " gray whale ink crown plum fog arch violin gray whale ink crown plum fog",
                     "answer": " viol", "wrong": " ar", "what": "resid_pre", "metric": "logit_diff",
                     "positions": [13, 14, 15, 30]}),
}

LIST_HEAD = 3  # items kept of a long list of numbers; the rest becomes "..."
OBJECT_HEAD = 2  # items kept of a long list of objects or lists
DECIMALS = 4  # numbers as shown here (the answers carry more)


def shorten(v):
    """A copy of a JSON value with long lists cut to their first items, numbers rounded."""
    if isinstance(v, dict):
        return {k: shorten(x) for k, x in v.items()}
    if isinstance(v, list):
        head = OBJECT_HEAD if any(isinstance(x, (dict, list)) for x in v) else LIST_HEAD
        if len(v) > head + 1:
            return [shorten(x) for x in v[:head]] + [Ellipsis]
        return [shorten(x) for x in v]
    if isinstance(v, float):
        return round(v, DECIMALS)
    if isinstance(v, str) and len(v) > 120:
        return v[:100] + "..."
    return v


def dump(v, indent=0):
    """JSON text, one top-level field per line; '...' marks what was cut."""
    def inline(x):
        if x is Ellipsis:
            return "..."
        if isinstance(x, dict):
            return "{" + ", ".join(json.dumps(k) + ": " + inline(y) for k, y in x.items()) + "}"
        if isinstance(x, list):
            return "[" + ", ".join(inline(y) for y in x) + "]"
        return json.dumps(x, ensure_ascii=False)
    def field(k, x):
        # a list of objects: one object a line
        if isinstance(x, list) and any(isinstance(y, dict) for y in x):
            return " " + json.dumps(k) + ": [\n" + ",\n".join("   " + inline(y) for y in x) + "]"
        return " " + json.dumps(k) + ": " + inline(x)
    if isinstance(v, dict) and indent == 0:
        return "{\n" + ",\n".join(field(k, x) for k, x in v.items()) + "\n}"
    return inline(v)


def start_server(binary, db):
    p = subprocess.Popen([binary, "serve", "--port", "0", "--db", db, "--web", "/nonexistent", "--model", MODEL],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        m = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    sys.exit("headlab serve did not print its port")


def request(port, method, path, body):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def block(method, path, body, status, answer):
    out = []
    if body is not None:
        out += ["```json", dump(body), "```"]
    out += [f"→ `{status}`", "```json", dump(shorten(answer)), "```"]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "headlab"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        server, port = start_server(args.bin, os.path.join(tmp, "examples.db"))
        try:
            blocks = {name: block(m, p, b, *request(port, m, p, b)) for name, (m, p, b) in EXAMPLES.items()}
        finally:
            server.terminate()
            server.wait()
    missing = []

    def fill(m):
        name = m.group(1)
        if name not in blocks:
            missing.append(name)
            return m.group(0)
        return f"<!-- api-example: {name} -->\n{blocks.pop(name)}\n<!-- /api-example -->"

    new = re.sub(r"<!-- api-example: ([\w-]+) -->\n.*?<!-- /api-example -->", fill, doc, flags=re.S)
    if missing or blocks:
        sys.exit(f"docs/api.md markers without an example: {missing}; examples without a marker: {list(blocks)}")
    if args.check:
        if new != doc:
            sys.exit("docs/api.md differs from a fresh run: run scripts/api_examples.py")
        return
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(new)
    print("docs/api.md: examples written from a run of", os.path.relpath(MODEL, ROOT))


if __name__ == "__main__":
    main()
