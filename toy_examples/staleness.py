"""Exploitation vs staleness of gap sampling on OCR-small (Fig. 1a, 1b).

Gap sampling uses stale block-gap estimates; an exact gap pass every ``gap_check`` passes
refreshes them at the price of n oracle calls. We run gap sampling with gap_check ∈ {1, 5, 10,
100, ∞} and uniform sampling, and record after every pass of n block steps the exact duality
gap (observed without side effects) and the heuristic gap (the sum of the stale estimates).

Run ``python -m gaplab.toy_examples.staleness`` (about 20 s); it writes ``staleness.png`` and
``staleness.json`` in ``--out-dir``.

Paper: Sec. 3.1, "Exploitation versus staleness trade-off" and Fig. 1a/1b. The paper does not
state λ for Fig. 1; we use λ = 0.001, the λ of its main OCR experiment (Fig. 3a, OCR-large).
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from gaplab.core.atomic import save_figure

from ._common import (DEFAULT_OUT_DIR, check_int, check_positive, gap_check_label, new_figure,
                      parse_gap_check, plain_log_ticks, save_outputs)

__all__ = ["DEFAULT_GAP_CHECKS", "run_staleness", "plot_staleness", "main"]

DEFAULT_GAP_CHECKS = (1, 5, 10, 100, math.inf)
DEFAULT_LAM = 0.001
DEFAULT_PASSES = 150


def _ocr_small_model():
    from gaplab.core import ChainModel, load_ocr
    train, _ = load_ocr("small")
    return ChainModel(train)


def _label(sampling, gc):
    return "Uniform" if sampling == "uniform" else f"Gap {gap_check_label(gc).replace('inf', 'Inf')}"


def _record_run(model, lam, sampling, gc, passes, seed):
    from gaplab.core import Solver
    n = model.arrays.n
    s = Solver(model, lam=lam, sampling=sampling, gap_check=gc, seed=seed, max_passes=passes)
    ep, ex, heur, checks = [], [], [], []
    t0 = time.perf_counter()
    n_trace = 0
    while s.effective_passes < passes:
        s.steps(n)
        tr = s.trace()[n_trace:]
        n_trace += len(tr)
        fresh = [r for r in tr if r["kind"] == "gap_check" and r["iteration"] == s.iteration]
        if fresh:  # a gap check just ran at this iterate: its exact gap is the one we want
            g = fresh[-1]["exact_gap"]
            checks.append(s.effective_passes)
        else:
            g = s.exact_gap(count=False).gap
        ep.append(s.effective_passes)
        ex.append(g)
        heur.append(s.heuristic_gap)
    ex_a, h_a = np.asarray(ex), np.asarray(heur)
    ratio = np.where(np.isfinite(h_a) & (ex_a > 0), h_a / np.where(ex_a > 0, ex_a, 1.0), np.nan)
    return {
        "label": _label(sampling, gc), "sampling": sampling, "gap_check": gap_check_label(gc),
        "effective_passes": ep, "exact_gap": ex, "heuristic_gap": heur, "ratio": ratio.tolist(),
        "gap_check_at": checks, "oracle_calls": s.oracle_calls, "steps": s.iteration,
        "final_exact_gap": ex[-1], "final_ratio": float(ratio[-1]),
        "min_ratio": float(np.nanmin(ratio)) if np.any(np.isfinite(ratio)) else None,
        "wall_time_s": time.perf_counter() - t0,
    }


def _passes_to(run, target):
    for p, g in zip(run["effective_passes"], run["exact_gap"]):
        if g <= target:
            return p
    return None


def run_staleness(lam: float = DEFAULT_LAM, passes: float = DEFAULT_PASSES, gap_checks=DEFAULT_GAP_CHECKS,
                  seed: int = 0, *, include_uniform: bool = True, model=None, progress=None) -> dict:
    """Gap sampling with several gap-check frequencies against uniform sampling on OCR-small.

    After every pass of n block steps: the effective passes (oracle calls / n, gap passes
    included), the exact duality gap (``Solver.exact_gap(count=False)``, or the gap check's own
    value when one just ran) and the heuristic gap Σ_i g_i^(k_i) of the stale estimates.

    Paper: Sec. 3.1 ("Exploitation versus staleness trade-off"), Fig. 1a (gap vs effective
    passes) and Fig. 1b (ratio heuristic/exact gap).

    Parameters
    ----------
    lam : float
        Regularization λ (default 0.001 as in the paper's Fig. 3a; Fig. 1 does not state it).
    passes : float
        Budget of effective passes per run (gap passes included; default 150 so that
        gap_check = 100 makes one check).
    gap_checks : sequence of float
        gap_check values of the gap-sampling runs (inf: never).
    seed : int
        Solver seed.
    include_uniform : bool
        Add the uniform-sampling baseline (BCFW, no gap passes).
    model : ChainModel, optional
        Defaults to OCR-small's training set.
    progress : callable(str), optional

    Returns
    -------
    dict
        ``runs`` (label, curves ``effective_passes``/``exact_gap``/``heuristic_gap``/
        ``ratio``, ``gap_check_at``, final values, ``passes_to_gap`` for a few targets),
        ``settings``, ``wall_time_s``.
    """
    lam = check_positive("lam", lam)
    passes = check_positive("passes", passes)
    seed = check_int("seed", seed, 0)
    gcs = [parse_gap_check(g) for g in gap_checks]
    t0 = time.perf_counter()
    model = _ocr_small_model() if model is None else model
    configs = ([("uniform", math.inf)] if include_uniform else []) + [("gap", g) for g in gcs]
    runs = []
    for sampling, gc in configs:
        r = _record_run(model, lam, sampling, gc, passes, seed)
        runs.append(r)
        if progress is not None:
            progress(f"{r['label']:<8} final gap {r['final_exact_gap']:.3e}  heuristic/exact {r['final_ratio']:.3g}"
                     f"  ({r['wall_time_s']:.1f}s)")
    g0 = max(r["exact_gap"][0] for r in runs)
    targets = [g0 * f for f in (1e-1, 3e-2, 1e-2)]
    for r in runs:
        r["passes_to_gap"] = {f"{t:.3g}": _passes_to(r, t) for t in targets}
    return {"runs": runs,
            "settings": {"dataset": "ocr-small", "n": model.arrays.n, "lam": lam, "passes": passes,
                         "gap_checks": [gap_check_label(g) for g in gcs], "seed": seed},
            "wall_time_s": time.perf_counter() - t0}


def plot_staleness(result: dict, path=None):
    """Fig. 1a (exact duality gap vs effective passes) and Fig. 1b (heuristic/exact gap).

    Paper: Fig. 1a, 1b.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = new_figure(1, 2, figsize=(11.0, 4.2))
    ax, bx = axes[0]
    colors = {"Uniform": "k", "Gap 1": "C0", "Gap 5": "C1", "Gap 10": "C2", "Gap 100": "C3", "Gap Inf": "C4"}
    for j, r in enumerate(result["runs"]):
        c = colors.get(r["label"], f"C{5 + j}")
        ls = "--" if r["sampling"] == "uniform" else "-"
        ax.plot(r["effective_passes"], r["exact_gap"], ls, color=c, lw=1.4, label=r["label"])
        ratio = np.asarray([np.nan if v is None else v for v in r["ratio"]], dtype=float)
        bx.plot(r["effective_passes"], ratio, ls, color=c, lw=1.4, label=r["label"])
    st = result["settings"]
    ax.set_yscale("log")
    ax.set_xlabel("effective passes (oracle calls / n, gap passes included)")
    ax.set_ylabel("exact duality gap")
    ax.set_title(f"(a) Convergence, OCR-small, λ={st['lam']:g}")
    ax.legend(fontsize=8, loc="best")
    ax.grid(True, which="both", alpha=0.25)
    bx.axhline(1.0, color="gray", lw=0.8)
    bx.set_yscale("log")
    plain_log_ticks(bx)
    bx.set_xlabel("effective passes")
    bx.set_ylabel("heuristic gap / exact gap")
    bx.set_title("(b) Quality of the gap estimates (colours as in (a))")
    bx.grid(True, which="both", alpha=0.25)
    if path is not None:
        save_figure(fig, path, dpi=110)
    return fig


def main(argv=None) -> int:
    """CLI: ``python -m gaplab.toy_examples.staleness [--lam 0.001] [--passes 150] [--seed 0]
    [--gap-checks 1,5,10,100,inf] [--out-dir DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m gaplab.toy_examples.staleness",
                                 description="Fig. 1a/1b: exploitation vs staleness of gap sampling on OCR-small.")
    ap.add_argument("--lam", type=float, default=DEFAULT_LAM)
    ap.add_argument("--passes", type=float, default=DEFAULT_PASSES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap-checks", default="1,5,10,100,inf")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    args = ap.parse_args(argv)
    try:
        gcs = [parse_gap_check(x) for x in args.gap_checks.split(",") if x.strip()]
        res = run_staleness(args.lam, args.passes, gcs, args.seed, progress=print)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    save_outputs(res, plot_staleness, args.out_dir, "staleness")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
