"""Inline views for Jupyter, drawn by the explorer's own Svelte components (web/src/components,
web/src/explorer/research): each returns an HTML snippet, `<div id=…></div><script>BUNDLE;
headlabViews.render(…, data)</script>`, self-contained as CircuitsVis's are (no network): BUNDLE is
web/src/notebook built into one script (web/vite.notebook.config.ts) and installed with the module.

    headlab.views.attention_patterns(cache["pattern", 1][0], model.to_str_tokens(text))  # (NH, T, T)
    headlab.views.patching_heatmap(result)          # model.patch(...)'s answer
    headlab.views.patching_comparison(result, model.patch(..., method="attribution"))  # side by side
    headlab.views.lens_table(model.lens(text, answers=[" Mary"]))
    headlab.views.correlation_words(0.95)           # "the same cells stand out in both", as the explorer says it
"""
import hashlib as _hashlib
import json as _json
import os as _os
import re as _re
import uuid as _uuid

import numpy as _np

BUNDLE_NAME = "headlab_views.js"
_here = _os.path.dirname(_os.path.abspath(__file__))
# installed: package data beside this file (python/setup.py copies it from the web build); run from
# the checkout (python/ on sys.path): the web build itself
_BUNDLE_PATHS = [_os.path.join(_here, BUNDLE_NAME),
                 _os.path.join(_here, "..", "..", "web", "dist-notebook", BUNDLE_NAME)]
_bundle = None
# what a correlation of two patching grids says: the explorer's own bands (patch_compare.ts reads the same file)
BANDS_NAME = "patch_compare_bands.json"
_BANDS_PATHS = [_os.path.join(_here, BANDS_NAME),
                _os.path.join(_here, "..", "..", "web", "src", "explorer", "research", BANDS_NAME)]
_bands = None


class ViewsNotBuiltError(RuntimeError):
    """The explorer's components were not built into the module (web/dist-notebook/headlab_views.js)."""


def bundle():
    """The notebook build of the web app's components (its text, made safe to sit inside <script>)."""
    global _bundle
    if _bundle is None:
        path = next((p for p in _BUNDLE_PATHS if _os.path.isfile(p)), None)
        if path is None:
            raise ViewsNotBuiltError(f"headlab.views draws with the explorer's components, and {BUNDLE_NAME} is not "
                                     f"installed: run `npm run build --prefix web` in the checkout, then reinstall the "
                                     f"module (python/install.sh)")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # inside <script> the HTML parser ends at "</script" and changes state at "<!--"; both occur in the
        # bundle only inside string literals, where "<\/" and "<\!" read the same
        text = _re.sub(r"</(script)", r"<\\/\1", text, flags=_re.IGNORECASE).replace("<!--", "<\\!--")
        _bundle = (text, _hashlib.sha256(text.encode()).hexdigest()[:16])
    return _bundle


def _js_value(data):
    """data as a JavaScript literal safe inside <script>: JSON with <, >, & and the line separators
    escaped (a token "</script>" stays a string). NaN and ±Infinity are written as JavaScript's."""
    text = _json.dumps(data, ensure_ascii=False, allow_nan=True)
    for c, e in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, e)
    return text


class HTML:
    """An HTML snippet that Jupyter renders inline (_repr_html_) and str() returns."""

    def __init__(self, text):
        self.text = text

    def _repr_html_(self):
        return self.text

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<headlab.views.HTML: {len(self.text)} characters; shown inline by Jupyter>"


def render(kind, data):
    """The snippet that draws one view: kind "pattern", "patching", "patch_compare" or "lens", data in the shape
    web/src/notebook/views.ts names. The bundle rides in every snippet (a notebook's cells are
    saved and shown apart) and runs once per page: a later snippet reuses `headlabViews`. The
    element is found by its id, or as the script's neighbour while the output is not yet in the page
    (JupyterLab runs the script before attaching it), or once it is attached (the classic notebook)."""
    text, sha = bundle()
    element = "headlab-view-" + _uuid.uuid4().hex
    return HTML(f'<div id="{element}" class="headlab-view-root"></div>'
                f'<script>(function () {{\n'
                f'if (!(window.headlabViews && window.headlabViews.sha === "{sha}")) {{\n{text}\n'
                f'window.headlabViews = headlabViews; headlabViews.sha = "{sha}"; }}\n'
                f'var id = "{element}", kind = "{kind}";\n'
                f'var data = {_js_value(data)};\n'
                f'var script = document.currentScript;\n'
                f'function draw(tries) {{\n'
                f'  var near = script && script.previousElementSibling;\n'
                f'  var el = document.getElementById(id) || (near && near.id === id ? near : null);\n'
                f'  if (el) window.headlabViews.render(el, kind, data);\n'
                f'  else if (tries < 200) setTimeout(function () {{ draw(tries + 1); }}, 50);\n'
                f'}}\n'
                f'draw(0);\n'
                f'}})();</script>')


def _floats(a):
    """A numpy array as nested lists of Python floats to 7 significant digits, a float32's (NaN kept:
    the views draw it empty)."""
    return _np.char.mod("%.7g", _np.asarray(a, dtype=_np.float64)).astype(_np.float64).tolist()


def attention_patterns(pattern, tokens, heads=None, layer=None):
    """Every head's pattern (NH, T, T), query rows and key columns, as the lessons' weights grid
    (HeadPatternFigure: masked cells hatched, each cell's weight on it or under the pointer; CircuitsVis's
    attention_patterns). tokens: the T token texts (model.to_str_tokens)."""
    p = _np.asarray(pattern)
    if p.ndim == 2:
        p = p[None]
    if p.ndim != 3 or p.shape[1] != p.shape[2]:
        raise ValueError(f"attention_patterns takes (NH, T, T) or (T, T), not {p.shape}")
    if len(tokens) != p.shape[1]:
        raise ValueError(f"{len(tokens)} tokens for a pattern over {p.shape[1]} positions")
    if not _np.all(_np.isfinite(p)):
        raise ValueError("attention_patterns: the pattern holds NaN or infinite weights; a softmax's are finite")
    if _np.any(_np.triu(p, k=1) != 0):
        raise ValueError("attention_patterns draws causal patterns (the lessons' grid masks the keys after each "
                         "query), and this one has weight above the diagonal")
    heads = list(range(p.shape[0])) if heads is None else [int(h) for h in heads]
    for h in heads:  # -1 drew the last head under the label "Head -1"
        if not 0 <= h < p.shape[0]:
            raise ValueError(f"attention_patterns: head {h} is not one of the pattern's heads 0..{p.shape[0] - 1}")
    T = p.shape[1]
    figures = []
    for h in heads:
        name = f"{layer}.{h}" if layer is not None else f"{h}"
        figures.append({"title": f"Head {name}", "head": name,
                        "rows": [_floats(p[h, q, : q + 1]) for q in range(T)]})  # the API's ragged rows
    return render("pattern", {"tokens": [str(t) for t in tokens], "heads": figures})


def _tokens(texts, ids):
    return [{"id": None if ids is None else int(ids[i]), "text": str(t)} for i, t in enumerate(texts)]


def _patch_data(result, title=None):
    """model.patch's (or model.path_patch's) answer in the shape views.ts's PatchData names."""
    missing = [k for k in ("values", "axes", "metric") if k not in result]
    if missing:
        raise ValueError(f"patching_heatmap takes model.patch's (or path_patch's) answer; this one has no "
                         f"{', '.join(missing)}")
    v = _np.asarray(result["values"])
    axes = [str(a) for a in result["axes"]]
    if len(axes) != v.ndim:
        raise ValueError(f"patching_heatmap: values have {v.ndim} axes and axes names {len(axes)}: {axes}")
    data = {
        "what": str(result.get("what", "path patching")),
        "metric": str(result["metric"]),
        "direction": "noising" if result.get("noising", False) else "denoising",
        "axes": axes,
        "values": _floats(v),
        "layers": [int(x) for x in result["layers"]],
        "positions": [int(x) for x in result.get("positions", [])],
        "heads": int(result.get("heads", v.shape[-1] if "head" in axes else 0)),
        "clean": float(result["clean"]),
        "corrupted": float(result["corrupted"]),
    }
    if title is not None:
        data["title"] = str(title)
    if "clean_tokens" in result:
        data["tokens"] = _tokens(result["clean_tokens"], result.get("clean_ids"))
    if "corrupted_tokens" in result:
        data["corrupted_tokens"] = _tokens(result["corrupted_tokens"], result.get("corrupted_ids"))
    if result.get("patch_types"):
        data["patch_types"] = [str(t) for t in result["patch_types"]]
    if result.get("method") == "attribution":  # the sentence under the heatmap says they are estimates
        data["method"] = "attribution"
        data["pairs"] = int(result.get("pairs", 1))
    return data


def patching_heatmap(result, title=None):
    """A patching answer (model.patch, either method, or model.path_patch's) as the explorer's patching
    view draws it: one heatmap per panel, red where patching lowers the metric and blue where it raises
    it, the clean and corrupted metrics, and the largest effect in a sentence (said to be an estimate
    for method="attribution")."""
    return render("patching", _patch_data(result, title))


def patching_comparison(measured, estimated):
    """Attribution patching's estimates beside activation patching's measured values for the same sweep,
    as the explorer's comparison draws them: the correlation of the two grids, the cell where they differ
    most and whether their top cells agree, in sentences chosen by the numbers, then the two heatmaps side
    by side. measured: model.patch(...); estimated: the same call with method="attribution"."""
    if measured.get("method") == "attribution" or estimated.get("method") != "attribution":
        raise ValueError('patching_comparison takes activation patching\'s answer, then method="attribution"\'s '
                         f'for the same sweep (got methods {measured.get("method")!r} and {estimated.get("method")!r})')
    shapes = _np.shape(measured["values"]), _np.shape(estimated["values"])
    if (measured["what"], measured["metric"], shapes[0]) != (estimated["what"], estimated["metric"], shapes[1]):
        raise ValueError(f"patching_comparison: not the same sweep: {measured['what']}, {measured['metric']}, {shapes[0]} "
                         f"against {estimated['what']}, {estimated['metric']}, {shapes[1]}")
    return render("patch_compare", {"measured": _patch_data(measured, "Activation patching"),
                                    "estimated": _patch_data(estimated, "Attribution patching")})


def correlation_words(r):
    """What a correlation r of measured and estimated patching grids says, in the words of the explorer's
    comparison (web/src/explorer/research/patch_compare_bands.json, which its sentence reads): the first band
    whose at_least r reaches. None for a non-finite r (a grid the same in every cell)."""
    global _bands
    if _bands is None:
        path = next((p for p in _BANDS_PATHS if _os.path.isfile(p)), None)
        if path is None:
            raise ViewsNotBuiltError(f"{BANDS_NAME} (the explorer's comparison words) is not installed: reinstall the "
                                     f"module from the checkout (python/install.sh)")
        with open(path, encoding="utf-8") as f:
            _bands = _json.load(f)
    if not _np.isfinite(r):
        return None
    if not -1.0 - 1e-6 <= r <= 1.0 + 1e-6:
        raise ValueError(f"correlation_words: {r} is no correlation (one lies from -1 to 1)")
    return next(b["words"] for b in _bands if b["at_least"] is None or r >= b["at_least"])


def lens_table(lens, position=-1, answer=0):
    """The logit lens (model.lens) as the explorer's lens table: every entry (layer) by position, each
    cell the top next token and its probability; the read-out line starts at the last entry at
    `position`, with answer number `answer` (of model.lens's answers) first."""
    labels = list(lens["labels"])
    T = len(lens["tokens"])
    pos = position % T
    top_ids, top_probs, top_logits = (_np.asarray(lens[k]) for k in ("top_ids", "top_probs", "top_logits"))
    ans_rank, ans_prob = _np.asarray(lens["answer_rank"]), _np.asarray(lens["answer_prob"])
    ans_logit, ans_logprob = _np.asarray(lens["answer_logit"]), _np.asarray(lens["answer_logprob"])
    top_tokens = lens.get("top_tokens")
    A = ans_prob.shape[2]
    if A and not 0 <= answer < A:
        raise ValueError(f"lens_table: answer {answer}, and the lens has {A} answers")
    order = ([answer] + [a for a in range(A) if a != answer]) if A else []
    answer_ids = list(lens.get("answers", []))
    answer_texts = list(lens.get("answer_tokens", [f"#{i}" for i in answer_ids]))
    values = []
    for e in range(len(labels)):
        row = []
        for p in range(T):
            top = [{"id": int(top_ids[e, p, k]),
                    "text": str(top_tokens[e][p][k]) if top_tokens is not None else f"#{int(top_ids[e, p, k])}",
                    "logit": float(top_logits[e, p, k]), "prob": float(top_probs[e, p, k])}
                   for k in range(top_ids.shape[2]) if top_ids[e, p, k] >= 0]
            row.append({"top": top, "entropy": float(lens["entropy"][e, p]), "kl_final": float(lens["kl_final"][e, p]),
                        "answers": [{"id": int(answer_ids[a]) if a < len(answer_ids) else -1,
                                     "rank": int(ans_rank[e, p, a]), "logit": float(ans_logit[e, p, a]),
                                     "prob": float(ans_prob[e, p, a]), "logprob": float(ans_logprob[e, p, a])}
                                    for a in order]})
        values.append(row)
    data = {"what": "logit_lens", "axes": ["layer", "pos"], "layers": [str(x) for x in labels],
            "tokens": _tokens(lens["tokens"], lens.get("ids")),
            "answers": [{"id": int(answer_ids[a]) if a < len(answer_ids) else -1,
                         "text": str(answer_texts[a]) if a < len(answer_texts) else "?"} for a in order],
            "truncated": False, "values": values}
    return render("lens", {"lens": data, "pointed": {"layer": len(labels) - 1, "pos": pos}})
