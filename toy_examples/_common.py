"""Shared helpers of the toy examples: argument checks, JSON output, matplotlib setup.

Nothing here is specific to a section of the paper.
"""
from __future__ import annotations

import json
import math
import numbers
from pathlib import Path

import numpy as np
from gaplab.core.atomic import write_text_atomic

DEFAULT_OUT_DIR = "toy_out"


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (bools and non-integral numbers rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def check_positive(name: str, value, *, allow_inf: bool = False) -> float:
    """``value`` as a float > 0 (NaN rejected; inf only with ``allow_inf``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    v = float(value)
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a {'number' if allow_inf else 'finite number'} > 0, got {value!r}")
    return v


def parse_gap_check(text) -> float:
    """``gap_check`` from a CLI string: a whole number >= 1 or inf/never."""
    if isinstance(text, str) and text.strip().lower() in ("inf", "infinity", "never", "none"):
        return math.inf
    v = float(text)
    if not (v >= 1 and (math.isinf(v) or v == int(v))):
        raise ValueError(f"gap_check must be a whole number >= 1 or inf, got {text!r}")
    return v


def gap_check_label(gc: float) -> str:
    return "inf" if math.isinf(gc) else str(int(gc))


def jsonable(obj):
    """A JSON-safe copy: numpy scalars/arrays to Python, NaN and ±inf to None."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        v = float(obj)
        return v if math.isfinite(v) else None
    return obj


def write_json(path, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(jsonable(obj), indent=2) + "\n")
    return path


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize=(6.0, 4.0)):
    """A matplotlib Figure with its axes, drawn by the Agg canvas.

    Uses ``matplotlib.figure.Figure`` directly (no pyplot, no global backend switch), so the
    toy examples can be called from the app's worker threads and from Jupyter alike.
    """
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def out_path(out_dir, name: str) -> Path:
    p = Path(out_dir)
    p.mkdir(parents=True, exist_ok=True)
    return p / name


def save_outputs(res: dict, plot, out_dir, stem: str) -> None:
    """Draw ``plot(res, path)`` to ``<out_dir>/<stem>.png``, record it in ``res["figure"]``, write
    ``res`` to ``<out_dir>/<stem>.json`` and print both paths and ``res["wall_time_s"]`` (the
    command-line ending of the toy examples)."""
    fig_path = out_path(out_dir, f"{stem}.png")
    plot(res, fig_path)
    res["figure"] = str(fig_path)
    js = write_json(out_path(out_dir, f"{stem}.json"), res)
    print(f"figure: {fig_path}\nsummary: {js}\ntotal {res['wall_time_s']:.1f} s")


def plain_log_ticks(ax, axis: str = "y") -> None:
    """Label a log axis with plain numbers (0.6, 1, 2) instead of 6×10⁻¹ (for ratio axes)."""
    from matplotlib.ticker import FuncFormatter
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(fmt)
    target.set_minor_formatter(fmt)
