#!/usr/bin/python3
"""scripts/lesson7_past_context.py — what lesson 7's three models do past their training context.

Every number comes from headlab itself: the held-out text (models/<name>/heldout.txt) is split
by `headlab tokenize`, and `headlab run --format json` scores windows of BOS + 127 tokens
(twice the trained context of 64); its per-token loss (token_loss) is averaged over the
positions the models were trained on (1-63) and over those past it (64-127). A model that
cannot read 128 tokens (learned positions: n_ctx 64) says so in headlab's own words.
The best previous-token head's weight on the token before, by band of query positions, is
measured on the scanner's own windows, so it matches what the lesson page shows
(GET /api/positions/models' previous_by_position). Then `headlab scan` at window lengths 64
and 128 gives the head scores at both lengths.

    scripts/lesson7_past_context.py                   # all three, 16 windows each
    HEADLAB_BIN=build/headlab scripts/lesson7_past_context.py --windows 8
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.environ.get("HEADLAB_BIN", os.path.join(ROOT, "build", "headlab"))
MODELS = ["headlab-nopos", "headlab-learned", "headlab-rope"]
TRAINED = 64  # the context all three were trained at (scripts/train_lesson7_models.sh)


def headlab(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def losses_by_part(model, windows, length):
    """Mean loss over positions 1..TRAINED-1 and TRAINED..length-1, or headlab's error."""
    heldout = os.path.join(model, "heldout.txt")
    ids = headlab("tokenize", "--model", model, "--file", heldout, "--format", "ids", "--no-special").stdout.split()
    inside, past = [], []
    step = (len(ids) - length) // max(1, windows - 1)
    for w in range(windows):
        window = " ".join(ids[w * step: w * step + length - 1])  # + BOS = length tokens
        r = headlab("run", "--model", model, "--ids", window, "--format", "json", "--top", "1")
        if r.returncode != 0:
            return None, None, r.stderr.strip()
        loss = json.loads(r.stdout)["token_loss"]  # loss[t]: of the token at t + 1, given 0..t
        for t, x in enumerate(loss):
            if x is None:
                continue
            (inside if t + 1 < TRAINED else past).append(x)
    return mean(inside), mean(past), None


BANDS = [(2, 8), (8, 32), (32, TRAINED)]  # query positions [a, b), as course::previous_token_bands


def previous_token_by_position(model, scan, windows=4):
    """The best previous-token head's weight on the token just before the query, averaged over
    the queries of each band, on the scanner's own natural windows (`windows` of TRAINED tokens
    spread evenly over the held-out text, as analysis::scan_probes_build places them): the
    numbers GET /api/positions/models gives the lesson page. Returns [(band, head, share, chance)]."""
    score, name = max((h["scores"]["previous_token"], h["name"]) for h in scan["heads"])
    layer, head = (int(x) for x in name.split("."))
    heldout = os.path.join(model, "heldout.txt")
    ids = headlab("tokenize", "--model", model, "--file", heldout, "--format", "ids", "--no-special").stdout.split()
    span = len(ids) - (TRAINED - 1)
    sums = [[0.0, 0.0, 0] for _ in BANDS]  # share, chance, queries
    for w in range(windows):
        start = span * w // (windows - 1) if windows > 1 else 0
        window = " ".join(ids[start: start + TRAINED - 1])  # + BOS = TRAINED tokens
        r = headlab("run", "--model", model, "--ids", window, "--format", "json", "--top", "1")
        pattern = next(h["pattern"] for h in json.loads(r.stdout)["heads"] if h["layer"] == layer and h["head"] == head)
        for acc, (a, b) in zip(sums, BANDS):
            for t in range(a, min(b, len(pattern))):
                acc[0] += pattern[t][t - 1]
                acc[1] += 1 / (t + 1)
                acc[2] += 1
    return [(band, name, s / n, c / n) for band, (s, c, n) in zip(BANDS, sums)]


def best(scan, key):
    score, name = max((h["scores"][key], h["name"]) for h in scan["heads"])
    return f"{name}: {score:.2f}"


def scan_json(model, length, windows=4):
    """`headlab scan --format json` at windows of `length` tokens, or headlab's error."""
    r = headlab("scan", "--model", model, "--format", "json", "--window-length", str(length),
                "--windows", str(windows))
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), None


def scan_at(model, length, windows=4):
    s, err = scan_json(model, length, windows)
    if err:
        return err
    read = s["probes"]["natural_tokens"] // windows + 1  # the scanner keeps to n_ctx
    if read != length:
        return f"windows of {read} tokens only: the model reads at most n_ctx = {read}"
    icl = s["in_context_learning"]
    return (f"previous-token {best(s, 'previous_token')}, induction {best(s, 'induction')}, "
            f"in-context loss {icl['loss_first_copy']:.3f} -> {icl['loss_second_copy']:.3f} "
            f"(ratio {icl['ratio']:.3f}, copies of {s['probes']['repeat_length']} tokens)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=16)
    ap.add_argument("--length", type=int, default=2 * TRAINED)
    ap.add_argument("models", nargs="*", default=MODELS, help="folders under models/ (default: all three)")
    a = ap.parse_args()
    for name in a.models:
        model = os.path.join(ROOT, "models", name)
        inside, past, err = losses_by_part(model, a.windows, a.length)
        if err:
            print(f"{name}: {a.length} tokens refused: {err}")
            inside, _, _ = losses_by_part(model, a.windows, TRAINED)
            print(f"{name}: held-out loss, positions 1-{TRAINED - 1}: {inside:.3f}")
        else:
            print(f"{name}: held-out loss, positions 1-{TRAINED - 1}: {inside:.3f}; "
                  f"positions {TRAINED}-{a.length - 1} (past the trained context): {past:.3f}")
        # chance: a query at t spreading evenly over its t + 1 keys puts 1 / (t + 1) on each
        scan, err = scan_json(model, TRAINED)
        if err:
            print(f"{name}: scan at {TRAINED} tokens failed: {err}")
        else:
            bands = previous_token_by_position(model, scan)
            parts = ", ".join(f"queries {a_}-{b_ - 1}: {share:.3f} (even spread {chance:.3f})"
                              for (a_, b_), _, share, chance in bands)
            head = bands[0][1]
            print(f"{name}: head {head} on the previous token, by query position (the page's bands): {parts}")
        for length in (TRAINED, a.length):
            print(f"{name}: scan at {length} tokens: {scan_at(model, length)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
