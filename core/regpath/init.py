"""Initialization of the regularization path: λ_∞, ψ̃, θ_i and the dual point α_∞ (Paper: App. D,
Alg. 6).

ỹ_i = argmax_y L_i(y) (the max oracle at w = 0), ψ̃ = (1/n) Σ_i δψ_i(ỹ_i),
θ_i = max_y −⟨ψ̃, δψ_i(y)⟩ and λ_∞ = (‖ψ̃‖² + (1/n) Σ_i θ_i) / (κε); the dual point
α_i = e_{ỹ_i} gives w_∞ = ψ̃/λ_∞ whose gap is at most κε at λ_∞ (and (λ_∞/λ)·κε at λ >= λ_∞, with w = ψ̃/λ).
With a box of zero bounds ψ̃ is replaced by clip(ψ̃) (:func:`~gaplab.core.regpath.certificate.check_path_box`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from .. import kernels as kr
from .. import validate
from ..config import LAM_MAX, LAM_MIN, SolverConfig
from ..models.protocol import check_labelling
from .certificate import check_path_box
from .config import _DEFAULTS, PathConfig
from .run import _buffers, _model_box, _new_solver

__all__ = ["PathInit", "init_reg_path"]


# ============================================================================ kernels
@njit(cache=True, nogil=True)
def _loss_oracle(M, zero_w, h, ybuf, vit_f, vit_i, y_out, loss_out):
    """ỹ_i = argmax_y L_i(y) (max oracle at w = 0) for every block (Paper: Alg. 6, line 3)."""
    for i in range(M.n):
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        kr.block_scores(M, i, zero_w, h)
        kr.block_oracle(M, i, h, ybuf, vit_f, vit_i)
        for t in range(L):
            y_out[b + t] = ybuf[t]
        loss_out[i] = kr.label_loss(M, i, ybuf)


@njit(cache=True, nogil=True)
def _theta(M, zero_w, psi, h0, h, ybuf, ygt, vit_f, vit_i, y_tilde, theta_out, dot_out):
    """θ_i = max_y ⟨ψ̃, ψ(x_i, y)⟩ − ⟨ψ̃, ψ(x_i, y_i)⟩ (plain decoding at w = ψ̃) and
    ⟨ψ̃, δψ_i(ỹ_i)⟩ (Paper: Alg. 6, lines 9 and 13). The loss is removed from the
    loss-augmented scores by subtracting the scores at w = 0 (which are the loss alone)."""
    for i in range(M.n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        kr.block_scores(M, i, zero_w, h0)
        kr.block_scores(M, i, psi, h)
        for q in range(p):
            h[q] -= h0[q]
        best = kr.block_oracle(M, i, h, ybuf, vit_f, vit_i)
        kr.gt_label(M, i, ygt)
        s_gt = kr.label_dot(M, i, ygt, h)
        theta_out[i] = best - s_gt
        for t in range(L):
            ybuf[t] = y_tilde[b + t]
        dot_out[i] = s_gt - kr.label_dot(M, i, ybuf, h)


def _loss_oracle_python(model, zero_w, y_out, loss_out):
    """:func:`_loss_oracle` for a model whose max oracle is a Python call (oracle_tier "python")."""
    M = model.arrays
    for i in range(M.n):
        b = M.lab_off[i]
        y = check_labelling(model, i, model.max_oracle(i, zero_w), "max oracle's labelling")
        y_out[b:b + y.shape[0]] = y
        loss_out[i] = kr.label_loss(M, i, y)


def _theta_python(model, zero_w, psi, h0, h, ygt, y_tilde, theta_out, dot_out):
    """:func:`_theta` for a Python max oracle: the plain decoding at w = ψ̃ is ``model.decode``."""
    M = model.arrays
    for i in range(M.n):
        p = M.stat_off[i + 1] - M.stat_off[i]
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        kr.block_scores(M, i, zero_w, h0)
        kr.block_scores(M, i, psi, h)
        h[:p] -= h0[:p]
        y = check_labelling(model, i, model.decode(i, psi), "decoded labelling")
        best = kr.label_dot(M, i, y, h)
        kr.gt_label(M, i, ygt)
        s_gt = kr.label_dot(M, i, ygt, h)
        theta_out[i] = best - s_gt
        dot_out[i] = s_gt - kr.label_dot(M, i, np.ascontiguousarray(y_tilde[b:b + L]), h)


# ============================================================================ Alg. 6
@dataclass
class PathInit:
    """Result of the path initialization (Paper: Alg. 6).

    Attributes
    ----------
    lam_inf : float
        λ_∞ = (‖ψ̃‖² + mean θ_i) / (κε).
    psi_tilde : ndarray (d,)
        ψ̃ = (1/n) Σ_i δψ_i(ỹ_i); w_∞ = ψ̃/λ_∞ and w = ψ̃/λ for λ >= λ_∞.
    y_tilde : list of int64 arrays
        ỹ_i = argmax_y L_i(y), the dual point α_i = e_{ỹ_i}.
    theta : ndarray (n,)
        θ_i = max_y −⟨ψ̃, δψ_i(y)⟩ >= 0.
    block_bounds : ndarray (n,)
        Alg. 6 line 13 at λ_∞: g_i <= (θ_i + ⟨ψ̃, δψ_i(ỹ_i)⟩)/(nλ_∞); they sum to κε.
    ell : float
        ℓ = (1/n) Σ_i L_i(ỹ_i) (the dual's linear term at α_∞).
    gap_bound : float
        Upper bound on the duality gap at λ_∞ (= κε, or 0 when ψ̃ = 0).
    oracle_calls : int
        2n (loss-only oracle at w = 0 and plain decoding at w = ψ̃).
    time_s : float
        Wall time of the initialization, in seconds.
    """

    lam_inf: float
    psi_tilde: np.ndarray
    y_tilde: list
    theta: np.ndarray
    block_bounds: np.ndarray
    ell: float
    gap_bound: float
    oracle_calls: int
    time_s: float

    @property
    def w_inf(self) -> np.ndarray:
        return self.psi_tilde / self.lam_inf


def _loss_only_labellings(model, python_oracle: bool, buffers):
    """Alg. 6 lines 2-5: ỹ_i = argmax_y H_i(y; 0) for every block, flat (int64 (Σ L_i,)), and
    the losses L_i(ỹ_i) (float64 (n,))."""
    M = model.arrays
    h0, _, ybuf, _, vit_f, vit_i = buffers
    zero = np.zeros(M.d)
    y_flat = np.zeros(int(M.lab_off[-1]), dtype=np.int64)
    losses = np.zeros(M.n)
    if python_oracle:
        _loss_oracle_python(model, zero, y_flat, losses)
    else:
        _loss_oracle(M, zero, h0, ybuf, vit_f, vit_i, y_flat, losses)
    return y_flat, losses


def _psi_tilde(model, y_tilde: list) -> np.ndarray:
    """Alg. 6 line 6: ψ̃ = λ·w(α_∞) at any λ, from a scratch solver at λ = 1 (no atoms, nothing
    else allocated). With a box of zero bounds this is clip(ψ̃), which takes ψ̃'s place in Alg. 6
    (see check_path_box)."""
    scratch = _new_solver(model, SolverConfig(lam=1.0, sampling="uniform", step="fw", track_active_set=False,
                                              max_passes=1.0), log_size=1)
    scratch.set_vertices(y_tilde)
    return scratch.S.w.copy()


def _thetas(model, python_oracle: bool, psi, y_flat, buffers):
    """Alg. 6 lines 8-10 and 13: θ_i = max_y −⟨ψ̃, δψ_i(y)⟩ and ⟨ψ̃, δψ_i(ỹ_i)⟩ (float64 (n,)
    each)."""
    M = model.arrays
    h0, h, ybuf, ygt, vit_f, vit_i = buffers
    zero = np.zeros(M.d)
    theta = np.zeros(M.n)
    dots = np.zeros(M.n)
    if python_oracle:
        _theta_python(model, zero, psi, h0, h, ygt, y_flat, theta, dots)
    else:
        _theta(M, zero, psi, h0, h, ybuf, ygt, vit_f, vit_i, y_flat, theta, dots)
    return theta, dots


def _lam_inf(psi, theta, eps: float, kappa: float):
    """Alg. 6 line 11: (λ_∞, gap bound κε); (1, 0) when ψ̃ = 0 and θ = 0 (w = 0 is optimal).

    Raises
    ------
    ValueError
        If λ_∞ falls outside the solver's λ range, naming the range of eps that fits.
    """
    num = float(psi @ psi) + float(theta.mean())
    if not num > 0:
        return 1.0, 0.0
    lam_inf = num / (kappa * eps)
    if not LAM_MIN <= lam_inf <= LAM_MAX:
        raise ValueError(f"eps = {eps!r} gives λ_∞ = (‖ψ̃‖² + mean θ_i) / (κ·eps) = {lam_inf:.3g}, "
                         f"outside the solver's λ range [{LAM_MIN:g}, {LAM_MAX:g}]: for this model and "
                         f"κ = {kappa:g}, eps must lie in [{num / kappa / LAM_MAX:.3g}, {num / kappa / LAM_MIN:.3g}]")
    return lam_inf, kappa * eps


def init_reg_path(model, eps: float = _DEFAULTS["eps"], kappa: float = _DEFAULTS["kappa"]) -> PathInit:
    """λ_∞, ψ̃, θ_i and the dual point α_∞ = (e_{ỹ_i})_i of Alg. 6 (Paper: App. D, Alg. 6).

    When ψ̃ = 0 (w = 0 is optimal for every λ) λ_∞ is set to 1 with a zero gap bound.

    Raises
    ------
    ValueError
        For eps <= 0, κ outside (0, 1), a box with a non-zero finite bound, or an eps whose λ_∞
        lies outside the solver's λ range.
    """
    eps = validate.positive("eps", eps)
    PathConfig(eps=eps, kappa=kappa)  # validates kappa
    t0 = time.perf_counter()
    M = model.arrays
    n = M.n
    box = _model_box(model)
    if box:
        check_path_box(box["lb"], box["ub"])
    python_oracle = getattr(model, "oracle_tier", "compiled") == "python"
    buffers = _buffers(M)
    y_flat, losses = _loss_only_labellings(model, python_oracle, buffers)
    y_tilde = [y_flat[M.lab_off[i]:M.lab_off[i + 1]].copy() for i in range(n)]
    psi = _psi_tilde(model, y_tilde)
    theta, dots = _thetas(model, python_oracle, psi, y_flat, buffers)
    lam_inf, bound = _lam_inf(psi, theta, eps, kappa)
    block_bounds = (theta + dots) / (n * lam_inf)
    return PathInit(lam_inf=float(lam_inf), psi_tilde=psi, y_tilde=y_tilde, theta=theta,
                    block_bounds=block_bounds, ell=float(losses.mean()), gap_bound=float(bound),
                    oracle_calls=2 * n, time_s=time.perf_counter() - t0)
