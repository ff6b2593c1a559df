"""The quantities of the gap-sampling theorem: non-uniformity χ, the ℓ1/ℓ2 lemma and the
predicted improvement factor of exact gap sampling over uniform sampling.

Paper: Sec. 3.1 (Theorem 2), App. E (Definition of χ, Lemma on ℓ1/ℓ2 norms, proof of
Theorem 2 and the comparison with uniform sampling).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "nonuniformity", "l1_l2_lemma", "theorem2_constant", "improvement_factor",
    "curvature_upper_bounds",
]


def _as_nonneg_vector(x, name="x") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 1:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite")
    if np.any(x < 0):
        raise ValueError(f"{name} must be non-negative (χ is defined on R^n_+)")
    if not x.sum() > 0:
        raise ValueError(f"{name} must have a positive sum (χ normalizes by ‖x‖₁)")
    return x


def nonuniformity(x) -> float:
    """Non-uniformity measure χ(x) = sqrt(1 + n² Var[x / ‖x‖₁]) of a vector x ∈ R^n_+.

    Paper: Theorem 2 (Sec. 3.1), Definition in App. E.

    Parameters
    ----------
    x : array_like of float, shape (n,)
        Non-negative, finite, with a positive sum.

    Returns
    -------
    float
        χ(x) ∈ [1, √n]: 1 for a constant vector, √n for a one-hot vector (App. E, Remark).
        Var is the population variance over the n entries.

    Raises
    ------
    ValueError
        If x is not a non-empty 1-D vector, has a negative or non-finite entry, or sums to 0.
    """
    x = _as_nonneg_vector(x)
    n = x.size
    p = x / x.sum()
    var = float(np.mean(p * p) - (1.0 / n) ** 2)  # E[p²] − E[p]², as in the proof of App. E
    return math.sqrt(max(1.0 + n * n * var, 1.0))


def l1_l2_lemma(x) -> tuple[float, float]:
    """Both sides of the ℓ1/ℓ2 lemma ‖x‖₂ = χ(x)/√n · ‖x‖₁.

    Paper: App. E (Lemma, used with Cauchy-Schwarz in the proof of Theorem 2).

    Parameters
    ----------
    x : array_like of float, shape (n,)
        Non-negative with a positive sum.

    Returns
    -------
    (lhs, rhs) : tuple of float
        ‖x‖₂ and χ(x)/√n · ‖x‖₁ (equal up to round-off).
    """
    x = _as_nonneg_vector(x)
    return float(np.linalg.norm(x)), nonuniformity(x) / math.sqrt(x.size) * float(x.sum())


def theorem2_constant(gaps, curvatures) -> float:
    """χ(C)/χ(g)³: the per-iterate quantity whose expectation Theorem 2 bounds by χ^⊗.

    The rate of exact gap sampling has C_f^⊗ χ^⊗ where uniform sampling has C_f^⊗
    (Paper: Theorem 2; App. E, "Comparison with uniform sampling").

    Parameters
    ----------
    gaps : array_like of float, shape (n,)
        Block gaps g_i(α) (non-negative, not all 0).
    curvatures : array_like of float, shape (n,)
        Curvature constants C_f^(i) (or upper bounds; non-negative, not all 0).

    Returns
    -------
    float
    """
    g = _as_nonneg_vector(gaps, "gaps")
    c = _as_nonneg_vector(curvatures, "curvatures")
    if g.shape != c.shape:
        raise ValueError(f"gaps and curvatures must have the same shape, got {g.shape} and {c.shape}")
    return nonuniformity(c) / nonuniformity(g) ** 3


def improvement_factor(gaps, curvatures) -> float:
    """Predicted improvement of exact gap sampling over uniform sampling, χ(g)³/χ(C).

    Paper: Fig. 1c (Sec. 3.1) reports this quantity along runs of BCFW; > 1 means Theorem 2
    predicts a better constant for gap sampling. It lies in [n^{-1/2}, n^{3/2}].

    Parameters
    ----------
    gaps, curvatures : array_like of float, shape (n,)
        See :func:`theorem2_constant`.

    Returns
    -------
    float
    """
    return 1.0 / theorem2_constant(gaps, curvatures)


def curvature_upper_bounds(R, lam: float, n: int | None = None) -> np.ndarray:
    """Curvature bounds C_f^(i) <= 4 R_i² / (λ n²) with R_i = max_y ‖ψ_i(y)‖₂.

    Paper: Sec. 3.1 (estimate used for Fig. 1c) and App. B (from Lacoste-Julien et al. 2013,
    App. A).

    Parameters
    ----------
    R : array_like of float, shape (n,)
        Per-block radii R_i (non-negative).
    lam : float
        Regularization λ > 0.
    n : int, optional
        Number of blocks (default: len(R)).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    R = np.asarray(R, dtype=np.float64)
    if R.ndim != 1 or np.any(~np.isfinite(R)) or np.any(R < 0):
        raise ValueError("R must be a 1-D vector of finite non-negative radii")
    if not (isinstance(lam, (int, float)) and lam > 0 and math.isfinite(lam)):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    n = R.size if n is None else int(n)
    return 4.0 * R * R / (lam * n * n)
