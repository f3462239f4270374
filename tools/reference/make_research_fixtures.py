#!/usr/bin/python3
"""Writes tests/fixtures/research/<name>/ for headlab's research toolbox (issue 27): for five
models (GPT-2 tiny; Llama with GQA; Gemma 2 with sandwich norms, soft-caps and a sliding layer;
Pythia with the parallel residual and a partial rotary; the built-in headlab-tiny) a clean and a
corrupted prompt (prompts.json), every hook of the clean run under its TransformerLens name
(cache.safetensors, float32, batch axis first) and what the published definitions give on them
(expected.json): activation patching, path patching, the logit lens, direct logit attribution, composition and
copying scores. research_reference.py computes them in float64; tests/fixtures/research/README.md
gives the files' schema.

Run with Debian's torch:   /usr/bin/python3 tools/reference/make_research_fixtures.py
Same seeds, same files, byte for byte (--check proves it without writing).
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "research")

# name -> the model's folder, relative to the repository's root
MODELS = {
    "gpt2_tiny": "tests/fixtures/model/gpt2_tiny",
    "llama": "tests/fixtures/model/families/llama",
    "gemma2": "tests/fixtures/model/families/gemma2",
    "pythia": "tests/fixtures/model/families/pythia",
    "headlab_tiny": "models/headlab-tiny",
}
T = 10                      # the random models' prompt length
CORRUPTED_POSITIONS = (1, 4, 6)   # where a random model's corrupted prompt differs from its clean one
INDUCTION_COPY = 6          # headlab_tiny: BOS, 6 random tokens, then the first 5 again (T = 12)
SEED = 20261205
TOL = 1e-9                  # the identities, in float64
# path patching's receiver heads (layer, head, input); k and v name KV heads
PATH_RECEIVERS = {"*": [(1, 0, "q"), (1, 1, "k"), (1, 1, "v")],
                  "headlab_tiny": [(1, h, "k") for h in range(4)]}   # the induction heads' keys


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Rewrite the research toolbox's fixtures in tests/fixtures/research/<name>/ "
                    "(prompts.json, cache.safetensors, expected.json) for " + ", ".join(MODELS) +
                    " from the PyTorch reference (tools/reference/research_reference.py). Needs Debian's "
                    "python3-torch. Every run asserts the cache identities, the logits against the models' "
                    "own expected.json and the patching sanity checks before writing.")
    p.add_argument("--only", choices=sorted(MODELS), action="append",
                   help="write only this model's folder (repeatable)")
    p.add_argument("--check", action="store_true",
                   help="write nothing: rebuild every file in a temporary folder and fail unless each is "
                        "byte-identical to the committed one")
    return p.parse_args(argv)


def r9(x):
    """float64 rounded to 9 significant digits, nested lists kept."""
    if isinstance(x, list):
        return [r9(v) for v in x]
    return float(f"{x:.9g}")


def make_prompts(name, m, g, torch):
    """Random models: random ids, the corrupted prompt differing at CORRUPTED_POSITIONS, random
    answer and wrong. headlab_tiny: BOS + A + A[:5] (the second copy predictable, answer A[5]);
    the corrupted first copy has A[5] replaced by B5, the token an induction head then predicts
    (wrong = B5)."""
    if name == "headlab_tiny":
        bos = m.config["bos_token_id"]
        A = torch.randperm(bos, generator=g)[:INDUCTION_COPY].tolist()     # distinct, never BOS
        b5 = torch.randperm(bos, generator=g)[0].item()
        assert b5 not in A
        clean = [bos] + A + A[:-1]
        corrupted = [bos] + A[:-1] + [b5] + A[:-1]
        return {"clean": clean, "corrupted": corrupted, "answer": A[-1], "wrong": b5}
    clean = torch.randint(0, m.V, (T,), generator=g).tolist()
    corrupted = list(clean)
    for p in CORRUPTED_POSITIONS:
        while corrupted[p] == clean[p]:
            corrupted[p] = torch.randint(0, m.V, (1,), generator=g).item()
    answer, wrong = torch.randperm(m.V, generator=g)[:2].tolist()
    return {"clean": clean, "corrupted": corrupted, "answer": answer, "wrong": wrong}


def close(a, b, tol, what):
    d = (a - b).abs().max().item()
    assert d <= tol, f"{what}: max |difference| {d:.3g} > {tol:g}"
    return d


def check_cache(m, cache, logits, rr, torch):
    """The identities every cache must satisfy (float64): the residual stream adds up, the heads
    add up to attn_out, the norms' outputs follow from their scales, patterns are distributions."""
    x = cache["hook_embed"] + (cache["hook_pos_embed"] if m.W_pos is not None else 0)
    for l in range(m.L):
        b = f"blocks.{l}."
        close(cache[b + "hook_resid_pre"], x, TOL, f"{b}resid_pre = previous resid_post")
        result_sum = cache[b + "attn.hook_result"].sum(1) + (m.b_O[l] if m.b_O[l] is not None else 0)
        if m.sandwich:  # Gemma: attn_out = ln1_post(sum of the heads)
            result_sum = rr.norm_apply(m, result_sum, rr.norm_scale(m, result_sum), m.ln1_post[l], None)
        close(result_sum, cache[b + "hook_attn_out"], TOL, f"{b}sum of hook_result (+ b_O) = attn_out")
        close(cache[b + "attn.hook_pattern"].sum(-1), torch.ones(m.NH, len(x)), TOL, f"{b}pattern rows sum to 1")
        close(rr.norm_apply(m, x, cache[b + "ln1.hook_scale"], *m.ln1[l]), cache[b + "ln1.hook_normalized"], TOL,
              f"{b}ln1.hook_normalized = ln1(resid_pre) with ln1.hook_scale")
        if not m.mlp:
            close(cache[b + "hook_resid_post"], x + cache[b + "hook_attn_out"], TOL,
                  f"{b}resid_post = resid_pre + attn_out")
        elif m.parallel:
            close(cache[b + "hook_resid_post"], x + cache[b + "hook_attn_out"] + cache[b + "hook_mlp_out"], TOL,
                  f"{b}resid_post = resid_pre + attn_out + mlp_out (parallel)")
        else:
            close(cache[b + "hook_resid_mid"], x + cache[b + "hook_attn_out"], TOL,
                  f"{b}resid_mid = resid_pre + attn_out")
            close(cache[b + "hook_resid_post"], cache[b + "hook_resid_mid"] + cache[b + "hook_mlp_out"], TOL,
                  f"{b}resid_post = resid_mid + mlp_out")
        x = cache[b + "hook_resid_post"]
    close(rr.unembed(m, cache["ln_final.hook_normalized"]), logits, TOL, "logits = unembed(ln_final.hook_normalized)")
    assert list(cache) == rr.hook_names(m), "the cache's names are the model's hooks, in the forward's order"


def check_logits(name, m, rr, torch):
    """The hooked forward against the forward written without hooks (1e-9) and against the
    logits committed in the model's own expected.json (1e-5; those are rounded to 7 digits)."""
    d = os.path.join(ROOT, MODELS[name])
    path = os.path.join(d, "expected.json")
    ids = json.load(open(path))["ids"] if os.path.exists(path) else list(range(1, 21))
    logits, _ = rr.run_with_hooks(m, ids)
    close(logits, rr.other_forward(m, ids), 1e-8, f"{name}: hooked forward = the plain forward")
    if os.path.exists(path):
        committed = torch.tensor(json.load(open(path))["variants"]["F32"]["logits"], dtype=torch.float64)
        return close(logits, committed, 1e-5, f"{name}: logits = {MODELS[name]}/expected.json")
    return None


def noising_z_last(m, p, corrupted_cache, rr, metric):
    """Activation patching (noising) of each last-layer head's z: with nothing after it but the
    unembedding, the same as path patching it into the final residual stream."""
    name = f"blocks.{m.L - 1}.attn.hook_z"
    out = []
    for h in range(m.NH):
        def f(x, h=h):
            x[:, h] = corrupted_cache[name][:, h]
            return x
        logits, _ = rr.run_with_hooks(m, p["clean"], {name: f})
        out.append(metric(logits))
    return out


def check_patching(m, prompts, clean_cache, corrupted_cache, rr, metric, clean_metric, corrupted_metric):
    """Sanity: overwriting a layer's whole resid_pre by the clean one gives the clean metric (every
    layer; the rest of the run depends on nothing else), the reverse gives the corrupted metric,
    every head's z at every position equals the whole attn_out (non-Gemma: z W_O + b_O is attn_out)."""
    corrupted, clean = prompts["corrupted"], prompts["clean"]
    for l in range(m.L):
        name = f"blocks.{l}.hook_resid_pre"
        logits, _ = rr.run_with_hooks(m, corrupted, {name: lambda x, n=name: clean_cache[n].clone()})
        assert abs(metric(logits) - clean_metric) < TOL, f"resid_pre {l} all positions (denoising) = clean"
        logits, _ = rr.run_with_hooks(m, clean, {name: lambda x, n=name: corrupted_cache[n].clone()})
        assert abs(metric(logits) - corrupted_metric) < TOL, f"resid_pre {l} all positions (noising) = corrupted"
        z, out = f"blocks.{l}.attn.hook_z", f"blocks.{l}.hook_attn_out"
        a, _ = rr.run_with_hooks(m, corrupted, {z: lambda x, n=z: clean_cache[n].clone()})
        b, _ = rr.run_with_hooks(m, corrupted, {out: lambda x, n=out: clean_cache[n].clone()})
        assert abs(metric(a) - metric(b)) < TOL, f"layer {l}: every head's z = attn_out"


def build(name, rr, torch):
    """Everything for one model: (prompts, cache tensors, expected, figures for the report)."""
    m = rr.load(name, os.path.join(ROOT, MODELS[name]))
    g = torch.Generator().manual_seed(SEED + sorted(MODELS).index(name))
    p = make_prompts(name, m, g, torch)
    prompts = {"model": MODELS[name], **p}
    answer, wrong = p["answer"], p["wrong"]

    def metric(logits):
        return rr.logit_diff(logits, answer, wrong)
    figures = {"logits_vs_committed": check_logits(name, m, rr, torch)}
    clean_logits, clean_cache = rr.run_with_hooks(m, p["clean"])
    corrupted_logits, corrupted_cache = rr.run_with_hooks(m, p["corrupted"])
    check_cache(m, clean_cache, clean_logits, rr, torch)
    check_cache(m, corrupted_cache, corrupted_logits, rr, torch)
    clean_metric, corrupted_metric = metric(clean_logits), metric(corrupted_logits)
    check_patching(m, p, clean_cache, corrupted_cache, rr, metric, clean_metric, corrupted_metric)

    # activation patching: denoising (the clean activation into the corrupted run), raw metric values
    patch = {}
    whats = ["resid_pre", "attn_out"] + (["mlp_out"] if m.mlp else []) + \
            (["resid_mid"] if m.mlp and not m.parallel else []) + \
            ["z_all_pos", "q_all_pos", "k_all_pos", "v_all_pos", "pattern_all_pos", "z_by_pos"]
    for what in whats:
        patch[what] = rr.patch_sweep(m, p["corrupted"], clean_cache, what, metric)
    # a position where the prompts agree is the same activation in both runs at layer 0
    for pos in range(len(p["clean"])):
        if p["clean"][pos] == p["corrupted"][pos]:
            assert abs(patch["resid_pre"][0][pos] - corrupted_metric) < TOL, "equal positions change nothing"
    noising = rr.patch_sweep(m, p["clean"], corrupted_cache, "resid_pre", metric)

    # attribution patching (denoising: the corrupted run's gradient, the clean activations), by
    # autograd from the definition (research_reference.attribution_patch)
    def metric_tensor(logits):
        return logits[-1, answer] - logits[-1, wrong]
    attr_whats = ["resid_pre", "attn_out"] + (["mlp_out"] if m.mlp else []) + \
                 (["resid_mid"] if m.mlp and not m.parallel else []) + \
                 [f"{a}_{b}" for b in ("all_pos", "by_pos") for a in ("z", "q", "k", "v", "pattern")]
    attribution = rr.attribution_patch(m, p["corrupted"], clean_cache, metric_tensor, attr_whats)
    # sanity: a position where the prompts agree at layer 0 has no difference, so no attribution
    for pos in range(len(p["clean"])):
        if p["clean"][pos] == p["corrupted"][pos]:
            assert abs(attribution["resid_pre"][0][pos] - corrupted_metric) < TOL, "equal positions attribute nothing"

    # path patching, ARENA's direction (orig = clean, new = corrupted): into the logits, and into
    # the receivers' inputs (PATH_RECEIVERS); a sender at the receivers' layer has no path to them
    receivers = PATH_RECEIVERS[name] if name in PATH_RECEIVERS else PATH_RECEIVERS["*"]
    path_final = rr.path_patch(m, p["clean"], p["corrupted"], metric)
    path_heads = rr.path_patch(m, p["clean"], p["corrupted"], metric, receivers)
    last = max(l for (l, _, _) in receivers)
    for l in range(last, m.L):
        assert all(abs(v - clean_metric) < TOL for v in path_heads[l]), "no path from a receiver's layer on"
    if not m.mlp:  # attention-only, the other heads frozen: the last layer's senders act only directly
        assert all(abs(a - b) < TOL for a, b in zip(path_final[-1], noising_z_last(m, p, corrupted_cache, rr, metric)))

    lens = rr.logit_lens(m, clean_cache, answer)
    close(lens["logits"][-1], clean_logits, TOL, "the lens's last layer = the model's logits")
    assert max(abs(v) for v in lens["kl_to_final"][-1]) < TOL
    sorted_logits = torch.sort(lens["logits"], dim=-1, descending=True).values
    figures["lens_min_top6_gap"] = (sorted_logits[..., :5] - sorted_logits[..., 1:6]).min().item()
    gap_answer = (lens["logits"] - lens["logits"][..., answer:answer + 1]).abs()
    gap_answer[..., answer] = float("inf")
    figures["lens_min_answer_gap"] = gap_answer.min().item()

    dla = rr.direct_logit_attribution(m, clean_cache, answer, wrong)
    b_U = m.b_U[answer] - m.b_U[wrong] if m.b_U is not None else 0.0
    if m.final_cap is not None:
        # the parts add up to the logit difference before the soft-cap: logits = cap * tanh(raw / cap)
        raw = rr.unembed_raw(m, clean_cache["ln_final.hook_normalized"][-1])
        dla["final_softcap"] = m.final_cap
        dla["target"] = (raw[answer] - raw[wrong]).item() - b_U
    else:
        dla["target"] = clean_metric - b_U
    assert abs(dla["sum"] - dla["target"]) < TOL, f"{name}: DLA sum {dla['sum']} != target {dla['target']}"

    comp = rr.composition_scores(m)
    copying = rr.ov_copying_scores(m)
    if m.V <= 100:  # the (HS, HS) shortcut against the eigenvalues of the full (V, V) OV circuit
        for l in range(m.L):
            W_V = rr.per_query_head(m.W_V[l], m)
            for h in range(m.NH):
                lam = torch.linalg.eigvals(m.W_E * m.embed_scale @ W_V[h] @ m.W_O[l][h] @ m.W_U)
                full = (lam.real.sum() / lam.abs().sum()).item()
                assert abs(full - copying[l, h].item()) < 1e-9, f"copying {l}.{h}: {full} vs {copying[l, h].item()}"
    expected = {
        "dims": {"L": m.L, "NH": m.NH, "NKV": m.NKV, "T": len(p["clean"]), "V": m.V},
        "logit_diff": {"clean": r9(clean_metric), "corrupted": r9(corrupted_metric)},
        "patch": {k: r9(v) for k, v in patch.items()},
        "noising_resid_pre": r9(noising),
        "attribution_patch": {k: r9(v) for k, v in attribution.items()},
        "path_patch": {"final": r9(path_final), "heads": r9(path_heads),
                       "receivers": [f"{l}.{h}:{x}" for (l, h, x) in receivers]},
        "lens": {"top5": lens["top5"], "top5_logit": r9(lens["top5_logit"]),
                 "logprob_answer": r9(lens["logprob_answer"]), "rank_answer": lens["rank_answer"],
                 "rank_answer_ties": lens["rank_answer_ties"], "entropy": r9(lens["entropy"]),
                 "kl_to_final": r9(lens["kl_to_final"])},
        "dla": {k: r9(v) for k, v in dla.items()},
        "compose": {k: r9(v.tolist()) for k, v in comp.items()},
        "ov_copying": r9(copying.tolist()),
    }
    tensors = {n: clean_cache[n].unsqueeze(0) for n in rr.hook_names(m)}
    figures.update(clean=clean_metric, corrupted=corrupted_metric, compose_k=comp["k"])
    return prompts, tensors, expected, figures


def write(out_dir, prompts, tensors, expected, write_safetensors):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "prompts.json"), "w") as f:
        json.dump(prompts, f, separators=(", ", ": "))
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "cache.safetensors"), tensors, "F32")
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")


def main():
    args = parse_args()
    try:
        import torch
    except ModuleNotFoundError as missing:
        sys.exit(f"make_research_fixtures.py: needs PyTorch ({missing}); install Debian's python3-torch")
    torch.set_num_threads(1)  # the same sums in the same order on every machine: byte-identical files
    sys.path.insert(0, HERE)
    import research_reference as rr
    from make_model_fixtures import write_safetensors
    names = args.only or list(MODELS)
    target = tempfile.mkdtemp(prefix="research-fixtures-") if args.check else OUT
    failed = []
    for name in names:
        prompts, tensors, expected, fig = build(name, rr, torch)
        write(os.path.join(target, name), prompts, tensors, expected, write_safetensors)
        line = f"{name}: logit diff clean {fig['clean']:.6g}, corrupted {fig['corrupted']:.6g}; " \
               f"lens gaps (top 6, answer) {fig['lens_min_top6_gap']:.2g}, {fig['lens_min_answer_gap']:.2g}"
        if fig["logits_vs_committed"] is not None:
            line += f"; logits vs committed {fig['logits_vs_committed']:.2g}"
        if name == "headlab_tiny":
            k = fig["compose_k"]
            line += f"; K-composition 0.3 -> 1.2 {k[0, 3, 1, 2].item():.4f} (mean of layer 0 -> 1: " \
                    f"{k[0, :, 1, :].mean().item():.4f})"
        print(line)
        if args.check:
            for f in ("prompts.json", "cache.safetensors", "expected.json"):
                a = open(os.path.join(target, name, f), "rb").read()
                b_path = os.path.join(OUT, name, f)
                if not os.path.exists(b_path) or open(b_path, "rb").read() != a:
                    failed.append(f"{name}/{f}")
    if args.check:
        if failed:
            sys.exit("differs from the committed files: " + ", ".join(failed))
        print("every file is byte-identical to the committed one")


if __name__ == "__main__":
    main()
