"""Inline views for Jupyter: self-contained HTML snippets (no script, no network), as CircuitsVis
returns. They are a first step, drawn here in SVG: not yet the explorer's own Svelte components
(web/src/components), which would need the web app's build inside the package.

    headlab.views.attention_patterns(cache["pattern", 1][0], model.to_str_tokens(text))  # (NH, T, T)
    headlab.views.patching_heatmap(result)          # model.patch(...)'s answer
    headlab.views.lens_table(model.lens(text, answers=[" Mary"]))
"""
import html as _html

import numpy as _np


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


def _esc(s):
    return _html.escape(str(s).replace("\n", "\\n"))


def _blue(v):
    v = float(min(max(v, 0.0), 1.0))
    return f"rgb({int(255 - 200 * v)},{int(255 - 160 * v)},255)"


def _diverging(v, scale):
    t = 0.0 if scale == 0 else float(max(-1.0, min(1.0, v / scale)))
    if t >= 0:
        return f"rgb(255,{int(255 - 200 * t)},{int(255 - 200 * t)})"
    return f"rgb({int(255 + 200 * t)},{int(255 + 200 * t)},255)"


def _grid(values, rows, cols, colour, cell=14, title=""):
    """One SVG heatmap: values (len(rows), len(cols)); each cell's tooltip gives its row, column and value."""
    left = 8 + 7 * max((len(str(r)) for r in rows), default=1)
    top = 8 + 7 * max((len(str(c)) for c in cols), default=1)
    w, h = left + cell * len(cols) + 4, top + cell * len(rows) + 4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="monospace" font-size="11">']
    if title:
        out.append(f"<title>{_esc(title)}</title>")
    for j, c in enumerate(cols):
        x = left + j * cell + cell // 2
        out.append(f'<text transform="translate({x},{top - 4}) rotate(-90)">{_esc(c)}</text>')
    for i, r in enumerate(rows):
        y = top + i * cell
        out.append(f'<text x="{left - 4}" y="{y + cell - 3}" text-anchor="end">{_esc(r)}</text>')
        for j, c in enumerate(cols):
            v = values[i][j]
            out.append(f'<rect x="{left + j * cell}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{colour(v)}">'
                       f"<title>{_esc(r)} \u2192 {_esc(c)}: {float(v):.4f}</title></rect>")
    out.append("</svg>")
    return "".join(out)


def attention_patterns(pattern, tokens, heads=None, layer=None):
    """Every head's pattern (NH, T, T) as a grid per head, query rows and key columns (CircuitsVis's
    attention_patterns). tokens: the T token texts (model.to_str_tokens)."""
    p = _np.asarray(pattern)
    if p.ndim == 2:
        p = p[None]
    if p.ndim != 3 or p.shape[1] != p.shape[2]:
        raise ValueError(f"attention_patterns takes (NH, T, T) or (T, T), not {p.shape}")
    if len(tokens) != p.shape[1]:
        raise ValueError(f"{len(tokens)} tokens for a pattern over {p.shape[1]} positions")
    labels = [f"{i}:{t}" for i, t in enumerate(tokens)]
    heads = range(p.shape[0]) if heads is None else heads
    parts = ['<div class="headlab-patterns" style="display:flex;flex-wrap:wrap;gap:12px">']
    for h in heads:
        name = f"L{layer}H{h}" if layer is not None else f"head {h}"
        parts.append(f'<figure style="margin:0"><figcaption style="font:12px sans-serif">{_esc(name)}</figcaption>'
                     + _grid(p[h], labels, labels, _blue, title=name) + "</figure>")
    parts.append("</div>")
    return HTML("".join(parts))


def patching_heatmap(result, title=None):
    """An activation-patching answer (model.patch) as a heatmap over its last two axes, red where
    patching raises the metric and blue where it lowers it, with the clean and corrupted metrics."""
    v = _np.asarray(result["values"])
    axes = list(result["axes"])
    if v.ndim > 2:  # the *_every answers: one grid per patch type
        return HTML("".join(patching_heatmap(dict(result, values=v[i], axes=axes[1:]),
                                             title=f"{result['patch_types'][i]}").text for i in range(v.shape[0])))

    def labels(axis, n):
        if axis == "layer":
            return [str(x) for x in result["layers"]]
        if axis in ("pos", "dest_pos"):
            toks = result.get("clean_tokens", [])
            return [f"{p}:{toks[p]}" if p < len(toks) else str(p) for p in result["positions"]]
        return [str(i) for i in range(n)]

    rows, cols = labels(axes[0], v.shape[0]), labels(axes[1], v.shape[1])
    scale = float(_np.abs(v).max()) if v.size else 1.0
    head = (f'<div style="font:12px sans-serif">{_esc(title or result["what"])}: metric {_esc(result["metric"])}, '
            f'clean {result["clean"]:.4f}, corrupted {result["corrupted"]:.4f}; rows {_esc(axes[0])}, '
            f'columns {_esc(axes[1])}</div>')
    return HTML(head + _grid(v, rows, cols, lambda x: _diverging(x, scale), cell=18))


def lens_table(lens, position=-1, answer=0):
    """The logit lens (model.lens) at one position: each entry's top token, the answer's rank and
    probability, and the entropy, as an HTML table."""
    T = len(lens["tokens"])
    pos = position % T
    rows = []
    for e, label in enumerate(lens["labels"]):
        top = int(lens["top_ids"][e, pos, 0]) if lens["top_ids"].shape[2] else -1
        cells = [label, str(top), f"{lens['top_probs'][e, pos, 0]:.3f}" if top >= 0 else ""]
        if lens["answer_prob"].shape[2] > answer:
            p = float(lens["answer_prob"][e, pos, answer])
            cells += [str(int(lens["answer_rank"][e, pos, answer])),
                      f'<span style="background:{_blue(p)}">{p:.3f}</span>']
        cells.append(f"{lens['entropy'][e, pos]:.3f}")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    headers = ["entry", "top id", "p(top)"] + (["answer rank", "p(answer)"] if lens["answer_prob"].shape[2] > answer else []) + ["entropy"]
    return HTML(f'<div style="font:12px sans-serif">position {pos} ({_esc(lens["tokens"][pos])})</div>'
                '<table style="font:12px monospace"><tr>' + "".join(f"<th>{h}</th>" for h in headers) + "</tr>"
                + "".join(rows) + "</table>")
