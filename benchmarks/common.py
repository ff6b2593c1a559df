"""Shared helpers of the benchmark scripts (run from the repository root)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from gaplab.core.atomic import write_text_atomic

OUT = Path(__file__).resolve().parent / "out"


def out_dir() -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    return OUT


def clean(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.generic):
        return clean(obj.item())
    return obj


def write_json(name: str, data) -> Path:
    p = out_dir() / name
    write_text_atomic(p, json.dumps(clean(data), indent=1))
    return p


def print_json(result, out=None, default=None) -> None:
    """A benchmark's result: printed as JSON (indent 1) and, with ``out`` (a path), written there
    too (atomically). ``default``: json's fallback for values it cannot encode (e.g. ``str``)."""
    text = json.dumps(result, indent=1, default=default)
    print(text)
    if out is not None:
        write_text_atomic(Path(out), text + "\n")


def describe_root(root: str) -> dict:
    """A package root of an A/B run (a directory whose ``gaplab`` entry is a checkout): its path
    and, when the checkout is a git work tree, its commit, so a result file names what it compared."""
    checkout = (Path(root) / "gaplab").resolve()
    try:
        top, commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--show-toplevel", "HEAD"],
                                     capture_output=True, text=True, check=True).stdout.split()
    except (OSError, ValueError, subprocess.CalledProcessError):
        top = commit = None
    if top is None or Path(top).resolve() != checkout:  # not a work tree of its own (an extracted archive)
        commit = None
    return {"root": str(root), "checkout": str(checkout), "commit": commit}


def run_child(code: str, env_extra=None) -> dict:
    """Run python code in a fresh interpreter; it must print one JSON object on its last line.
    Adds the child's peak RSS (MB)."""
    env = dict(os.environ)
    if env_extra:
        env.update(env_extra)
    wrapped = code + "\nimport resource, json as _j\nprint(_j.dumps({'__rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, env=env, check=True)
    lines = [ln for ln in out.stdout.strip().splitlines() if ln.startswith("{")]
    res = json.loads(lines[-2])
    res["peak_rss_mb"] = json.loads(lines[-1])["__rss_mb"]
    return res


def gap_curves(traces, xkey):
    """Exact-gap points (x, gap) of a list of traces (gap-check records only)."""
    out = []
    for tr in traces:
        pts = [(r[xkey], r["exact_gap"]) for r in tr if r["kind"] == "gap_check" and r["exact_gap"] is not None
               and np.isfinite(r["exact_gap"])]
        out.append(np.array(pts) if pts else np.zeros((0, 2)))
    return out


def band(curves, grid):
    """Median, min and max over runs of log-interpolated gap curves on a common x grid."""
    vals = []
    for c in curves:
        if len(c) < 2:
            continue
        y = np.exp(np.interp(grid, c[:, 0], np.log(np.maximum(c[:, 1], 1e-300)), left=np.nan, right=np.nan))
        vals.append(y)
    if not vals:
        return None
    V = np.array(vals)
    with np.errstate(all="ignore"):
        return np.nanmedian(V, axis=0), np.nanmin(V, axis=0), np.nanmax(V, axis=0)


PATH_ROW_KEYS = ("lam", "passes", "cum_passes", "cum_time_s", "gap", "exact_gap", "test_error", "certified", "end")


def path_result_summary(r, method: str, cum_cpu_s=None) -> dict:
    """The per-breakpoint rows of a regularization path / grid result ``r`` (a RegPath) with
    ``cum_cpu_s`` per row when given, its best test error, and for a heuristic path the largest
    true gap and the fraction of true gaps above ε = 0.1 (over the finite ones)."""
    rows = [{k: row[k] for k in PATH_ROW_KEYS} for row in r.rows()]
    if cum_cpu_s is not None:
        for row, c in zip(rows, cum_cpu_s):
            row["cum_cpu_s"] = c
    s = {"rows": rows}
    if np.isfinite(r.column("test_error")).any():
        b = r.best("test_error")
        s["best_test_error"] = {"lam": b.lam, "test_error": b.test_error}
    if method == "heuristic_path":
        eg = r.column("exact_gap")
        fin = eg[np.isfinite(eg)]
        s["true_gap_max"] = float(fin.max()) if fin.size else None
        s["true_gap_frac_above_eps"] = float(np.mean(fin > 0.1)) if fin.size else None
    return s
