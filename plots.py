"""The paper's comparison figures as HoloViews objects, built from a sweep store
(:mod:`gaplab.core.sweep`).

- :func:`convergence` — duality gap against effective passes or time, median with min–max band
  over seeds, one panel per dataset × λ (Paper: Fig. 3, 5, 6);
  :func:`comparison` — the passes row above the time row.
- :func:`kappa_study` — regularization paths with different κ: cumulative effective passes and
  the duality gap at the breakpoints against λ (Paper: Fig. 7).
- :func:`path_vs_grid` — ε-path / heuristic path vs grid search: cumulative time and passes
  against λ (Paper: Fig. 4, 8).
- :func:`figure` picks what a store holds; :func:`save` writes PNG/SVG (matplotlib backend) or
  HTML (bokeh backend).

Every function returns HoloViews objects (``hv.Layout`` of ``hv.Overlay`` panels holding
``hv.Area`` bands, group "Band", and ``hv.Curve`` medians, group "Median"); they compose and
overlay in a notebook like any other. Styling is set for both the bokeh and the matplotlib
backend.

    from gaplab import plots
    fig = plots.comparison("store/")          # hv.Layout
    plots.save(fig, "fig.png")
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["convergence", "comparison", "kappa_study", "path_vs_grid", "figure", "save", "check_figure_path", "band",
           "method_color", "X_AXES"]

X_AXES = {"passes": ("effective_passes", "effective passes"), "time": ("wall_time_s", "time (s)")}
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f")
GAP_DIM = "duality gap"


def _hv():
    import holoviews as hv
    # register both plotting backends (no notebook output is set up)
    import holoviews.plotting.bokeh  # noqa: F401
    import holoviews.plotting.mpl  # noqa: F401
    return hv


def _store(store):
    from .core.sweep import Store
    return store if isinstance(store, Store) else Store(store)


def method_color(methods, name) -> str:
    """A stable colour per key (its index in the sorted keys)."""
    ordered = sorted(set(methods))
    return PALETTE[ordered.index(name) % len(PALETTE)]


def _colour_key(cfg: dict) -> str:
    """Methods that differ only in the cache share a colour (the cached one is dashed), as in
    the paper's figures; path/grid methods get one colour each."""
    if cfg.get("kind", "solve") != "solve":
        return cfg["method"]
    return f"{cfg['sampling']}/{cfg['step']}/{cfg.get('gap_power')}/{cfg.get('batch_step')}"


def _colours(cfgs: dict) -> dict:
    """method -> colour for the run configs {run_id: cfg}."""
    keys = {c["method"]: _colour_key(c) for c in cfgs.values()}
    return {m: method_color(keys.values(), k) for m, k in keys.items()}


def _legend_on(panels, index):
    """Show the legend on one panel only, outside it on the right."""
    out = []
    for j, p in enumerate(panels):
        on = j == index
        p = p.opts(show_legend=on, backend="bokeh").opts(show_legend=on, backend="matplotlib")
        out.append(p)
    return out


def band(curves, n_grid: int = 200, *, logy: bool = True, grid=None):
    """Median and min–max band of several curves on a common grid.

    Parameters
    ----------
    curves : list of (x, y) arrays
        One curve per seed (x increasing). Each is interpolated linearly (in log10 y if
        ``logy``) inside its own x range only.
    n_grid : int
        Points of the common grid over the x range that every curve covers (from the largest
        first x to the smallest last x; the union of the ranges if they do not overlap).

    Returns
    -------
    (grid, median, lo, hi, count) : arrays of float64, shape (m,)
        Grid points covered by at least one curve; ``count`` curves cover each point.
        None when no curve has two points.
    """
    cs = []
    for x, y in curves:
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y) & ((y > 0) if logy else True)
        x, y = x[ok], y[ok]
        if len(x) >= 1:
            order = np.argsort(x, kind="stable")
            cs.append((x[order], np.log10(y[order]) if logy else y[order]))
    if not cs:
        return None
    if grid is None:
        # the x range every curve covers; if there is none (e.g. short runs on a time axis that
        # do not overlap), the union, where each point uses the curves that cover it
        lo, hi = max(c[0][0] for c in cs), min(c[0][-1] for c in cs)
        if not hi > lo:
            lo, hi = min(c[0][0] for c in cs), max(c[0][-1] for c in cs)
        grid = np.linspace(lo, hi, n_grid) if hi > lo else np.array([lo])
    vals = np.full((len(cs), len(grid)), np.nan)
    for j, (x, y) in enumerate(cs):
        inside = (grid >= x[0]) & (grid <= x[-1])
        vals[j, inside] = np.interp(grid[inside], x, y)
    count = np.sum(np.isfinite(vals), axis=0)
    keep = count > 0
    if not keep.any():
        return None
    v = vals[:, keep]
    with np.errstate(all="ignore"):
        med, mn, mx = np.nanmedian(v, axis=0), np.nanmin(v, axis=0), np.nanmax(v, axis=0)
    if logy:
        med, mn, mx = 10.0 ** med, 10.0 ** mn, 10.0 ** mx
    return grid[keep], med, mn, mx, count[keep]


def _describe(cfg: dict, seeds) -> str:
    parts = [f"kind={cfg.get('kind', 'solve')}", f"sampling={cfg.get('sampling')}", f"step={cfg.get('step')}"]
    cache = cfg.get("cache") or {}
    parts.append(f"cache={'on (F=%g, nu=%g, size=%d)' % (cache['factor'], cache['nu'], cache['size']) if cache.get('enabled') else 'off'}")
    for k in ("gap_power", "kappa", "eps", "heuristic", "warm_start", "gap_check", "max_passes", "time_limit"):
        if k in cfg and cfg[k] is not None:
            parts.append(f"{k}={cfg[k]}")
    parts.append(f"seeds={','.join(str(s) for s in sorted(seeds))}")
    return ", ".join(parts)


def _style(el, color, dashed=False, area=False):
    if area:
        el = el.opts(color=color, fill_alpha=0.18, line_alpha=0, backend="bokeh")
        return el.opts(color=color, alpha=0.18, linewidth=0, backend="matplotlib")
    el = el.opts(color=color, line_width=2, line_dash="dashed" if dashed else "solid", tools=["hover"],
                 backend="bokeh")
    return el.opts(color=color, linewidth=1.8, linestyle="--" if dashed else "-", backend="matplotlib")


def _panel_opts(ov, title, xlabel, ylabel, logy=True, logx=False, width=420, height=320, legend=True):
    ov = ov.opts(title=title, backend="bokeh")
    ov = ov.opts(title=title, backend="matplotlib")
    common = dict(logy=logy, logx=logx, xlabel=xlabel, ylabel=ylabel, show_grid=True)
    ov = ov.opts(width=width, height=height, legend_position="right", show_legend=legend, **common,
                 backend="bokeh")
    return ov.opts(fig_inches=(4.2, 3.2), legend_position="right", show_legend=legend, **common,
                   backend="matplotlib")


def _layout(hv, panels, cols):
    lay = hv.Layout(panels).cols(cols)
    return lay.opts(sublabel_format="", vspace=0.6, hspace=0.35, backend="matplotlib")


def _method_curves(hv, groups, xdim, ydim, xlabel, colors, n_grid, logy, run_cfgs, hover_x=None):
    """Band + median elements for each method: groups = {method: [(x, y, seed, run_id), ...]}."""
    elements = []
    for method in sorted(groups):
        runs = groups[method]
        b = band([(x, y) for x, y, _, _ in runs], n_grid, logy=logy)
        if b is None:
            continue
        grid, med, lo, hi, count = b
        cfg = run_cfgs[runs[0][3]]
        label = cfg.get("label", method)
        config = _describe(cfg, [s for _, _, s, _ in runs])
        dashed = bool((cfg.get("cache") or {}).get("enabled"))
        c = colors[method]
        area = hv.Area((grid, lo, hi), kdims=[hv.Dimension(xdim, label=xlabel)],
                       vdims=[hv.Dimension(ydim), hv.Dimension(f"{ydim}_max")], group="Band", label=label)
        curve = hv.Curve({xdim: grid, ydim: med, "runs": count, "method": np.full(len(grid), label, dtype=object),
                          "config": np.full(len(grid), config, dtype=object)},
                         kdims=[hv.Dimension(xdim, label=xlabel)], vdims=[ydim, "runs", "method", "config"],
                         group="Median", label=label)
        elements += [_style(area, c, area=True), _style(curve, c, dashed=dashed)]
    return elements


def _lam_key(label: str):
    try:
        return (0, -float(label))
    except ValueError:
        return (1, label)


def _select(df, column, values):
    if values is None:
        return df
    values = [values] if isinstance(values, (str, int, float)) else list(values)
    if column == "lam_label":
        values = [str(float(v)) if not (isinstance(v, str) and v == "1/n") else v for v in values]
    known = sorted(df[column].unique().tolist()) if len(df) else []
    unknown = [v for v in values if v not in known]
    if unknown:
        raise ValueError(f"{column.replace('_label', '')}: {unknown!r} not in the store (it has {known!r})")
    return df[df[column].isin(values)]


def convergence(store, *, x: str = "passes", y: str = "exact_gap", datasets=None, lams=None, methods=None,
                n_grid: int = 200, cols: int | None = None, width: int = 420, height: int = 320):
    """Duality gap against effective passes or time: one panel per dataset × λ, one median curve
    with a min–max band over seeds per method (Paper: Fig. 3, 5, 6).

    Parameters
    ----------
    store : Store or path
    x : {"passes", "time"}
        Effective passes (oracle calls / n, gap passes included) or solver seconds.
    y : str
        A trace column: "exact_gap" (at gap checks, the paper's curves), "heuristic_gap", "primal",
        "dual" or "test_error".
    datasets, lams, methods : optional selections (names as in the spec; λ as numbers or "1/n").
    n_grid : int
        Grid points of the median/band per panel.

    Returns
    -------
    hv.Layout
        Panels (hv.Overlay) titled "DATASET, λ = LAM", each with an hv.Area (group "Band") and an
        hv.Curve (group "Median") per method; hover on a curve shows the method's config.
    """
    hv = _hv()
    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}, got {x!r}")
    xcol, xlabel = X_AXES[x]
    st = _store(store)
    df = st.traces(kinds=("solve",))
    if df.empty:
        raise ValueError(f"store {str(st.path)!r} has no finished solve runs to plot")
    if y not in df.columns:
        raise ValueError(f"y must be a trace column ({', '.join(c for c in ('exact_gap', 'heuristic_gap', 'primal', 'dual', 'test_error'))}), got {y!r}")
    df = _select(_select(_select(df, "dataset", datasets), "lam_label", lams), "method", methods)
    if y == "exact_gap" or y == "test_error":
        df = df[df["kind"] == "gap_check"]
    elif y == "heuristic_gap":
        df = df[df["kind"] == "pass"]
    cfgs = {rid: st.config(rid) for rid in df["run_id"].unique()}
    colors = _colours(cfgs)
    logy = y in ("exact_gap", "heuristic_gap")
    ylabel = {"exact_gap": GAP_DIM, "heuristic_gap": "heuristic gap (stale)"}.get(y, y.replace("_", " "))
    panels = []
    for ds in sorted(df["dataset"].unique()):
        dsub = df[df["dataset"] == ds]
        for lam in sorted(dsub["lam_label"].unique(), key=_lam_key):
            sub = dsub[dsub["lam_label"] == lam]
            groups = {}
            for (m, rid), r in sub.groupby(["method", "run_id"], sort=True):
                r = r.sort_values(xcol, kind="stable")
                groups.setdefault(m, []).append((r[xcol].to_numpy(), r[y].to_numpy(), int(r["seed"].iloc[0]), rid))
            els = _method_curves(hv, groups, xcol, y, xlabel, colors, n_grid, logy, cfgs)
            title = f"{ds}, λ = {lam}"
            panels.append(_panel_opts(hv.Overlay(els, label=title), title, xlabel, ylabel, logy=logy,
                                      width=width, height=height, legend=not panels))
    if not panels:
        raise ValueError("nothing to plot for this selection")
    cols = cols or min(len(panels), 4)
    return _layout(hv, _legend_on(panels, min(len(panels), cols) - 1), cols)


def comparison(store, *, datasets=None, lams=None, methods=None, n_grid: int = 200, **kw):
    """The paper's comparison layout: gap against effective passes (first row) and against time
    (second row), one column per dataset × λ (a single dataset × λ: the two panels side by side)."""
    hv = _hv()
    a = convergence(store, x="passes", datasets=datasets, lams=lams, methods=methods, n_grid=n_grid, **kw)
    b = convergence(store, x="time", datasets=datasets, lams=lams, methods=methods, n_grid=n_grid, **kw)
    cols = len(a) if len(a) > 1 else 2
    return _layout(hv, _legend_on(list(a) + list(b), cols - 1), cols)


def _path_panels(st, kinds, rows, title_suffix, datasets=None, methods=None, n_grid=200, width=420, height=320):
    hv = _hv()
    df = st.traces(kinds=kinds)
    if df.empty:
        raise ValueError(f"store {str(st.path)!r} has no finished {' or '.join(kinds)} runs to plot")
    df = _select(_select(df, "dataset", datasets), "method", methods)
    df = df[np.isfinite(df["point_lam"] if "point_lam" in df else df["lam"])]
    lamcol = "point_lam" if "point_lam" in df else "lam"
    cfgs = {rid: st.config(rid) for rid in df["run_id"].unique()}
    colors = _colours(cfgs)
    panels = []
    for ycol, ylabel, logy in rows:
        for ds in sorted(df["dataset"].unique()):
            sub = df[df["dataset"] == ds]
            groups = {}
            for (m, rid), r in sub.groupby(["method", "run_id"], sort=True):
                xv = np.log10(r[lamcol].to_numpy(dtype=np.float64))
                groups.setdefault(m, []).append((xv, r[ycol].to_numpy(dtype=np.float64), int(r["seed"].iloc[0]), rid))
            els = _method_curves(hv, groups, "log10_lam", ycol, "log10 λ", colors, n_grid, logy, cfgs)
            title = f"{ds}{title_suffix}"
            panels.append(_panel_opts(hv.Overlay(els, label=title), title, "log10 λ", ylabel, logy=logy,
                                      width=width, height=height, legend=not panels))
    cols = len(df["dataset"].unique())
    return _layout(hv, _legend_on(panels, cols - 1), cols)


def kappa_study(store, *, datasets=None, methods=None, n_grid: int = 200, **kw):
    """Regularization paths with different κ (Paper: Fig. 7): cumulative effective passes (first
    row) and the duality gap at the breakpoints (second row; the exact gap, also of heuristic
    paths run with ``true_gaps``) against log10 λ, median and min–max over seeds per method."""
    st = _store(store)
    return _path_panels(st, ("path",), [("cum_passes", "cumulative effective passes", False),
                                        ("exact_gap", GAP_DIM, True)], " (κ study)", datasets, methods, n_grid, **kw)


def path_vs_grid(store, *, datasets=None, methods=None, n_grid: int = 200, **kw):
    """Regularization path against grid search (Paper: Fig. 4, 8): cumulative time (first row)
    and cumulative effective passes (second row) against log10 λ."""
    st = _store(store)
    return _path_panels(st, ("path", "grid"), [("cum_time_s", "cumulative time (s)", False),
                                               ("cum_passes", "cumulative effective passes", False)],
                        " (path vs grid)", datasets, methods, n_grid, **kw)


FIGURES = {"comparison": comparison, "convergence": convergence, "kappa": kappa_study, "path-grid": path_vs_grid}


def figure(store, kind: str = "auto", **kw):
    """The figure of a store: ``kind`` is "comparison" (gap vs passes and time), "convergence"
    (pass ``x=``), "kappa", "path-grid", or "auto" (comparison for solve runs, then the
    path-vs-grid figure if the store has path and grid runs, else the κ study for path runs)."""
    st = _store(store)
    if kind != "auto":
        if kind not in FIGURES:
            raise ValueError(f"figure kind must be one of auto, {', '.join(FIGURES)}; got {kind!r}")
        return FIGURES[kind](st, **kw)
    kinds = {e["config"]["kind"] for e in st.manifest["runs"].values() if e["status"] == "done"}
    if "solve" in kinds:
        return comparison(st, **kw)
    if "path" in kinds and "grid" in kinds:
        return path_vs_grid(st, **kw)
    if "path" in kinds:
        return kappa_study(st, **kw)
    raise ValueError(f"store {str(st.path)!r} has no finished runs to plot")


def check_figure_path(out) -> Path:
    """Check, before any work, that a figure can be written to ``out``: a .png, .svg or .html
    name in a writable directory (created if missing). Returns it as a Path.

    Raises
    ------
    ValueError
        (:class:`gaplab.core.atomic.OutputPathError`) naming ``--out`` and the problem.
    """
    from gaplab.core.atomic import OutputPathError, check_output_path
    out = Path(out).expanduser()
    ext = out.suffix.lower().lstrip(".")
    if ext not in ("png", "svg", "html"):
        raise OutputPathError(f"--out must end in .png, .svg or .html, got {str(out)!r}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"--out {str(out)!r}: cannot create the directory {str(out.parent)!r} "
                              f"({exc.strerror or exc})") from None
    return check_output_path(out, "--out")


def save(obj, out) -> Path:
    """Write a HoloViews object to PNG or SVG (matplotlib backend) or HTML (bokeh backend);
    the format comes from the file name. Returns the path.

    The file is written atomically: HoloViews writes a temporary file in the same directory,
    which is fsync'ed and moved over ``out`` (``os.replace``), so a failed write (disk full,
    Ctrl-C) leaves a previous figure intact and no partial file."""
    from gaplab.core.atomic import atomic_path
    hv = _hv()
    out = check_figure_path(out)
    ext = out.suffix.lower().lstrip(".")
    with atomic_path(out, suffix=f".tmp.{ext}") as tmp:
        if ext == "html":
            hv.save(obj, tmp, backend="bokeh", fmt="html", resources="inline")
        else:
            import matplotlib
            if matplotlib.get_backend().lower() not in ("agg", "svg", "pdf"):
                matplotlib.use("Agg")
            hv.save(obj, tmp, backend="matplotlib", fmt=ext, **({"dpi": 110} if ext == "png" else {}))
    return out
