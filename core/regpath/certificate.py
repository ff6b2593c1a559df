"""Proposition 1: the certificate that carries a breakpoint's primal-dual pair to smaller λ, and
the warm start built on it (Paper: Sec. 4, Proposition 1; App. D, δ_i in
Alg. 7 lines 4 and 13-15).

At a breakpoint λ_j with weights w_j, dual point α_j and exact gap g_j, the dual point rescaled
towards the ground truth, α_i ← ρα_i + (1 − ρ)e_{y_i} with ρ = λ/λ_j, keeps w and has at λ the
duality gap g_j + (1 − ρ)·Δ_j, where Δ = ℓ − λ‖w‖² = Σ_i δ_i and
δ_i = (1/n) Σ_y α_i(y) H_i(y; w). Box constraints whose finite bounds are all 0 keep this
(:func:`check_path_box`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .. import kernels as kr
from ..solver import Solver
from .run import _buffers, _model_box

__all__ = ["check_path_box", "block_deltas", "prop1_warm_start"]


@njit(cache=True, nogil=True)
def _block_deltas(M, w, mu, h, ygt, out):
    """δ_i = (1/n) Σ_y α_i(y) H_i(y; w) = (1/n)(⟨μ_i, h_i⟩ − ⟨m(y_i), h_i⟩), h_i the
    loss-augmented scores (Paper: Alg. 7, line 4: δ_i = ℓ_i − λ⟨w, w_i⟩)."""
    n = M.n
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        kr.block_scores(M, i, w, h)
        s = 0.0
        for q in range(p):
            s += mu[so + q] * h[q]
        kr.gt_label(M, i, ygt)
        out[i] = (s - kr.label_dot(M, i, ygt, h)) / n


def check_path_box(lb, ub) -> None:
    """The path (Alg. 6-7, Proposition 1) supports boxes whose finite bounds are all 0 (positivity
    or negativity constraints, as the HorseSeg and LSP models need; Paper: App. H).

    Why: with w = clip(v) and every finite bound 0, a clipped coordinate has w_j = 0, so
    ⟨w, v⟩ = ‖w‖² and the box term λ(β_u·ub − β_l·lb) of the dual vanishes. Proposition 1 then
    holds as without a box: the rescaling α ← ρα + (1 − ρ)e_{y_i} keeps v (hence w), and the gap
    moves by (1 − ρ)Δ with Δ = ℓ − λ‖w‖² = Σ_i δ_i. Alg. 6 holds with ψ̃ replaced by clip(ψ̃)
    (clipping at 0 is positively homogeneous, so w = clip(ψ̃)/λ for λ >= λ_∞). Other bounds raise
    ValueError."""
    if lb is None or np.size(lb) == 0:
        return
    lb, ub = np.asarray(lb), np.asarray(ub)
    ok = np.all((lb == 0) | (lb == -np.inf)) and np.all((ub == 0) | (ub == np.inf))
    if not ok:
        raise ValueError("the regularization path supports box constraints only when every finite bound is 0 "
                         "(e.g. w_P >= 0); got other finite bounds")


def _check_model(model):
    """TypeError unless ``model`` is a gaplab model; ValueError if its box breaks Proposition 1."""
    if not hasattr(model, "arrays"):
        raise TypeError(f"model must be a gaplab model (ChainModel, MulticlassModel), got {type(model).__name__}")
    box = _model_box(model)
    if box:  # only boxes whose finite bounds are all 0 (w_P >= 0, quadratic weights >= 0) keep Prop. 1
        check_path_box(box["lb"], box["ub"])


def block_deltas(solver: Solver) -> np.ndarray:
    """Per-block δ_i = (1/n) Σ_y α_i(y) H_i(y; w) at the solver's current point (no oracle call;
    Paper: Alg. 7 line 4). Σ_i δ_i = Δ = ℓ − λ‖w‖² (Proposition 1). Taken from the last exact
    gap pass when the iterate has not moved since (free), else computed (about half a pass).
    A box is allowed when its finite bounds are all 0 (see :func:`check_path_box`).

    Returns
    -------
    ndarray (n,) float64
    """
    check_path_box(solver.S.lb, solver.S.ub)
    fresh = solver.fresh_exact_gap
    if fresh is not None:
        return fresh.block_deltas.copy()
    M = solver.model.arrays
    h, _, ygt, _, _, _ = _buffers(M)
    out = np.zeros(M.n)
    _block_deltas(M, solver.S.w, solver.S.mu, h, ygt, out)
    return out


def _ell_delta(solver: Solver):
    """(ℓ, Δ) with ℓ = Σ_i ℓ_i (dual = ℓ − λ/2‖w‖²) and Δ = ℓ − λ‖w‖² (Proposition 1)."""
    w = solver.S.w
    sq = float(w @ w)
    dual = solver.dual_objective()
    ell = dual + 0.5 * solver.lam * sq
    return ell, ell - solver.lam * sq


def prop1_warm_start(solver: Solver, lam_new: float, *, gap: float = math.nan,
                     deltas: np.ndarray | None = None, batch_step: bool = False) -> Solver:
    """A new solver at ``lam_new`` <= λ with w kept and α rescaled towards the ground truth
    (Proposition 1, :meth:`~gaplab.core.solver.Solver.warm_start` ``keep="primal"``), whose block gap estimates
    are moved by (1 − ρ)δ_i as in Alg. 7 (line 15) instead of being left stale.

    With ``gap`` (the exact duality gap at the old λ) the new gap is known without any oracle
    call, g + (1 − ρ)Δ (Proposition 1): it becomes the global gap g^(k_0) of the cache rule, and
    with ``batch_step`` a batch FW step (Paper: App. H, Alg. 8) is taken at the new λ. Its FW
    corners are the max-oracle answers at w, which Proposition 1 leaves unchanged and which
    do not depend on λ: they are those of the exact gap pass that measured ``gap`` (stored with
    ``store_corners=True``), so the step costs no oracle call.
    """
    rho = float(lam_new) / solver.lam
    if deltas is None:
        deltas = block_deltas(solver)
    est = solver.S.gap_est
    saved = est.copy()
    try:
        fin = np.isfinite(est)
        est[fin] += (1.0 - rho) * deltas[fin]
        new = solver.warm_start(float(lam_new), keep="primal")
    finally:
        est[:] = saved
    if math.isfinite(gap):
        g_new = max(gap + (1.0 - rho) * float(deltas.sum()), 0.0)
        new.S.scalars[kr.S_GLOBAL_GAP] = g_new
        if batch_step and g_new > 0:
            new.batch_step(g_new)
    return new
