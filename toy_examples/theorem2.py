"""The factor of Theorem 2 along real runs (Fig. 1c): χ(g)³/χ(C) on OCR-small.

Theorem 2 replaces the constant C_f^⊗ of uniform BCFW by C_f^⊗·χ^⊗ for exact gap sampling,
χ^⊗ bounding E[χ(C)/χ(g)³]. Its inverse χ(g)³/χ(C) is the improvement predicted at one
iterate: > 1 favours gap sampling. We evaluate it after every pass of runs with uniform and
with gap sampling, with the exact block gaps g_i at that iterate and curvature estimates
C_i = 4R_i²/(λn²), R_i the largest ‖ψ_i(y)‖₂ over the labelings y returned by the max oracle
in block steps of the run (the paper's estimate).

Run ``python -m gaplab.toy_examples.theorem2`` (about 10 s); it writes ``theorem2.png`` and
``theorem2.json`` in ``--out-dir``.

Paper: Sec. 3.1 (Theorem 2, Fig. 1c and its text), App. E (proof, comparison with uniform).
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from ._common import (DEFAULT_OUT_DIR, check_int, check_positive, gap_check_label, new_figure,
                      parse_gap_check, save_outputs)
from .theory import curvature_upper_bounds, improvement_factor, nonuniformity
from gaplab.core.atomic import save_figure

__all__ = ["run_theorem2", "toy_factor", "plot_theorem2", "main"]

DEFAULT_LAM = 0.001
DEFAULT_PASSES = 100


def toy_factor(n: int, K: int) -> dict:
    """χ(C), χ(g) and χ(g)³/χ(C) on the App. C problem once the easy blocks are solved.

    Every C_f^(i) = 1/n (χ(C) = 1) and only the hard block has a non-zero gap (χ(g) = √n), so
    Theorem 2 predicts the largest possible improvement n^{3/2}.

    Paper: App. C with App. E ("best case for gap sampling").
    """
    from .hard_easy import curvature_constants, hard_block_gap, make_hard_easy
    model, lam, info = make_hard_easy(n, K)
    C = curvature_constants(model, lam)
    g = np.zeros(n)
    g[info["hard_index"]] = hard_block_gap(1, n, K)
    return {"n": n, "K": K, "chi_C": nonuniformity(C), "chi_g": nonuniformity(g),
            "factor": improvement_factor(g, C), "n_to_1.5": n ** 1.5}


def _run(model, lam, sampling, gc, passes, seed):
    from gaplab.core import Solver
    n = model.arrays.n
    s = Solver(model, lam=lam, sampling=sampling, gap_check=gc, seed=seed, max_passes=passes)
    R2 = np.zeros(n)
    seen = [set() for _ in range(n)]
    gt_feat: dict[int, np.ndarray] = {}
    ep, gaps = [], []
    t0 = time.perf_counter()
    while s.effective_passes < passes:
        for _ in range(n):
            rec = s.step()
            if not rec.oracle_called or rec.fw_corner is None:
                continue
            i = rec.block
            key = rec.fw_corner.tobytes()
            if key in seen[i]:
                continue
            seen[i].add(key)
            if i not in gt_feat:
                gt_feat[i] = model.joint_feature(i, model.ground_truth(i))
            psi = gt_feat[i] - model.joint_feature(i, rec.fw_corner)
            R2[i] = max(R2[i], float(psi @ psi))
        g = s.copy().exact_gap(count=True).block_gaps  # on a copy: the run's estimates stay stale
        ep.append(s.effective_passes)
        gaps.append(np.maximum(g, 0.0))
    C = curvature_upper_bounds(np.sqrt(R2), lam, n)
    chi_C = nonuniformity(C) if C.sum() > 0 else math.nan
    chi_g = [nonuniformity(g) if g.sum() > 0 else math.nan for g in gaps]
    factor = [cg ** 3 / chi_C for cg in chi_g]
    return {
        "label": "Uniform" if sampling == "uniform" else f"Gap {gap_check_label(gc)}",
        "sampling": sampling, "gap_check": gap_check_label(gc),
        "effective_passes": ep, "chi_g": chi_g, "chi_C": chi_C, "factor": factor,
        "duality_gap": [float(g.sum()) for g in gaps],
        "median_factor": float(np.nanmedian(factor)), "final_factor": factor[-1],
        "labelings_seen": int(sum(len(x) for x in seen)), "blocks_seen": int(np.count_nonzero(R2)),
        "wall_time_s": time.perf_counter() - t0,
    }


def run_theorem2(lam: float = DEFAULT_LAM, passes: float = DEFAULT_PASSES, seed: int = 0,
                 gap_check: float = 10, *, model=None, progress=None) -> dict:
    """Theorem 2's predicted improvement χ(g)³/χ(C) along runs of uniform and gap sampling.

    After every pass of n block steps the exact block gaps are computed on a copy of the
    solver (so the gap sampler's stale estimates are untouched). C_i = 4R_i²/(λn²) with R_i the
    largest ‖ψ_i(y)‖₂ over the labelings the run's max-oracle calls returned (whole run).

    Paper: Sec. 3.1, Fig. 1c; App. E.

    Parameters
    ----------
    lam : float
        Regularization λ (default 0.001, as :mod:`gaplab.toy_examples.staleness`).
    passes : float
        Effective passes per run (default 100).
    seed : int
        Solver seed.
    gap_check : float
        gap_check of the gap-sampling run (default 10, the paper's choice).
    model : ChainModel, optional
        Defaults to OCR-small's training set.
    progress : callable(str), optional

    Returns
    -------
    dict
        ``runs`` (per run: ``effective_passes``, ``chi_g``, ``chi_C``, ``factor``,
        ``duality_gap``, ``median_factor``, …), ``toy`` (:func:`toy_factor` for n = 20,
        K = 50), ``settings``, ``wall_time_s``.
    """
    from .staleness import _ocr_small_model
    lam = check_positive("lam", lam)
    passes = check_positive("passes", passes)
    seed = check_int("seed", seed, 0)
    gc = parse_gap_check(gap_check)
    t0 = time.perf_counter()
    model = _ocr_small_model() if model is None else model
    runs = []
    for sampling, g in (("uniform", math.inf), ("gap", gc)):
        r = _run(model, lam, sampling, g, passes, seed)
        runs.append(r)
        if progress is not None:
            progress(f"{r['label']:<8} χ(C) = {r['chi_C']:.3f}, median χ(g)³/χ(C) = {r['median_factor']:.3g}, "
                     f"final {r['final_factor']:.3g}  ({r['wall_time_s']:.1f}s)")
    return {"runs": runs, "toy": toy_factor(20, 50),
            "settings": {"dataset": "ocr-small", "n": model.arrays.n, "lam": lam, "passes": passes,
                         "seed": seed, "gap_check": gap_check_label(gc)},
            "wall_time_s": time.perf_counter() - t0}


def plot_theorem2(result: dict, path=None):
    """Fig. 1c: χ(g)³/χ(C) against effective passes (left); χ(g) and χ(C) (right).

    Paper: Fig. 1c.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = new_figure(1, 2, figsize=(11.0, 4.2))
    ax, bx = axes[0]
    st = result["settings"]
    for r, c in zip(result["runs"], ("k", "C2")):
        ls = "--" if r["sampling"] == "uniform" else "-"
        ax.plot(r["effective_passes"], r["factor"], ls, color=c, lw=1.5, label=r["label"])
        bx.plot(r["effective_passes"], r["chi_g"], ls, color=c, lw=1.5, label=f"χ(g), {r['label']}")
        bx.axhline(r["chi_C"], color=c, ls=":", lw=1.2, label=f"χ(C), {r['label']} ({r['chi_C']:.2f})")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("effective passes")
    ax.set_ylabel("predicted improvement χ(g)³ / χ(C)")
    ax.set_title(f"(c) Theorem 2 factor, OCR-small, λ={st['lam']:g}")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.25)
    bx.set_xlabel("effective passes")
    bx.set_ylabel("non-uniformity χ")
    bx.set_title(f"χ(x) = sqrt(1 + n² Var[x/‖x‖₁]) ∈ [1, √n = {math.sqrt(st['n']):.1f}]")
    bx.legend(fontsize=8)
    bx.grid(True, alpha=0.25)
    if path is not None:
        save_figure(fig, path, dpi=110)
    return fig


def main(argv=None) -> int:
    """CLI: ``python -m gaplab.toy_examples.theorem2 [--lam 0.001] [--passes 100] [--seed 0]
    [--gap-check 10] [--out-dir DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m gaplab.toy_examples.theorem2",
                                 description="Fig. 1c: Theorem 2's factor chi(g)^3/chi(C) along runs on OCR-small.")
    ap.add_argument("--lam", type=float, default=DEFAULT_LAM)
    ap.add_argument("--passes", type=float, default=DEFAULT_PASSES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap-check", default="10")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    args = ap.parse_args(argv)
    try:
        res = run_theorem2(args.lam, args.passes, args.seed, parse_gap_check(args.gap_check), progress=print)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t = res["toy"]
    print(f"App. C toy (n={t['n']}, K={t['K']}): χ(C) = {t['chi_C']:.3f}, χ(g) = {t['chi_g']:.3f}, "
          f"factor = {t['factor']:.1f} = n^1.5 = {t['n_to_1.5']:.1f}")
    save_outputs(res, plot_theorem2, args.out_dir, "theorem2")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
