"""headlab's Python module: its numbers equal the CLI's on the same input (each calls the same
function), errors are exceptions with the engine's message, a dropped model is freed, and two
threads may call one model."""
import gc
import os
import subprocess
import threading

import numpy as np
import pytest

import headlab
from conftest import ROOT, TINY
from safetensors_read import load_file

TEXT = " the cat sat on the mat and the dog sat on the log. the cat sat on the"


def test_run_with_cache_equals_cli_cache_file(tiny, cli, tmp_path):
    out = str(tmp_path / "cache.safetensors")
    cli("cache", "--model", TINY, "--text", TEXT, "--hooks", "*", "--out", out, "--no-cache")
    expected, meta = load_file(out)
    logits, cache = tiny.run_with_cache(TEXT)
    assert sorted(cache.keys()) == sorted(expected.keys())
    for name, want in expected.items():
        got = cache[name]
        assert got.shape == want.shape, name
        np.testing.assert_array_equal(got, want, err_msg=name)  # the same pipeline: bit for bit
    assert cache.tokens == [tiny.to_tokens(TEXT)[0].tolist()]
    assert logits.shape == (1, len(cache.tokens[0]), tiny.cfg["d_vocab"])


def test_run_with_cache_logits_equal_forward(tiny):
    logits, cache = tiny.run_with_cache(TEXT, names_filter="blocks.0.attn.hook_pattern")
    np.testing.assert_array_equal(logits, tiny.forward(TEXT))
    assert list(cache.keys()) == ["blocks.0.attn.hook_pattern"]
    T = len(tiny.to_str_tokens(TEXT))
    assert cache["pattern", 0].shape == (1, tiny.cfg["n_heads"], T, T)
    np.testing.assert_allclose(cache["pattern", 0].sum(-1), 1.0, atol=1e-5)


def test_names_filter_takes_globs_lists_and_functions(tiny):
    by_glob = tiny.run_with_cache(TEXT, names_filter="blocks.*.hook_resid_pre", return_logits=False)
    by_list = tiny.run_with_cache(TEXT, names_filter=["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre"],
                                  return_logits=False)
    by_fn = tiny.run_with_cache(TEXT, names_filter=lambda n: n.endswith("hook_resid_pre"), return_logits=False)
    assert list(by_glob.keys()) == list(by_list.keys()) == list(by_fn.keys())
    for k in by_glob:
        np.testing.assert_array_equal(by_glob[k], by_fn[k])


def test_a_batch_is_right_padded_and_each_prompt_is_its_own_run(tiny):
    short, long = " the cat sat", TEXT
    logits, cache = tiny.run_with_cache([long, short], names_filter="blocks.1.hook_resid_post")
    alone_logits, alone = tiny.run_with_cache(short, names_filter="blocks.1.hook_resid_post")
    n = alone["blocks.1.hook_resid_post"].shape[1]
    np.testing.assert_array_equal(cache["blocks.1.hook_resid_post"][1, :n], alone["blocks.1.hook_resid_post"][0])
    assert not cache["blocks.1.hook_resid_post"][1, n:].any()  # padded positions hold 0
    np.testing.assert_array_equal(logits[1, :n], alone_logits[0])
    assert cache.lengths == [len(cache.tokens[0]), n]


def test_tokens_follow_the_bos_rule(tiny):
    ids = tiny.to_tokens(" the cat")
    assert ids.dtype == np.int64 and ids.shape[0] == 1
    assert ids[0, 0] == tiny.cfg["bos_token_id"]  # GPT-2 family: BOS first (TL's default_prepend_bos)
    assert tiny.to_tokens(" the cat", prepend_bos=False)[0].tolist() == ids[0, 1:].tolist()
    assert tiny.to_str_tokens(" the cat")[0] == "<|endoftext|>"
    assert tiny.to_string(ids[0, 1:]) == " the cat"
    # ids are used as given: no second BOS
    _, c1 = tiny.run_with_cache(ids, names_filter="hook_embed")
    _, c2 = tiny.run_with_cache(" the cat", names_filter="hook_embed")
    np.testing.assert_array_equal(c1["hook_embed"], c2["hook_embed"])


def test_lens_equals_cli(tiny, cli):
    want = cli.json("lens", "--model", TINY, "--text", TEXT, "--answer", " mat", "--top", "3", "--no-cache")
    got = tiny.lens(TEXT, answers=[" mat"], top_k=3)
    assert got["labels"] == want["layers"]
    for e, row in enumerate(want["values"]):
        for t, cell in enumerate(row):
            assert got["entropy"][e, t] == pytest.approx(cell["entropy"], abs=1e-3)
            assert got["kl_final"][e, t] == pytest.approx(cell["kl_final"], abs=1e-3)
            assert [int(i) for i in got["top_ids"][e, t]] == [k["id"] for k in cell["top"]]
            assert int(got["answer_rank"][e, t, 0]) == cell["answers"][0]["rank"]
            assert got["answer_logprob"][e, t, 0] == pytest.approx(cell["answers"][0]["logprob"], abs=1e-3)


def test_attribute_equals_cli(tiny, cli):
    want = cli.json("attribute", "--model", TINY, "--text", TEXT, "--answer", " mat", "--wrong", " on", "--no-cache")
    got = tiny.attribute(TEXT, " mat", " on")
    assert got["labels"] == [c["label"] for c in want["components"]]
    np.testing.assert_allclose(got["values"], want["values"], atol=1e-3)
    assert got["logit_diff"] == pytest.approx(want["logit_diff"], abs=1e-3)
    assert float(got["values"].sum()) == pytest.approx(got["logit_diff"], abs=1e-3)


def test_patch_equals_cli(tiny, cli):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    want = cli.json("patch", "--model", TINY, "--clean", clean, "--corrupted", corrupted, "--answer", " viol",
                    "--wrong", " ar", "--what", "z_all_pos", "--no-cache")
    got = tiny.patch(clean, corrupted, " viol", " ar", what="z_all_pos")
    assert got["axes"] == want["axes"] == ["layer", "head"]
    np.testing.assert_allclose(got["values"], np.array(want["values"]), atol=1e-3)
    assert got["clean"] == pytest.approx(want["clean"], abs=1e-3)
    assert got["corrupted"] == pytest.approx(want["corrupted"], abs=1e-3)


def test_patch_loss_positions_equal_cli(tiny, cli):
    # the loss over the second copy (docs/research.md, "the loss on the second copy"), as a slice,
    # a pair or the CLI's text; refused with another metric in the engine's words
    a = " close living reform today percent hands single worth"
    b = " press doubt account level threat schools former history"
    want = cli.json("patch", "--model", TINY, "--clean", a + a, "--corrupted", b + a, "--metric", "loss",
                    "--loss-positions", "9:16", "--what", "z_all_pos", "--noising", "--no-cache")
    for lp in (slice(9, 16), (9, 16), "9:16"):
        got = tiny.patch(a + a, b + a, what="z_all_pos", metric="loss", noising=True, loss_positions=lp)
        assert got["loss_positions"] == (9, 16)
        np.testing.assert_allclose(got["values"], np.array(want["values"]), atol=1e-4)
        assert got["clean"] == pytest.approx(want["clean"], abs=1e-4)
    assert tiny.patch(a + a, b + a, metric="loss", loss_positions=slice(9, None))["loss_positions"] == (9, None)
    with pytest.raises(headlab.InvalidArgumentError, match="add --metric loss"):
        tiny.patch(a + a, b + a, " close", " press", loss_positions=slice(9, 16))
    with pytest.raises(headlab.InvalidArgumentError, match="loss_positions: give slice"):
        tiny.patch(a + a, b + a, metric="loss", loss_positions=slice(9, 16, 2))


def test_path_patch_loss_positions_equal_cli(tiny, cli):
    # path patching reads the same range: each sender into the final residual, the loss over the second copy
    a = " close living reform today percent hands single worth"
    b = " press doubt account level threat schools former history"
    want = cli.json("patch", "--path", "--model", TINY, "--clean", a + a, "--corrupted", b + a, "--metric", "loss",
                    "--loss-positions", "9:16", "--no-cache")
    got = tiny.path_patch(a + a, b + a, metric="loss", loss_positions=slice(9, 16))
    assert got["loss_positions"] == (9, 16)
    np.testing.assert_allclose(got["values"], np.array(want["values"]), atol=1e-4)
    assert got["clean"] == pytest.approx(want["clean"], abs=1e-4)


def test_attribution_patch_equals_cli(tiny, cli):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    for what in ("resid_pre", "z_all_pos"):
        want = cli.json("patch", "--model", TINY, "--clean", clean, "--corrupted", corrupted, "--answer", " viol",
                        "--wrong", " ar", "--what", what, "--method", "attribution", "--no-cache")
        got = tiny.patch(clean, corrupted, " viol", " ar", what=what, method="attribution")
        assert got["method"] == want["method"] == "attribution"
        assert got["axes"] == want["axes"]
        np.testing.assert_allclose(got["values"], np.array(want["values"]), atol=1e-3)
        assert got["clean"] == pytest.approx(want["clean"], abs=1e-3)
        assert got["corrupted"] == pytest.approx(want["corrupted"], abs=1e-3)
        assert got["forwards"] == want["cost"]["forwards"] == 2  # one pair: two forwards (and a backward)
    assert tiny.patch(clean, corrupted, " viol", " ar")["method"] == "activation"


def test_attribution_patch_refuses_with_the_engines_message(tiny):
    binary = os.environ.get("HEADLAB_BIN", os.path.join(ROOT, "build", "headlab"))
    cli = subprocess.run([binary, "patch", "--model", TINY, "--clean", TEXT, "--corrupted", TEXT, "--answer", " mat",
                          "--wrong", " on", "--method", "attribution", "--layers", "7", "--no-cache"],
                         capture_output=True, text=True)
    assert cli.returncode == 2
    with pytest.raises(headlab.InvalidArgumentError) as e:
        tiny.patch(TEXT, TEXT, " mat", " on", layers=[7], method="attribution")
    assert cli.stderr.strip() == f"headlab: error: {e.value}"
    with pytest.raises(headlab.InvalidArgumentError, match='method: "gradient" is not activation or attribution'):
        tiny.patch(TEXT, TEXT, " mat", " on", method="gradient")


def test_path_patch_equals_cli(tiny, cli):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    want = cli.json("patch", "--model", TINY, "--clean", clean, "--corrupted", corrupted, "--answer", " viol",
                    "--wrong", " ar", "--path", "--receivers", "1.2:k", "--no-cache")
    got = tiny.path_patch(clean, corrupted, " viol", " ar", receivers="1.2:k")
    assert got["receivers"] == ["1.2:k"]
    np.testing.assert_allclose(got["values"], np.array(want["values"], dtype=float), atol=1e-4, equal_nan=True)
    assert got["clean"] == pytest.approx(want["clean"], abs=1e-4)


def test_composition_scores_equal_cli(tiny, cli):
    want = cli.json("compose", "--model", TINY, "--kind", "k", "--no-cache")
    got = tiny.composition_scores()
    np.testing.assert_allclose(got["k"], np.array(want["values"]), atol=1e-3)
    assert got["baseline_mean"] == pytest.approx(want["baseline"]["mean"], abs=1e-3)


def test_scan_equals_cli(tiny, cli):
    want = cli.json("scan", "--model", TINY, "--no-cache")
    got = tiny.scan()
    assert [h["name"] for h in got["heads"]] == [h["name"] for h in want["heads"]]
    for g, w in zip(got["heads"], want["heads"]):
        assert g["scores"]["induction"] == pytest.approx(w["scores"]["induction"], abs=1e-3)


def test_interventions_as_arguments_and_as_a_context_manager(tiny):
    plain = tiny.forward(TEXT)
    ablated = tiny.forward(TEXT, ablate=[(1, 0)])
    assert not np.array_equal(plain, ablated)
    with tiny.hooks(ablate=[(1, 0)]):
        np.testing.assert_array_equal(tiny.forward(TEXT), ablated)
    np.testing.assert_array_equal(tiny.forward(TEXT), plain)
    r = tiny.intervene(TEXT, ablate=[(1, 0)])
    assert r["baseline"]["loss"] != r["intervened"]["loss"]
    v = tiny.steering_vector(" cat", " dog", layer=1, coef=4.0)
    assert v["vector"].shape[-1] == tiny.cfg["d_model"]
    assert not np.array_equal(tiny.forward(TEXT, steer=[v]), plain)


def steering_of(tiny, layer=1, coef=4.0):
    C = tiny.cfg["d_model"]
    return dict(layer=layer, coef=coef, vector=np.linspace(-0.5, 0.5, C, dtype=np.float32))


def test_a_steered_cache_equals_the_clis_steered_cache_file(tiny, cli, tmp_path):
    st = steering_of(tiny)
    vector_file = str(tmp_path / "v.f32")
    st["vector"].astype("<f4").tofile(vector_file)
    out = str(tmp_path / "steered.safetensors")
    cli("cache", "--model", TINY, "--text", TEXT, "--hooks", "*", "--out", out, "--no-cache",
        "--steer", f"1:4:{vector_file}")
    expected, _ = load_file(out)
    logits, cache = tiny.run_with_cache(TEXT, steer=[st])
    assert sorted(cache.keys()) == sorted(expected.keys())
    for name, want in expected.items():
        np.testing.assert_array_equal(cache[name], want, err_msg=name)  # the same pipeline: bit for bit
    np.testing.assert_array_equal(logits, tiny.forward(TEXT, steer=[st]))  # the steered forward's (headlab run --steer)


def test_a_steered_cache_differs_from_the_plain_one_by_the_vector_at_its_layer(tiny):
    st = steering_of(tiny)
    plain = tiny.run_with_cache(TEXT, names_filter="blocks.*.hook_resid_pre", return_logits=False)
    steered = tiny.run_with_cache(TEXT, names_filter="blocks.*.hook_resid_pre", return_logits=False, steer=st)
    np.testing.assert_array_equal(steered["resid_pre", 0], plain["resid_pre", 0])  # before the steering
    np.testing.assert_array_equal(steered["resid_pre", 1], plain["resid_pre", 1] + np.float32(4.0) * st["vector"])
    with tiny.hooks(steer=[st]):
        inside = tiny.run_with_cache(TEXT, names_filter="blocks.*.hook_resid_pre", return_logits=False)
    np.testing.assert_array_equal(inside["resid_pre", 1], steered["resid_pre", 1])
    v = tiny.steering_vector(" cat", " dog", layer=1, coef=4.0)  # ActAdd's rows, as patch and forward take them
    _, actadd = tiny.run_with_cache(TEXT, names_filter="blocks.1.hook_resid_pre", steer=[v])
    assert not np.array_equal(actadd["resid_pre", 1], plain["resid_pre", 1])
    with tiny.hooks(ablate=[(1, 0)]), pytest.raises(headlab.InvalidArgumentError, match="ablate"):
        tiny.run_with_cache(TEXT)  # a head intervention run_with_cache would not apply is refused, not ignored


def test_a_nan_in_a_steering_vector_raises_the_engines_message(tiny, tmp_path):
    st = steering_of(tiny)
    st["vector"][5] = np.nan
    with pytest.raises(headlab.InvalidArgumentError) as e:
        tiny.run_with_cache(TEXT, steer=[st])
    assert isinstance(e.value, ValueError) and e.value.code == "invalid_argument"
    vector_file = str(tmp_path / "nan.f32")
    st["vector"].astype("<f4").tofile(vector_file)
    binary = os.environ.get("HEADLAB_BIN", os.path.join(ROOT, "build", "headlab"))
    r = subprocess.run([binary, "cache", "--model", TINY, "--text", TEXT, "--hooks", "hook_embed", "--no-cache",
                        "--out", str(tmp_path / "c.safetensors"), "--steer", f"1:4:{vector_file}"],
                       capture_output=True, text=True)
    # the engine's message (research/steering.cpp's check), the CLI's naming the file where Python's names the vector
    said = "value 5 is NaN; a steering vector holds finite numbers"
    assert str(e.value) == "the steering vector: " + said
    assert r.returncode == 2 and f"{vector_file}: {said}" in r.stderr, r.stderr


def test_errors_are_exceptions_with_the_engines_message(tiny):
    with pytest.raises(headlab.NotFoundError) as e:
        headlab.load(os.path.join(TINY, "no-such-model"))
    assert isinstance(e.value, FileNotFoundError) and e.value.code == "not_found"
    with pytest.raises(headlab.InvalidArgumentError, match="hook_patern") as e:
        tiny.run_with_cache(TEXT, names_filter="blocks.0.attn.hook_patern")
    assert "hook_pattern" in str(e.value)  # the close names
    assert isinstance(e.value, ValueError)
    with pytest.raises(headlab.TooLongError, match="n_ctx"):
        tiny.run_with_cache(" the" * 400)
    with pytest.raises(headlab.InvalidArgumentError, match="is 2 tokens|tokens"):
        tiny.attribute(TEXT, " mat dog")
    with pytest.raises(headlab.InvalidArgumentError, match="what"):
        tiny.patch(TEXT, TEXT, " mat", " on", what="resid_bogus")
    with pytest.raises(headlab.TooLongError, match="max_mb"):
        tiny.run_with_cache([TEXT] * 400, max_mb=1)


def test_nested_hooks_blocks_add_up_and_a_block_may_be_entered_again(tiny):
    both = tiny.forward(TEXT, ablate=[(0, 1)], uniform=[(1, 2)])
    with tiny.hooks(ablate=[(0, 1)]):
        with tiny.hooks(uniform=[(1, 2)]):
            np.testing.assert_array_equal(tiny.forward(TEXT), both)  # the outer ablation was dropped
        np.testing.assert_array_equal(tiny.forward(TEXT), tiny.forward(TEXT, ablate=[(0, 1)]))
    block = tiny.hooks(ablate=[(0, 1)])
    with block:
        first = tiny.forward(TEXT)
    with block:
        np.testing.assert_array_equal(tiny.forward(TEXT), first)
    for method in (lambda: tiny.lens(TEXT), lambda: tiny.attribute(TEXT, " the", " on"), lambda: tiny.scan()):
        with tiny.hooks(ablate=[(0, 1)]), pytest.raises(headlab.InvalidArgumentError, match="does not apply"):
            method()  # it ran as if outside the block


def test_arguments_that_would_change_the_result_silently_are_refused(tiny):
    refused = [
        (lambda: tiny.to_string("hello"), "not a str"),  # was a crash (free(): invalid pointer)
        (lambda: tiny.to_str_tokens(np.array([1.5, 2.7])), "must be integers"),  # was truncated to 1, 2
        (lambda: tiny.to_str_tokens([True, False]), "item 0 is a bool"),
        (lambda: tiny.forward(TEXT, ablate=(0, 1)), r"in a list: ablate=\[\(layer, head\)\]"),
        (lambda: tiny.forward(TEXT, ablate=[(0.9, 1)]), "whole number, not a float"),
        (lambda: tiny.forward(TEXT, steer=[dict(layer=1, vector=np.ones(tiny.cfg["d_model"]), **{"from": 5})]),
         "unknown key 'from'"),
        (lambda: tiny.forward(TEXT, steer=[dict(layer=1, vector=np.ones(tiny.cfg["d_model"]), from_=500)]),
         "would change nothing"),
        (lambda: tiny.patch(TEXT, TEXT, " mat", " on", layers=[]), "empty list"),  # was every layer
        (lambda: tiny.patch(TEXT, TEXT, " mat", " on", layers=[0, 0, 1]), "listed twice"),
        (lambda: tiny.patch(TEXT, TEXT, answer=2.7, wrong=" on"), "not a float"),
        (lambda: tiny.scan(random_probes=10 ** 6), "from 1 to 1024"),  # ran for tens of minutes
        (lambda: tiny.scan(window_length=10 ** 6), "window length"),  # was the default, silently
        (lambda: tiny.scan(repeat_length=10 ** 6), "repeat length"),  # was cut to 63, silently
        (lambda: tiny.lens([TEXT, TEXT]), "one text"),
        (lambda: headlab.load(""), "path is empty"),
    ]
    for call, says in refused:
        with pytest.raises(headlab.InvalidArgumentError, match=says):
            call()


def test_attribute_counts_a_negative_position_from_the_end_as_python_does(tiny):
    T = len(tiny.to_str_tokens(TEXT))
    assert tiny.attribute(TEXT, " the", " on", position=-2)["position"] == T - 2  # every negative was the last
    assert tiny.attribute(TEXT, " the", " on")["position"] == T - 1
    with pytest.raises(headlab.InvalidArgumentError, match="outside the input"):
        tiny.attribute(TEXT, " the", " on", position=-(T + 1))


def test_a_model_loads_once_and_is_freed_when_dropped():
    other = os.path.join(os.path.dirname(TINY), "headlab-learned")  # not the session's model
    gc.collect()
    before = headlab._headlab._sessions_alive()
    a = headlab.load(other + "/", cache=False)
    b = headlab.load(other, cache=False)
    assert a is b  # one model per process for one path
    assert headlab._headlab._sessions_alive() == before + 1
    logits, cache = a.run_with_cache(TEXT, names_filter="hook_embed")
    del a, b
    gc.collect()
    assert headlab._headlab._sessions_alive() == before  # freed with its last handle
    assert cache["hook_embed"].shape[0] == 1  # the cache's arrays own their memory, not the model
    c = headlab.load(other, cache=False)  # loads again
    assert headlab._headlab._sessions_alive() == before + 1
    del c


def test_two_threads_may_call_one_model(tiny):
    texts = [TEXT, " a b c d e f g a b c d e f g"]
    want = [tiny.run_with_cache(t, names_filter="blocks.1.attn.hook_z") for t in texts]
    got, errors = {}, []

    def work(i):
        try:
            for _ in range(5):
                got[i] = tiny.run_with_cache(texts[i], names_filter="blocks.1.attn.hook_z")
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(2):
        np.testing.assert_array_equal(got[i][0], want[i][0])
        np.testing.assert_array_equal(got[i][1]["blocks.1.attn.hook_z"], want[i][1]["blocks.1.attn.hook_z"])
