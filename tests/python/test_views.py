"""headlab.views: each view is one snippet, `<div id=…></div><script>BUNDLE; headlabViews.render(…)</script>`,
carrying the web app's notebook build (installed with the module) and the data as it was given,
escaped so no token can end the script. tests/web/notebook_views.test.mjs draws them in Chromium."""
import json
import os
import re

import numpy as np
import pytest

import headlab
from headlab import views
from conftest import ROOT

TEXT = " the cat sat on the mat and the dog sat on the log. the cat sat on the"


def render_call(snippet):
    """(kind, data) of the snippet's headlabViews.render call."""
    m = re.search(r'\nvar id = "([\w-]+)", kind = "(\w+)";\nvar data = (.*?);\nvar script = ', snippet, re.S)
    assert m, snippet[-300:]
    assert f'<div id="{m.group(1)}"' in snippet
    return m.group(2), json.loads(m.group(3))


def script_of(snippet):
    return snippet[snippet.index("<script>") + len("<script>"): snippet.rindex("</script>")]


def test_the_installed_bundle_is_the_web_builds():
    built = os.path.join(ROOT, "web", "dist-notebook", views.BUNDLE_NAME)
    installed = os.path.join(os.path.dirname(views.__file__), views.BUNDLE_NAME)
    assert os.path.isfile(installed), "python/setup.py installs the notebook build beside views.py"
    with open(built, encoding="utf-8") as a, open(installed, encoding="utf-8") as b:
        assert a.read() == b.read()


def test_a_snippet_holds_the_bundle_once_and_the_pattern_as_given(tiny):
    _, cache = tiny.run_with_cache(TEXT, names_filter="blocks.1.attn.hook_pattern")
    pattern = cache["pattern", 1][0]  # (NH, T, T)
    tokens = tiny.to_str_tokens(TEXT)
    snippet = str(views.attention_patterns(pattern, tokens, heads=[0, 2], layer=1))
    assert snippet.count("var headlabViews=") == 1
    assert views.bundle()[0] in snippet
    kind, data = render_call(snippet)
    assert kind == "pattern"
    assert data["tokens"] == tokens
    assert [h["title"] for h in data["heads"]] == ["Head 1.0", "Head 1.2"]
    for h, fig in zip([0, 2], data["heads"]):
        assert [len(r) for r in fig["rows"]] == list(range(1, len(tokens) + 1))  # the API's ragged rows
        for q, row in enumerate(fig["rows"]):
            np.testing.assert_allclose(row, pattern[h, q, : q + 1], rtol=1e-6)


def test_a_token_holding_a_script_end_and_a_tag_stays_data():
    tokens = ["</script><b>x</b>", ' "q\'', "<!--", "a & b", "\u2028"]
    T = len(tokens)
    p = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    snippet = str(views.attention_patterns(p, tokens))
    script = script_of(snippet)
    assert "</script" not in script.lower() and "<!--" not in script and "<b>" not in script
    assert render_call(snippet)[1]["tokens"] == tokens


def test_two_snippets_have_their_own_elements():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    a, b = str(views.attention_patterns(p, ["a", "b"])), str(views.attention_patterns(p, ["a", "b"]))
    assert re.search(r'<div id="([\w-]+)"', a).group(1) != re.search(r'<div id="([\w-]+)"', b).group(1)


def test_a_pattern_with_weight_on_the_future_is_refused():
    with pytest.raises(ValueError, match="causal"):
        views.attention_patterns(np.full((2, 2), 0.5), ["a", "b"])


def test_patching_heatmap_carries_the_sweep_and_the_changed_tokens(tiny):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    r = tiny.patch(clean, corrupted, " viol", " ar", what="resid_pre")
    kind, data = render_call(str(views.patching_heatmap(r)))
    assert kind == "patching"
    np.testing.assert_allclose(np.array(data["values"]), r["values"], rtol=1e-6)
    assert (data["axes"], data["layers"], data["positions"]) == (list(r["axes"]), list(r["layers"]), list(r["positions"]))
    assert [t["text"] for t in data["tokens"]] == r["clean_tokens"]
    assert [t["id"] for t in data["corrupted_tokens"]] == list(r["corrupted_ids"])
    assert data["clean"] == pytest.approx(r["clean"]) and data["corrupted"] == pytest.approx(r["corrupted"])
    assert data["direction"] == "denoising"


def test_attribution_patching_reaches_the_view_as_estimates(tiny):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    r = tiny.patch(clean, corrupted, " viol", " ar", what="z_all_pos", method="attribution")
    kind, data = render_call(str(views.patching_heatmap(r)))
    assert (kind, data["method"], data["pairs"]) == ("patching", "attribution", 1)  # patch_summary: "first-order estimates"
    np.testing.assert_allclose(np.array(data["values"]), r["values"], rtol=1e-6)
    assert "method" not in render_call(str(views.patching_heatmap(tiny.patch(clean, corrupted, " viol", " ar"))))[1]


def test_patching_comparison_carries_the_measured_sweep_and_its_estimates(tiny):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    measured = tiny.patch(clean, corrupted, " viol", " ar", what="z_all_pos")
    estimated = tiny.patch(clean, corrupted, " viol", " ar", what="z_all_pos", method="attribution")
    kind, data = render_call(str(views.patching_comparison(measured, estimated)))
    assert kind == "patch_compare"
    assert "method" not in data["measured"] and data["estimated"]["method"] == "attribution"
    for side, r in (("measured", measured), ("estimated", estimated)):
        np.testing.assert_allclose(np.array(data[side]["values"]), r["values"], rtol=1e-6)
        assert (data[side]["what"], data[side]["metric"]) == ("z_all_pos", "logit_diff")


def test_patching_comparison_refuses_the_methods_swapped_or_two_different_sweeps(tiny):
    clean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog"
    corrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog"
    measured = tiny.patch(clean, corrupted, " viol", " ar", what="z_all_pos")
    estimated = tiny.patch(clean, corrupted, " viol", " ar", what="z_all_pos", method="attribution")
    with pytest.raises(ValueError, match="activation patching's answer, then"):
        views.patching_comparison(estimated, measured)
    other = tiny.patch(clean, corrupted, " viol", " ar", what="resid_pre", method="attribution")
    with pytest.raises(ValueError, match="not the same sweep: z_all_pos"):
        views.patching_comparison(measured, other)


def test_path_patching_nan_reaches_the_view_as_nan(tiny):
    r = tiny.path_patch(" the cat sat on the mat", " the dog sat on the mat", " mat", " on", senders="0.1")
    snippet = str(views.patching_heatmap(dict(r, what="path patching into the logits", positions=[])))
    values = np.array(render_call(snippet)[1]["values"], dtype=float)  # NaN written as JavaScript's NaN
    np.testing.assert_array_equal(np.isnan(values), np.isnan(r["values"]))


def test_lens_table_names_each_top_token_and_puts_the_asked_answer_first(tiny):
    lens = tiny.lens(TEXT, answers=[" mat", " the"], top_k=3)
    kind, data = render_call(str(views.lens_table(lens, position=-2, answer=1)))
    assert kind == "lens"
    T = len(lens["tokens"])
    assert data["pointed"] == {"layer": len(lens["labels"]) - 1, "pos": T - 2}
    got = data["lens"]
    assert got["layers"] == list(lens["labels"]) and [t["text"] for t in got["tokens"]] == lens["tokens"]
    assert [a["text"] for a in got["answers"]] == [" the", " mat"]
    for e, row in enumerate(got["values"]):
        for p, cell in enumerate(row):
            assert [t["id"] for t in cell["top"]] == list(lens["top_ids"][e, p])
            assert [t["text"] for t in cell["top"]] == [tiny.to_str_tokens([int(i)], prepend_bos=False)[0]
                                                        for i in lens["top_ids"][e, p]]
            assert cell["top"][0]["prob"] == pytest.approx(float(lens["top_probs"][e, p, 0]), rel=1e-6)
            assert [a["rank"] for a in cell["answers"]] == [int(lens["answer_rank"][e, p, 1]), int(lens["answer_rank"][e, p, 0])]


def test_without_the_build_the_views_say_how_to_make_it(monkeypatch):
    monkeypatch.setattr(views, "_BUNDLE_PATHS", ["/nonexistent/headlab_views.js"])
    monkeypatch.setattr(views, "_bundle", None)
    with pytest.raises(views.ViewsNotBuiltError, match=r"npm run build --prefix web"):
        views.attention_patterns(np.eye(1), ["a"])


def test_correlation_words_are_the_explorers_bands():
    # the file patch_compare.ts imports, installed beside views.py: one source for both sentences
    source = os.path.join(ROOT, "web", "src", "explorer", "research", "patch_compare_bands.json")
    installed = os.path.join(os.path.dirname(views.__file__), "patch_compare_bands.json")
    with open(source, encoding="utf-8") as a, open(installed, encoding="utf-8") as b:
        bands = json.load(a)
        assert json.load(b) == bands
    edges = [b["at_least"] for b in bands if b["at_least"] is not None]
    assert edges == sorted(edges, reverse=True) and bands[-1]["at_least"] is None
    for i, edge in enumerate(edges):
        assert views.correlation_words(edge) == bands[i]["words"]
        assert views.correlation_words(np.nextafter(edge, -1.0)) == bands[i + 1]["words"]
    assert views.correlation_words(-1.0) == bands[-1]["words"]
    assert views.correlation_words(float("nan")) is None
