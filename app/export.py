"""Export for lecturers: the current run's trace as CSV or JSON (with its settings and seed) and
every figure as PNG or SVG from visible buttons.

The trace files are made on the server from a :class:`~gaplab.app.session.Snapshot`; the
figures are rendered by the browser (BokehJS's own export, as its toolbar's save tool does),
so no webdriver is needed on the server.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re

from gaplab.core import jsonsafe

__all__ = ["TRACE_FIELDS", "trace_rows", "trace_csv", "trace_json", "figure_export_buttons",
           "figure_pane", "config_text", "EXPORT_PIXEL_RATIO", "file_stem", "FILE_STEM_JS",
           "switch_lines"]

#: CSV columns, in order (a record lacking one leaves the cell empty)
TRACE_FIELDS = ("kind", "manual", "iteration", "effective_passes", "oracle_calls", "wall_time_s",
                "heuristic_gap", "exact_gap", "primal", "dual", "cache_hits", "test_error")


def _cell(v) -> str:
    """One CSV cell: a missing value (None, NaN) is an empty cell (what spreadsheets and
    ``pandas.read_csv`` read as missing), ±inf is ``inf``/``-inf`` (Python's spelling, read back
    by ``float``; an unvisited block's ĝ = +inf is a value, not a missing one)."""
    if v is None:
        return ""
    if hasattr(v, "item") and not isinstance(v, (list, tuple, dict, str)):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def trace_rows(snap) -> list[dict]:
    """The run's records in order of oracle calls: one per pass, per periodic gap check and per
    manual exact gap pass ("manual": True)."""
    rows = [dict(r) for r in snap.trace] + [dict(r, manual=True) for r in snap.manual_checks]
    rows.sort(key=lambda r: (r.get("oracle_calls", 0), r.get("iteration", 0), bool(r.get("manual"))))
    return rows


def config_text(snap) -> str:
    """One line with the dataset, n and every setting of the run, seed included (for legends,
    file headers and titles)."""
    cfg = dict(snap.config or {})
    parts = [f"{snap.dataset}"] + ([f"n={snap.n}"] if snap.n else [])
    parts += [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(cfg.items())
              if k not in ("dataset", "speed")]
    return ", ".join(parts)


def switch_lines(snap) -> list[str]:
    """One line per setting switched mid-run with α kept (the convergence curves' switch
    marks, ``Snapshot.switches``): at which iteration and pass, from what to what."""
    out = []
    for m in getattr(snap, "switches", ()) or ():
        was = m[4] if len(m) > 4 else "the previous settings"
        out.append(f"switch at iteration {int(m[2]):,} ({float(m[0]):.2f} passes): {was} -> {m[3]}")
    return out


def trace_csv(snap) -> io.StringIO:
    """CSV of :func:`trace_rows`; the first lines (starting with ``#``) give the run's label,
    its full config, seed included (the settings in force now), and every setting switched
    mid-run with α kept (:func:`switch_lines`). A value a record lacks or that is NaN is an
    empty cell; ±inf is written ``inf``/``-inf``."""
    out = io.StringIO()
    out.write(f"# gaplab run: {snap.label}\n# config: {config_text(snap)}\n")
    for line in switch_lines(snap):
        out.write(f"# {line}\n")
    w = csv.DictWriter(out, fieldnames=TRACE_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in trace_rows(snap):
        w.writerow({k: _cell(r.get(k)) for k in TRACE_FIELDS})
    out.seek(0)
    return out


def trace_json(snap) -> io.StringIO:
    """JSON with the run's label, dataset, n, λ, config (seed included), the summary numbers of
    the status line, the trace, and the comparison runs' labels and traces. Non-finite numbers
    follow gaplab's one JSON convention (:mod:`gaplab.core.jsonsafe`: ``"inf"``, ``"nan"``;
    read back with :func:`gaplab.core.jsonsafe.decode`)."""
    doc = {
        "label": snap.label, "dataset": snap.dataset, "n": snap.n, "lam": snap.lam,
        "config": snap.config, "iteration": snap.iteration, "effective_passes": snap.effective_passes,
        "oracle_calls": snap.oracle_calls, "heuristic_gap": snap.heuristic_gap,
        "exact_gap": snap.exact_gap, "trace": trace_rows(snap),
        "comparison": [{"label": r.label, "dataset": r.dataset, "trace": list(r.trace),
                        "manual_checks": list(r.manual_checks)} for r in snap.comparison],
    }
    out = io.StringIO(json.dumps(jsonsafe.encode(doc), indent=1, allow_nan=False))
    out.seek(0)
    return out


#: longest file stem (characters) of an exported figure
FILE_STEM_MAX = 80

#: the JS function (title → file stem) the export buttons use; :func:`file_stem` is the same rule
FILE_STEM_JS = """(title) => {
    const tokens = String(title).replace(/([0-9]),(?=[0-9])/g, "$1").replace(/\\s*=\\s*/g, "=")
        .split(/[^A-Za-z0-9.=]+/).map((t) => t.replace(/^[.=]+|[.=]+$/g, "").replace(/=/g, "_"))
        .filter((t) => t.length > 0);
    let out = "";
    for (const t of tokens) {
        const next = out ? out + "_" + t : t;
        if (out && next.length > %d) { break; }
        out = next;
    }
    return out || "gaplab_figure";
}""" % FILE_STEM_MAX


def file_stem(title: str) -> str:
    """The file stem of an exported figure: the title's ASCII words and numbers joined by "_"
    (thousands separators dropped, decimal points kept, "n = 626" one token ``n_626``), whole
    tokens only up to
    :data:`FILE_STEM_MAX` characters (never cut inside a token); "gaplab_figure" if empty."""
    text = re.sub(r"\s*=\s*", "=", re.sub(r"([0-9]),(?=[0-9])", r"\1", str(title)))
    tokens = [t.strip(".=").replace("=", "_") for t in re.split(r"[^A-Za-z0-9.=]+", text)]
    out = ""
    for t in (t for t in tokens if t):
        nxt = f"{out}_{t}" if out else t
        if out and len(nxt) > FILE_STEM_MAX:
            break
        out = nxt
    return out or "gaplab_figure"


#: pixel ratio of a PNG export: a 3× image stays sharp on a slide projected at 4K
EXPORT_PIXEL_RATIO = 3

# BokehJS renders a view's export into a new canvas layer whose pixel ratio is read from
# ``devicePixelRatio`` when the layer is made (CanvasLayer with hidpi): that global is set to
# ``ratio`` for the synchronous export call only, then restored, so a PNG has ``ratio`` image
# pixels per CSS pixel whatever the screen. The view is the figure's (``fig``), or, for figures
# built by HoloViews, the layout view whose model carries the CSS class ``target`` (all its
# plots composited).
_EXPORT_JS = """
let view = null;
if (fig != null) {
    view = Bokeh.index.find_one(fig);
} else {
    view = Bokeh.index.query_one((v) => v.model != null && Array.isArray(v.model.css_classes)
                                 && v.model.css_classes.includes(target));
}
if (view == null) { return; }
const own = Object.getOwnPropertyDescriptor(window, "devicePixelRatio");
let layer;
try {
    if (kind === "png") {
        Object.defineProperty(window, "devicePixelRatio", {value: ratio, configurable: true, writable: true});
    }
    layer = view.export(kind, true);
} finally {
    if (kind === "png") {
        if (own !== undefined) { Object.defineProperty(window, "devicePixelRatio", own); }
        else { delete window.devicePixelRatio; }
    }
}
const title = (fig != null && fig.title && fig.title.text) ? fig.title.text : stem;
const name = (FILE_STEM)(title);
layer.to_blob().then((blob) => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name + (kind === "svg" ? ".svg" : ".png");
    a.target = "_blank";
    a.dispatchEvent(new MouseEvent("click"));
});
"""


def figure_export_buttons(fig=None, css: str = "", *, target: str = "", stem: str = "gaplab_figure",
                          ratio: int = EXPORT_PIXEL_RATIO):
    """A row of two small buttons, PNG and SVG, that download a figure as the browser renders it
    (file named after the figure's title, else ``stem``).

    Parameters
    ----------
    fig : bokeh.models.Plot, optional
        The figure. Without it, ``target`` names the CSS class of the layout to export (a
        HoloViews pane: every plot in it, composited).
    css : str
        An extra CSS class of both buttons.
    target : str
        CSS class of the pane to export when ``fig`` is None.
    stem : str
        File name (without suffix) when the figure has no title.
    ratio : int
        Image pixels per CSS pixel of the PNG (2 or 3; default :data:`EXPORT_PIXEL_RATIO`).

    Raises
    ------
    ValueError
        If neither ``fig`` nor ``target`` is given, or ``ratio`` is not 2 or 3.
    """
    import panel as pn

    if fig is None and not target:
        raise ValueError("figure_export_buttons needs a figure (fig) or a pane's CSS class (target)")
    if isinstance(ratio, bool) or ratio not in (2, 3):
        raise ValueError(f"ratio must be 2 or 3 (image pixels per CSS pixel), got {ratio!r}")
    row = []
    for kind in ("png", "svg"):
        b = pn.widgets.Button(label=kind.upper(), width=52, height=26, color="light",
                              margin=(0, 2), css_classes=[f"gaplab-export-{kind}"] + ([css] if css else []),
                              description=(f"Download this figure as PNG ({ratio}× pixel ratio)" if kind == "png"
                                           else "Download this figure as SVG (vector)"))
        b.js_on_click(args={"fig": fig, "kind": kind, "target": target, "stem": stem, "ratio": ratio},
                      code=_EXPORT_JS.replace("FILE_STEM", FILE_STEM_JS))
        row.append(b)
    return pn.Row(*row, margin=(0, 10), align="end")


def figure_pane(fig, **pane_kw):
    """A Bokeh figure with its PNG / SVG export buttons above it (right-aligned): the one way
    every tab shows a figure. ``pane_kw`` go to ``pn.pane.Bokeh`` (default: stretch width);
    hide or show the returned column, not the pane inside it."""
    import panel as pn

    pane_kw.setdefault("sizing_mode", "stretch_width")
    pane = pn.pane.Bokeh(fig, **pane_kw)
    if pane_kw["sizing_mode"] == "stretch_width":
        bar = pn.Row(pn.layout.HSpacer(), figure_export_buttons(fig), sizing_mode="stretch_width",
                     height=28, margin=0)
        return pn.Column(bar, pane, sizing_mode="stretch_width", margin=0)
    return pn.Column(pn.Row(figure_export_buttons(fig), height=28, margin=0), pane, margin=0)
