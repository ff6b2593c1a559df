"""Regularization path of the structured SVM (Paper: Sec. 4, Proposition 1; App. D, Alg. 6-7;
App. K) and grid search over λ with or without warm starts.

ε-approximate path
    Breakpoints λ_0 = λ_∞ > λ_1 > ... with weights w_j such that, for every λ >= λ_end,
    :meth:`RegPath.w_at` returns an ε-approximate primal point: (λ_0/λ)·w_0 for λ >= λ_0, and
    w_j for λ in [λ_{j+1}, λ_j] (piecewise constant). Each w_j comes with the dual point α_j it
    was computed from; the certificate for λ in [λ_{j+1}, λ_j] is α_j rescaled by Proposition 1
    (ρ = λ/λ_j), whose duality gap at λ is g_j + (1 − ρ)·Δ_j <= ε exactly.

    * Initialization (Alg. 6, :func:`init_reg_path`): ỹ_i = argmax_y L_i(y) (oracle at w = 0),
      ψ̃ = (1/n) Σ_i δψ_i(ỹ_i), θ_i = max_y −⟨ψ̃, δψ_i(y)⟩ and
      λ_∞ = (‖ψ̃‖² + (1/n) Σ_i θ_i) / (κε); the dual point α_i = e_{ỹ_i} gives w_∞ = ψ̃/λ_∞ whose
      gap is at most κε at λ_∞ (and (λ_∞/λ)·κε at λ >= λ_∞, with w = ψ̃/λ).
    * Induction (Alg. 7): Δ = (1/n) Σ_i Σ_y α_i(y) H_i(y; w) = ℓ − λ‖w‖² (Σ_i δ_i, δ_i per block),
      τ = ε − g, ρ = 1 − τ/Δ. ρ <= 0 (Δ <= τ) ends the path: w_j is ε-approximate for every
      λ < λ_j (Alg. 7 as printed has the test inverted, "if Δ <= τ then ρ := 1 − τ/Δ"; Sec. 4's
      text is the reference). Otherwise λ_{j+1} = ρλ_j, the dual variables (and active sets)
      are rescaled towards the ground truth (:meth:`Solver.warm_start`, ``keep="primal"``; ℓ_i ← ρℓ_i),
      the block gap estimates move by (1 − ρ)δ_i (Proposition 1, block by block) and the SSVM
      solver runs to κε. If λ_{j+1} < λ_min the path stops *before* solving there: w_j already
      covers [λ_{j+1}, λ_j] ∋ λ_min (Alg. 7 as printed solves one more, useless, breakpoint).

    The solver's stopping rule at a breakpoint is the authors' "true gap when converged": after
    each pass, when the stale gap sum falls to κε an exact gap pass (counted) confirms it; the
    periodic gap checks (``SolverConfig.gap_check``) also stop it. Every breakpoint therefore
    costs at least one pass of block steps and one exact gap pass, and since τ <= ε, ρ >= 1 − ε/Δ:
    where Δ ≈ the average loss (large λ) the path needs about Δ/ε breakpoints per factor e of λ.

heuristic path (App. K)
    The same recursion, but the solver stops when the *stale* gap sum is <= κε (no exact pass)
    and τ uses that stale sum. Cheaper, no guarantee (the paper uses κ = 0.7).

grid search (App. K)
    A decreasing grid (default 2^15, 2^14, ..., 2^-15), each λ solved to exact gap <= ε, from
    scratch (``warm_start="none"``), keeping w and rescaling α by Proposition 1
    (``"primal"``, the paper's choice) or keeping α and rescaling w (``"dual"``).

Names of the authors' options: ``regularization_path`` -> :func:`regularization_path`,
``regularization_path_eps`` -> ``eps``, ``regularization_path_a`` -> ``kappa``,
``regularization_path_min_lambda`` -> ``lam_min``, ``lambda_values`` -> ``lams`` of
:func:`grid_search`, ``warm_start_type`` -> ``warm_start``.

For the app: :func:`iter_path` / :func:`iter_grid` are generators yielding one
:class:`PathPoint` as soon as it is computed; :class:`RegPath` collects them (``append``), answers
``w_at(lam)``, and saves/loads itself with ``np.savez`` (no pickle). With ``store=DIR``
(:func:`regularization_path`, :func:`grid_search`) every point is streamed to an on-disk path
store as soon as it is computed (:mod:`gaplab.core.pathstore`: one npz per breakpoint + a JSON
manifest, atomic per breakpoint) and only the rows stay in memory; :meth:`RegPath.open` reads a
store lazily (``w_at`` reads one breakpoint file) or an old single-file npz.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
import zipfile
import zlib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from numba import njit

from . import kernels as kr
from . import pathstore as pst
from . import jsonsafe, validate
from .atomic import atomic_write, npz_path
from .config import LAM_MAX, LAM_MIN, CacheConfig, SolverConfig, Status
from .interrupt import Interrupted, held_sigint
from .models.protocol import check_labelling
from .solver import ExactGap, Solver

__all__ = [
    "PathConfig", "HEURISTIC_KAPPA", "path_defaults", "PathInit", "PathPoint", "RegPath",
    "init_reg_path", "block_deltas", "prop1_warm_start", "induction_step",
    "iter_path", "regularization_path", "iter_grid", "grid_search", "default_grid",
    "resume_path", "PathFileError", "PathStoreError", "PathMetric",
]

PathStoreError = pst.PathStoreError

FORMAT_VERSION = 1


class PathFileError(ValueError):
    """A path file (``RegPath.load``, ``resume_path``) that is not valid; the message names the
    file and the problem."""


_STATE_PREFIX = "solver_state__"
_STATE_FIELDS = tuple(kr.StateArrays._fields)
_TAU_SAFETY = 1e-9  # τ = ε(1 − 1e-9) − g: the new breakpoint's gap stays <= ε despite round-off


def default_grid(hi: int = 15, lo: int = -15) -> np.ndarray:
    """The paper's grid 2^hi, 2^(hi-1), ..., 2^lo (31 values by default), decreasing."""
    if lo > hi:
        raise ValueError(f"default_grid needs lo <= hi, got hi={hi}, lo={lo}")
    return 2.0 ** np.arange(hi, lo - 1, -1, dtype=np.float64)


# ============================================================================ configuration
@dataclass(frozen=True)
class PathConfig:
    """Settings of a regularization path (Paper: Alg. 7, App. K).

    Parameters
    ----------
    eps : float
        ε > 0: every λ >= λ_end gets an ε-approximate w (the authors' regularization_path_eps).
    kappa : float
        κ in (0, 1): the solver runs to κε at each breakpoint (regularization_path_a). The paper
        uses 0.9 for the ε-approximate path and 0.7 for the heuristic path.
    lam_min : float
        λ_min > 0: the path stops once it covers λ_min (regularization_path_min_lambda).
    heuristic : bool
        Heuristic path: stop the solver on the stale gap sum, no exact gap pass.
    max_passes_per_breakpoint : float
        Solver budget at one breakpoint (effective passes, gap passes included).
    time_limit : float
        Budget of the whole path in seconds (inf: none); the path stops when it is used up.
    max_breakpoints : int
        Safety cap on the number of breakpoints.
    true_gaps : bool
        Also compute the exact gap at every breakpoint where the algorithm does not need it (the
        heuristic path, λ_∞) as an uncounted, untimed diagnostic (Fig. 7, bottom).
    verify_heuristic_gap : bool
        ε-path: run an exact gap pass when the stale gap sum falls below κε (authors'
        true_gap_when_converged). Off: only the periodic gap checks can stop the solver.
    check_every : float
        Effective passes of solver work between two looks at the stale gap sum (1: once per
        pass, as the authors' solver).
    check_factor : float
        In (0, 1]. ε-path: the counted exact gap pass runs only once the stale gap sum is
        <= check_factor·κε. Stale estimates were measured before each block's step, and at
        small λ they underestimate the gap. With the factor 1, 40 of the 58 exact passes below
        λ = 0.06 on OCR-small failed. Default 0.8, the authors'
        quit_passes_heuristic_gap_eps_multiplyer; on OCR-small (BCFW + gap) the path needs 548
        effective passes instead of 645. The heuristic path still stops at κε (Paper: App. K).
    batch_step : bool
        ε-path: take a batch FW step at each new breakpoint with the oracle answers of the last
        exact gap pass (free: w is unchanged by the rescaling; see :func:`prop1_warm_start`).
    """

    eps: float = 0.1
    kappa: float = 0.9
    lam_min: float = 2.0 ** -15
    heuristic: bool = False
    max_passes_per_breakpoint: float = 1000.0
    time_limit: float = math.inf
    max_breakpoints: int = 100_000
    true_gaps: bool = False
    verify_heuristic_gap: bool = True
    check_every: float = 1.0
    check_factor: float = 0.8
    batch_step: bool = False

    def __post_init__(self):
        object.__setattr__(self, "eps", validate.positive("eps", self.eps))
        object.__setattr__(self, "kappa", validate.number("kappa", self.kappa, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "lam_min", validate.number("lam_min", self.lam_min, lo=LAM_MIN, lo_open=False))
        for name in ("heuristic", "true_gaps", "verify_heuristic_gap", "batch_step"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        object.__setattr__(self, "max_passes_per_breakpoint",
                           validate.positive("max_passes_per_breakpoint", self.max_passes_per_breakpoint,
                                             allow_inf=True))
        object.__setattr__(self, "time_limit", validate.positive("time_limit", self.time_limit, allow_inf=True))
        object.__setattr__(self, "check_every", validate.number("check_every", self.check_every, lo=0.0, hi=1e6))
        object.__setattr__(self, "check_factor", validate.number("check_factor", self.check_factor, lo=0.0, hi=1.0))
        object.__setattr__(self, "max_breakpoints", validate.int_at_least("max_breakpoints", self.max_breakpoints, 1))

    def replace(self, **changes) -> "PathConfig":
        from dataclasses import replace
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return jsonsafe.encode(asdict(self))


#: κ of the heuristic path (Paper: App. K); the ε-path's κ is PathConfig's default
HEURISTIC_KAPPA = 0.7


def path_defaults() -> dict:
    """PathConfig's field defaults by name: the one place the command line, the sweep spec and the
    app read the path's defaults from."""
    return {f.name: f.default for f in fields(PathConfig)}


_json_safe = jsonsafe.encode  # the old name, still imported by benchmark scripts


def _solver_config_dict(cfg: SolverConfig) -> dict:
    d = asdict(cfg)
    d.pop("lam", None)
    return jsonsafe.encode(d)


def _as_solver_config(solver_config) -> SolverConfig:
    """The solver settings used at every breakpoint / grid point; the path owns the stopping
    rule, so ``stop_on_heuristic_gap`` is switched off."""
    if solver_config is None:
        solver_config = SolverConfig(sampling="gap")
    elif isinstance(solver_config, dict):
        solver_config = SolverConfig(**solver_config)
    elif not isinstance(solver_config, SolverConfig):
        raise TypeError(f"solver_config must be a SolverConfig, got {type(solver_config).__name__}")
    return solver_config.replace(stop_on_heuristic_gap=False)


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


def _buffers(M):
    max_lab = int(np.diff(M.lab_off).max())
    max_stat = int(np.diff(M.stat_off).max())
    return (np.zeros(max_stat), np.zeros(max_stat), np.zeros(max_lab, dtype=np.int64),
            np.zeros(max_lab, dtype=np.int64), np.zeros(max_lab * M.K), np.zeros(max_lab * M.K, dtype=np.int64))


def _model_box(model) -> dict:
    from .problems import model_box
    return model_box(model)


def _new_solver(model, config, **kw) -> Solver:
    """A Solver over ``model`` with the model's own box constraints (``model.bounds()``)."""
    return Solver(model, config, **_model_box(model), **kw)


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


def block_deltas(solver: Solver) -> np.ndarray:
    """Per-block δ_i = (1/n) Σ_y α_i(y) H_i(y; w) at the solver's current point (no oracle call;
    Paper: Alg. 7 line 4). Σ_i δ_i = Δ = ℓ − λ‖w‖² (Proposition 1). Taken from the last exact
    gap pass when the iterate has not moved since (free), else computed (about half a pass).
    A box is allowed when its finite bounds are all 0 (see :func:`check_path_box`)."""
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
    """(ℓ, Δ) with ℓ = Σ_i ℓ_i (dual = ℓ − λ/2‖w‖²) and Δ = ℓ − λ‖w‖²."""
    w = solver.S.w
    sq = float(w @ w)
    dual = solver.dual_objective()
    ell = dual + 0.5 * solver.lam * sq
    return ell, ell - solver.lam * sq


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


def init_reg_path(model, eps: float = 0.1, kappa: float = 0.9) -> PathInit:
    """λ_∞, ψ̃, θ_i and the dual point α_∞ = (e_{ỹ_i})_i of Alg. 6.

    When ψ̃ = 0 (w = 0 is optimal for every λ) λ_∞ is set to 1 with a zero gap bound.
    """
    eps = validate.positive("eps", eps)
    PathConfig(eps=eps, kappa=kappa)  # validates kappa
    t0 = time.perf_counter()
    M = model.arrays
    n, d = M.n, M.d
    box = _model_box(model)
    if box:
        check_path_box(box["lb"], box["ub"])
    python_oracle = getattr(model, "oracle_tier", "compiled") == "python"
    h0, h, ybuf, ygt, vit_f, vit_i = _buffers(M)
    zero = np.zeros(d)
    y_flat = np.zeros(int(M.lab_off[-1]), dtype=np.int64)
    losses = np.zeros(n)
    if python_oracle:
        _loss_oracle_python(model, zero, y_flat, losses)
    else:
        _loss_oracle(M, zero, h0, ybuf, vit_f, vit_i, y_flat, losses)
    y_tilde = [y_flat[M.lab_off[i]:M.lab_off[i + 1]].copy() for i in range(n)]
    # ψ̃ = λ·w(α_∞) at any λ: a scratch solver at λ = 1 (no atoms, nothing else allocated). With a
    # box of zero bounds this is clip(ψ̃), which takes ψ̃'s place in Alg. 6 (see check_path_box).
    scratch = _new_solver(model, SolverConfig(lam=1.0, sampling="uniform", step="fw", track_active_set=False,
                                              max_passes=1.0), log_size=1)
    scratch.set_vertices(y_tilde)
    psi = scratch.S.w.copy()
    del scratch
    theta = np.zeros(n)
    dots = np.zeros(n)
    if python_oracle:
        _theta_python(model, zero, psi, h0, h, ygt, y_flat, theta, dots)
    else:
        _theta(M, zero, psi, h0, h, ybuf, ygt, vit_f, vit_i, y_flat, theta, dots)
    num = float(psi @ psi) + float(theta.mean())
    if num > 0:
        lam_inf = num / (kappa * eps)
        bound = kappa * eps
        if not LAM_MIN <= lam_inf <= LAM_MAX:
            raise ValueError(f"eps = {eps!r} gives λ_∞ = (‖ψ̃‖² + mean θ_i) / (κ·eps) = {lam_inf:.3g}, "
                             f"outside the solver's λ range [{LAM_MIN:g}, {LAM_MAX:g}]: for this model and κ = {kappa:g}, eps "
                             f"must lie in [{num / kappa / LAM_MAX:.3g}, {num / kappa / LAM_MIN:.3g}]")
    else:
        lam_inf, bound = 1.0, 0.0
    block_bounds = (theta + dots) / (n * lam_inf)
    return PathInit(lam_inf=float(lam_inf), psi_tilde=psi, y_tilde=y_tilde, theta=theta,
                    block_bounds=block_bounds, ell=float(losses.mean()), gap_bound=float(bound),
                    oracle_calls=2 * n, time_s=time.perf_counter() - t0)


# ============================================================================ Proposition 1 warm start
def prop1_warm_start(solver: Solver, lam_new: float, *, gap: float = math.nan,
                     deltas: np.ndarray | None = None, batch_step: bool = False) -> Solver:
    """A new solver at ``lam_new`` <= λ with w kept and α rescaled towards the ground truth
    (Proposition 1, :meth:`Solver.warm_start` ``keep="primal"``), whose block gap estimates
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


# ============================================================================ one solve
_STATUS_NAMES = {s: s.name.lower() for s in Status}


def _solve(solver: Solver, target: float, *, heuristic: bool, verify: bool, max_passes: float,
           time_limit: float, should_stop, check_every: float = 1.0, check_factor: float = 1.0):
    """Run ``solver`` until its gap is <= target; returns (result, status name).

    The solver advances in chunks of ``check_every`` effective passes (``Solver.run`` with a
    growing pass budget). After each chunk the stale gap sum is compared with the target:
    heuristic mode stops once it is <= target; exact mode, once it is <= check_factor·target,
    runs a counted exact gap pass (the authors' "true gap when converged") and stops if the
    exact gap is <= target. A failed check doubles the work required before the next one (so
    failed checks cost at most as much as the solver work). The solver's periodic gap checks
    (``gap_check``) also stop it. Exact mode ends with an exact gap of the final iterate (as
    ``run(final_gap_check=True)``)."""
    n = solver.n
    t_begin = time.perf_counter()
    chunk = max(check_every, 1.0 / n)
    next_check_calls = 0
    backoff = max(1, int(round(check_every * n)))
    fresh = False
    status = None
    while status is None:
        if solver.effective_passes >= max_passes:
            status = "max_passes"
            break
        remaining = time_limit - (time.perf_counter() - t_begin)
        if remaining <= 0:
            status = "time_limit"
            break
        budget = min(max_passes, solver.effective_passes + chunk)
        res = solver.run(max_passes=budget, time_limit=remaining, gap_threshold=target,
                         final_gap_check=False, should_stop=should_stop)
        if res.status == Status.CONVERGED:  # a periodic exact gap check
            status, fresh = "converged", True
            break
        if res.status in (Status.TIME_LIMIT, Status.STOPPED):
            status = _STATUS_NAMES[res.status]
            break
        stale = solver.heuristic_gap
        if heuristic and stale <= target:
            status = "converged_heuristic"
            break
        if not heuristic and stale <= check_factor * target:
            if verify and solver.oracle_calls >= next_check_calls:
                if solver.exact_gap(count=True, store_corners=True).gap <= target:
                    status, fresh = "converged", True
                    break
                next_check_calls = solver.oracle_calls + backoff
                backoff *= 2
        if res.status == Status.MAX_PASSES and budget >= max_passes:  # the point's budget is spent (one
            status = "max_passes"  # below a single oracle call makes no step, so this is the only end)
    if not heuristic and not fresh:
        solver.exact_gap(count=True, store_corners=True)
    solver.status = {"converged": Status.CONVERGED, "converged_heuristic": Status.CONVERGED_HEURISTIC,
                     "max_passes": Status.MAX_PASSES, "time_limit": Status.TIME_LIMIT,
                     "stopped": Status.STOPPED}[status]
    return solver.result(), status


# ============================================================================ points and the path object
@dataclass(frozen=True)
class PathMetric:
    """A problem's headline test metric, recorded at every breakpoint next to the test error
    (column ``test_metric``; its name in the path's ``meta["test_metric"]``).

    Attributes
    ----------
    name : str
        E.g. ``"chunk F1"`` (CoNLL-2000: conlleval's chunk-level F1).
    fn : callable(w) -> float
        Its value at w (float64 (d,)) on the test set, a fraction in [0, 1] (or NaN).
    higher_is_better : bool
        True for F1 and accuracies, False for errors.
    """

    name: str
    fn: Callable[[np.ndarray], float]
    higher_is_better: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"PathMetric name must be a non-empty string, got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(f"PathMetric fn must be callable(w) -> float, got {type(self.fn).__name__}")

    def describe(self) -> dict:
        """JSON-ready name and direction (stored in the path's metadata)."""
        return {"name": self.name, "higher_is_better": bool(self.higher_is_better)}


class _Tests:
    """Test data and the optional headline metric of the diagnostics (outside the timed work)."""

    __slots__ = ("data", "metric")

    def __init__(self, data=None, metric: PathMetric | None = None):
        if metric is not None and not isinstance(metric, PathMetric):
            raise TypeError(f"test_metric must be a PathMetric (name, fn(w) -> float), got {type(metric).__name__}")
        self.data, self.metric = data, metric


def _as_tests(test_data, test_metric) -> _Tests:
    return test_data if isinstance(test_data, _Tests) else _Tests(test_data, test_metric)


def _metric_meta(meta: dict, test_metric: PathMetric | None) -> dict:
    if test_metric is not None:
        meta = dict(meta)
        meta["test_metric"] = test_metric.describe()
    return meta


@dataclass
class PathPoint:
    """One breakpoint of a path (or one grid point), as soon as it is computed.

    Attributes
    ----------
    index : int
    lam : float
        λ_j.
    w : ndarray (d,)
        w_j (ε-path: κε-approximate at λ_j).
    rho : float
        λ_j / λ_{j-1} (NaN for the first point).
    gap : float
        The gap the algorithm used: exact for the ε-path and grid search, the stale sum for the
        heuristic path, Alg. 6's bound κε at λ_∞.
    exact_gap, primal, dual : float
        Exact duality gap, primal and dual objectives at λ_j (NaN where not computed).
    ell : float
        ℓ = Σ_i ℓ_i of the dual point (dual objective = ℓ − λ/2‖w‖²).
    delta : float
        Δ = ℓ − λ‖w‖² (Proposition 1).
    next_lam : float
        ρ_{j+1}λ_j: w_j is ε-approximate on [next_lam, λ_j] (0: for all λ below λ_j; NaN: grid
        points, or the point is not certified).
    passes, oracle_calls : float, int
        Effective passes / max-oracle calls spent on this point (Alg. 6 counts 2 passes).
    time_s, solver_time_s : float
        Wall time of this point's work (warm start, rescaling, solver; test error excluded) and
        the solver's share of it.
    cum_passes, cum_time_s : float
        Cumulative from the start of the path / grid search.
    test_error : float
        Test error of w_j (NaN without test data).
    test_metric : float
        The problem's headline test metric of w_j when one is given (:class:`PathMetric`, e.g.
        CoNLL's chunk F1; its name in the path's ``meta["test_metric"]``), else NaN. Paths and
        stores written before it existed read back with NaN.
    status : str
        "init" (λ_∞), "converged" (exact gap <= target), "converged_heuristic", "max_passes",
        "time_limit", "stopped".
    certified : bool
        The point was accepted: gap <= ε at λ_j. A certificate only where ``gap`` is the exact
        duality gap (ε-path, grid); on the heuristic path ``gap`` is the stale sum Σ_i ĝ_i
        (status "converged_heuristic"), which certifies nothing: its true gap can exceed ε
        (Paper: App. K). :meth:`PathResult.summary` counts the two apart.
    end : str
        Why the path ends at this point ("" if it goes on): "rho<=0", "lam_min", "not_converged",
        "time_limit", "stopped", "max_breakpoints", "stalled".
    solver : Solver or None
        The live solver at this point (only with ``keep_solver=True``; not saved). Read it before
        asking for the next point or copy it.
    """

    index: int
    lam: float
    w: np.ndarray
    rho: float = math.nan
    gap: float = math.nan
    exact_gap: float = math.nan
    primal: float = math.nan
    dual: float = math.nan
    ell: float = math.nan
    delta: float = math.nan
    next_lam: float = math.nan
    passes: float = 0.0
    oracle_calls: int = 0
    time_s: float = 0.0
    solver_time_s: float = 0.0
    cum_passes: float = 0.0
    cum_time_s: float = 0.0
    test_error: float = math.nan
    test_metric: float = math.nan
    status: str = ""
    certified: bool = False
    end: str = ""
    solver: Solver | None = field(default=None, repr=False, compare=False)

    def row(self) -> dict:
        """The scalar fields as a dict (JSON-friendly up to NaN)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("w", "solver")}


_FLOAT_COLS = ("lam", "rho", "gap", "exact_gap", "primal", "dual", "ell", "delta", "next_lam", "passes",
               "time_s", "solver_time_s", "cum_passes", "cum_time_s", "test_error", "test_metric")
#: columns added after the format was first written: NaN when an older file or store lacks them
_OPTIONAL_COLS = ("test_metric",)
_INT_COLS = ("index", "oracle_calls")
_BOOL_COLS = ("certified",)
_STR_COLS = ("status", "end")


class RegPath:
    """A regularization path (kind "eps" or "heuristic") or a grid search (kind "grid").

    Build it from :func:`regularization_path` / :func:`grid_search`, or incrementally with
    :meth:`append` while consuming :func:`iter_path` / :func:`iter_grid`.

    Arrays (one entry per point, in computation order, λ decreasing): ``lams``, ``W`` (J, d) and
    the columns of :class:`PathPoint` through :meth:`column` (``cum_passes``, ``cum_time_s``,
    ``test_error``, ...).

    A path backed by an on-disk store (:mod:`gaplab.core.pathstore`; written with ``store=`` by
    :func:`regularization_path` / :func:`grid_search`, opened with :meth:`open`) keeps only its
    rows in memory: ``w_at(λ)`` and :meth:`point` read the one breakpoint file they need (the
    last two read are cached), iteration (``for p in path``) reads one breakpoint at a time,
    and only :attr:`W` materializes all of them.
    """

    #: breakpoint weights read from a store kept in memory (w_at near one λ reads nothing twice)
    STORE_CACHE = 2

    def __init__(self, kind: str, meta: dict | None = None, points=()):
        if kind not in ("eps", "heuristic", "grid"):
            raise ValueError(f"kind must be 'eps', 'heuristic' or 'grid', got {kind!r}")
        self.kind = kind
        self.meta = dict(meta or {})
        self._rows: list[dict] = []
        self._W: list[np.ndarray] = []
        #: solver of the last point, kept on an interrupted or checkpointed path (saved with it)
        self.resume_solver: Solver | None = None
        self._resume_arrays: dict | None = None
        self._store: Path | None = None       # the directory of an on-disk store (lazy weights)
        self._files: list[dict] = []          # its manifest's file entries, one per point
        self._writer = None                   # PathStoreWriter while the path is being written
        self._cache: dict[int, np.ndarray] = {}
        for p in points:
            self.append(p)

    # ------------------------------------------------------------------ building
    def append(self, point: PathPoint) -> None:
        if self._rows and not point.lam < self._rows[-1]["lam"]:
            raise ValueError(f"points must have decreasing λ; got {point.lam} after {self._rows[-1]['lam']}")
        row = point.row()
        if self._writer is not None:  # streamed to the store: nothing of w stays in memory
            # the writer owns the rows (self._rows is its list): the row is listed in memory only
            # once it is on disk, so no copy can fall out of step with the store
            self._writer.append(row, point.w, meta=jsonsafe.encode(self.meta))
            self._W.append(None)
            return
        self._rows.append(row)
        self._W.append(np.array(point.w, dtype=np.float64))

    def _sync_store(self) -> None:
        """Rewrite the store's manifest after a change of the metadata or of the last row (the
        rows are the writer's own)."""
        if self._writer is not None:
            self._writer.update(meta=jsonsafe.encode(self.meta))

    def _w(self, j: int) -> np.ndarray:
        """w_j (read from the store when the path is backed by one; do not modify)."""
        w = self._W[j] if j < len(self._W) else None
        if w is not None:
            return w
        w = self._cache.get(j)
        if w is None:
            w = pst.read_weights(self._store, j, self._files[j], int(self.meta["d"]), float(self._rows[j]["lam"]))
            w.setflags(write=False)
            while len(self._cache) >= self.STORE_CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[j] = w
        return w

    def __iter__(self) -> Iterator[PathPoint]:
        """The points in order, each with its w (a store-backed path reads one at a time)."""
        for j in range(len(self._rows)):
            yield self.point(j)

    @property
    def store(self) -> Path | None:
        """The directory of the on-disk store backing this path (None: in memory)."""
        return self._store

    def __len__(self) -> int:
        return len(self._rows)

    def snapshot(self) -> "RegPath":
        """A consistent copy of the points appended so far (for a UI thread reading while a worker
        thread appends)."""
        if self._store is not None:
            k = min(len(self._rows), len(self._files))
            W = [None] * k
        else:
            k = min(len(self._rows), len(self._W))
            W = list(self._W[:k])
        out = RegPath(self.kind, self.meta)
        out._rows = [dict(r) for r in self._rows[:k]]
        out._W = W
        out._store, out._files = self._store, list(self._files[:k])
        return out

    def __repr__(self) -> str:
        if not self._rows:
            return f"RegPath(kind={self.kind!r}, empty)"
        return (f"RegPath(kind={self.kind!r}, {len(self)} points, λ {self.lams[0]:.4g} -> {self.lams[-1]:.4g}, "
                f"{self.column('cum_passes')[-1]:.1f} passes, {self.column('cum_time_s')[-1]:.2f} s, "
                f"end={self.end_reason!r})")

    # ------------------------------------------------------------------ arrays
    @property
    def lams(self) -> np.ndarray:
        return np.array([r["lam"] for r in self._rows], dtype=np.float64)

    @property
    def W(self) -> np.ndarray:
        if not self._W:
            return np.zeros((0, int(self.meta.get("d", 0))))
        return np.vstack([self._w(j) for j in range(len(self._W))])

    def column(self, name: str) -> np.ndarray:
        if name in _FLOAT_COLS:
            return np.array([r[name] for r in self._rows], dtype=np.float64)
        if name in _INT_COLS:
            return np.array([r[name] for r in self._rows], dtype=np.int64)
        if name in _BOOL_COLS:
            return np.array([r[name] for r in self._rows], dtype=bool)
        if name in _STR_COLS:
            return np.array([r[name] for r in self._rows], dtype=str)
        raise KeyError(f"unknown column {name!r}")

    def rows(self) -> list[dict]:
        return [dict(r) for r in self._rows]

    def point(self, j: int) -> PathPoint:
        r = dict(self._rows[j])
        return PathPoint(w=np.array(self._w(j), dtype=np.float64), **r)

    @property
    def total_passes(self) -> float:
        return float(sum(r["passes"] for r in self._rows))

    @property
    def total_time_s(self) -> float:
        return float(sum(r["time_s"] for r in self._rows))

    @property
    def lam_inf(self) -> float:
        """λ_∞ (first breakpoint) of a path."""
        return float(self._rows[0]["lam"]) if self._rows else math.nan

    @property
    def end_reason(self) -> str:
        """Why the path ended ("stopped" when the generator was abandoned)."""
        if not self._rows:
            return str(self.meta.get("end", "empty"))
        return self._rows[-1]["end"] or "stopped"

    @property
    def lam_end(self) -> float:
        """Smallest λ the path covers: w_at works on [lam_end, ∞) (NaN for a grid)."""
        if self.kind == "grid" or not self._rows:
            return math.nan
        for r in reversed(self._rows):
            if r["certified"]:
                return float(r["next_lam"]) if math.isfinite(r["next_lam"]) else float(r["lam"])
        return float(self._rows[0]["lam"])

    # ------------------------------------------------------------------ queries
    def piece_at(self, lam: float) -> tuple[int, float]:
        """(j, scale) with w_at(lam) = scale · W[j] (Paper: Sec. 4: (λ_1/λ)·w_1 above the first
        breakpoint, then piecewise constant)."""
        lam = validate.positive("lam", lam)
        if not self._rows:
            raise ValueError("the path is empty")
        lams = self.lams
        if self.kind == "grid":
            j = int(np.argmin(np.abs(np.log(lams) - math.log(lam))))
            if abs(lams[j] - lam) > 1e-12 * lam:
                raise ValueError(f"λ={lam} is not on the grid (nearest {lams[j]})")
            return j, 1.0
        if lam >= lams[0]:
            return 0, float(lams[0] / lam)
        cert = self.column("certified")
        ok = np.flatnonzero((lams >= lam) & cert)
        j = int(ok[-1])
        lo = self._rows[j]["next_lam"]
        if not (lam >= lo or (math.isnan(lo) and lam >= lams[j])):
            raise ValueError(f"λ={lam} is below the end of the path (λ_end = {self.lam_end})")
        return j, 1.0

    def w_at(self, lam: float) -> np.ndarray:
        """The path's weights at λ (ε-approximate for λ >= lam_end on an ε-path)."""
        j, scale = self.piece_at(lam)
        return scale * self._w(j)

    def gap_at(self, lam: float) -> float:
        """Duality gap at λ of the path's primal-dual pair (Proposition 1): g_j + (1 − λ/λ_j)Δ_j on
        [λ_{j+1}, λ_j]; above λ_∞, the bound (λ_∞/λ)·g_0. Exact for an ε-path, where g_j is exact."""
        j, scale = self.piece_at(lam)
        r = self._rows[j]
        if self.kind != "grid" and j == 0 and lam >= r["lam"]:
            return float(r["gap"] * scale)
        return float(r["gap"] + (1.0 - lam / r["lam"]) * r["delta"])

    def duality_gap(self, model, lam: float) -> tuple[float, float, float]:
        """(gap, primal, dual) at λ, computed afresh: primal of w_at(λ) from n max-oracle calls,
        dual of the path's dual point at λ (α_j rescaled by Proposition 1: D = ρℓ_j − λ/2‖w_j‖²;
        above λ_∞ the dual point α_∞ is kept: D = ℓ_0 − λ/2‖w‖²)."""
        from .models import label_score, max_oracle
        j, scale = self.piece_at(lam)
        w = scale * self._w(j)
        n = model.arrays.n
        hinge = 0.0
        for i in range(n):
            _, val = max_oracle(model, i, w)
            hinge += val - label_score(model, i, w, model.ground_truth(i))
        primal = 0.5 * lam * float(w @ w) + hinge / n
        r = self._rows[j]
        rho = 1.0 if (j == 0 and lam >= r["lam"]) else lam / r["lam"]
        dual = rho * r["ell"] - 0.5 * lam * float(w @ w)
        return primal - dual, primal, dual

    def best(self, column: str = "test_error") -> PathPoint:
        """The point with the smallest value of a column (default test error)."""
        vals = self.column(column)
        if not np.isfinite(vals).any():
            raise ValueError(f"no finite {column} on this path")
        return self.point(int(np.nanargmin(vals)))

    # ------------------------------------------------------------------ persistence (no pickle)
    def save(self, file, *, solver: Solver | None = None) -> Path | None:
        """np.savez with λ_j, W (J×d), one array per column and the JSON metadata.

        Parameters
        ----------
        file : str, os.PathLike or binary file object
            A path gets ``.npz`` appended when missing (as ``np.savez`` does) and is written
            atomically (temporary file, fsync, ``os.replace``): a failed write leaves the previous
            file intact. A file object is written as it is.
        solver : Solver, optional
            The solver of the last point (``point.solver``). Its whole state is saved with the
            path so that :func:`resume_path` (``gaplab path --resume``) can continue it exactly.
            ``resume_solver`` is used when not given (set on an interrupted path).

        Returns
        -------
        Path or None
            The path written (None for a file object).
        """
        arrays = {"lams": self.lams, "W": self.W}
        for c in _FLOAT_COLS + _INT_COLS + _BOOL_COLS:
            arrays[c] = self.column(c)
        for c in _STR_COLS:
            arrays[c] = np.array([r[c] for r in self._rows], dtype="U32").reshape(len(self))
        meta = dict(self.meta)
        meta.update(kind=self.kind, format_version=FORMAT_VERSION)
        solver = solver if solver is not None else self.resume_solver
        if solver is not None and len(self):
            info, state = _solver_state(solver)
            info["point"] = len(self) - 1
            meta["resume_state"] = info
            arrays.update(state)
        arrays["meta_json"] = np.array(json.dumps(jsonsafe.encode(meta), allow_nan=False))
        if hasattr(file, "write"):
            np.savez(file, **arrays)
            return None
        target = npz_path(file)
        with atomic_write(target, "wb") as fh:
            np.savez(fh, **arrays)
        return target

    @classmethod
    def load(cls, file) -> "RegPath":
        """Load a path saved by :meth:`save`.

        Raises
        ------
        PathFileError
            (a ValueError) naming the file and the problem, for anything that is not a valid
            path file: not an npz, missing or misshapen arrays, broken metadata, an unknown kind
            or version, λ not finite, not > 0 or not strictly decreasing, W with the wrong shape.
        FileNotFoundError
            If the file does not exist.
        """
        name = str(file) if not hasattr(file, "read") else getattr(file, "name", "<file object>")

        def bad(problem):
            return PathFileError(f"{name}: not a valid gaplab path file: {problem}")

        try:
            if not hasattr(file, "read") and zipfile.is_zipfile(file):
                pst.check_npz_members(file)  # sizes from the headers, before anything is allocated
            z = np.load(file, allow_pickle=False)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise bad(f"cannot read it as .npz ({type(exc).__name__}: {exc})") from None
        if not hasattr(z, "files"):
            raise bad("it holds a single array, not an npz archive")
        with z:
            try:
                return cls._from_npz(z, bad)
            except PathFileError:
                raise
            except (KeyError, IndexError, ValueError, TypeError, OSError, EOFError, zipfile.BadZipFile,
                    zlib.error, RecursionError) as exc:
                raise bad(f"{type(exc).__name__}: {exc}") from None

    @classmethod
    def _from_npz(cls, z, bad) -> "RegPath":
        needed = ("meta_json", "lams", "W") + _FLOAT_COLS + _INT_COLS + _BOOL_COLS + _STR_COLS
        missing = [k for k in needed if k not in z.files and k not in _OPTIONAL_COLS]
        if missing:
            raise bad(f"missing arrays {', '.join(missing)}")
        try:
            meta = json.loads(str(z["meta_json"]))
        except (json.JSONDecodeError, ValueError) as exc:
            raise bad(f"the metadata is not valid JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise bad("the metadata is not a JSON object")
        kind = meta.pop("kind", None)
        version = meta.pop("format_version", None)
        if version != FORMAT_VERSION:
            raise bad(f"unsupported format version {version!r} (expected {FORMAT_VERSION})")
        if kind not in ("eps", "heuristic", "grid"):
            raise bad(f"unknown kind {kind!r} (expected 'eps', 'heuristic' or 'grid')")
        out = cls(kind, meta)
        W = z["W"]
        lams = z["lams"]
        if lams.ndim != 1 or not np.issubdtype(lams.dtype, np.floating):
            raise bad(f"lams must be a 1-D float array, got shape {lams.shape} dtype {lams.dtype}")
        J = lams.shape[0]
        if W.ndim != 2 or W.shape[0] != J or not np.issubdtype(W.dtype, np.floating):
            raise bad(f"W must be a float array of shape ({J}, d), got shape {W.shape} dtype {W.dtype}")
        if "d" in meta and isinstance(meta["d"], int) and J and W.shape[1] != meta["d"]:
            raise bad(f"W has {W.shape[1]} columns, the metadata says d = {meta['d']}")
        if not np.all(np.isfinite(lams)) or np.any(lams <= 0):
            raise bad("every λ must be finite and > 0")
        if J > 1 and not np.all(np.diff(lams) < 0):
            raise bad("λ must be strictly decreasing")
        if not np.all(np.isfinite(W)):
            raise bad("W holds NaN or inf")
        cols = {c: z[c] if c in z.files else np.full(J, math.nan)
                for c in _FLOAT_COLS + _INT_COLS + _BOOL_COLS + _STR_COLS}
        for c, a in cols.items():
            if a.shape != (J,):
                raise bad(f"column {c!r} has shape {a.shape}, expected ({J},)")
        if not np.array_equal(cols["lam"], lams):
            raise bad("the lam column differs from lams")
        for j in range(J):
            r = {}
            for c in _FLOAT_COLS:
                r[c] = float(cols[c][j])
            for c in _INT_COLS:
                r[c] = int(cols[c][j])
            r["certified"] = bool(cols["certified"][j])
            for c in _STR_COLS:
                r[c] = str(cols[c][j])
            out._rows.append(r)
            out._W.append(W[j].astype(np.float64))
        state = meta.get("resume_state")
        if state is not None:
            miss = [k for k in _STATE_FIELDS if _STATE_PREFIX + k not in z.files]
            if miss or not isinstance(state, dict):
                raise bad(f"the saved solver state is incomplete (missing {', '.join(miss[:5])})")
            out._resume_arrays = {k[len(_STATE_PREFIX):]: np.array(z[k]) for k in z.files
                                  if k.startswith(_STATE_PREFIX)}
        return out

    # ------------------------------------------------------------------ the on-disk store
    @classmethod
    def open(cls, path, *, model=None, dataset: str | None = None) -> "RegPath":
        """Open a saved path: a path store (a directory, :mod:`gaplab.core.pathstore`) lazily, its
        rows only (``lams``, ``gap_at``, columns; ``w_at(λ)`` reads the one breakpoint file it
        needs), or a single-file ``.npz`` of :meth:`save` (loaded whole, as :meth:`load`).

        Parameters
        ----------
        path : str or os.PathLike
        model : optional
            If given, the store must have been computed on a model with the same n and d.
        dataset : str, optional
            If given, the store's ``meta["dataset"]`` must be this name.

        Raises
        ------
        PathStoreError
            Naming the store: not a store, broken manifest, another dataset, n or d.
        PathFileError
            For a bad ``.npz`` file (see :meth:`load`).
        """
        p = Path(os.fspath(path))
        if not p.exists():
            raise FileNotFoundError(f"{str(p)!r} does not exist (expected a path store directory or a path .npz file)")
        out = cls._open_store(p) if p.is_dir() else cls.load(path)
        name = f"path store {str(p)!r}" if p.is_dir() else str(p)
        err = PathStoreError if p.is_dir() else PathFileError
        if dataset is not None and out.meta.get("dataset") not in (None, dataset):
            raise err(f"{name} was computed on the dataset {out.meta.get('dataset')!r}, not {dataset!r}")
        if model is not None:
            n, d = int(model.arrays.n), int(model.arrays.d)
            if out.meta.get("n") != n or out.meta.get("d") != d:
                raise err(f"{name} was computed on a model with n = {out.meta.get('n')}, d = {out.meta.get('d')}; "
                          f"this model has n = {n}, d = {d} (another dataset?)")
        return out

    @classmethod
    def _open_store(cls, root: Path) -> "RegPath":
        man = pst.read_manifest(root)
        meta = dict(man["meta"])
        if meta.get("d") != man["d"]:
            raise PathStoreError(f"path store {str(root)!r}: the metadata says d = {meta.get('d')}, the manifest "
                                 f"d = {man['d']}")
        out = cls(man["kind"], meta)
        for j, r in enumerate(man["rows"]):
            try:
                row = {c: float(r[c] if c in r or c not in _OPTIONAL_COLS else math.nan) for c in _FLOAT_COLS}
                row.update({c: int(r[c]) for c in _INT_COLS})
                row["certified"] = bool(r["certified"])
                row.update({c: str(r[c]) for c in _STR_COLS})
            except (KeyError, TypeError, ValueError) as exc:
                raise PathStoreError(f"path store {str(root)!r}, breakpoint {j}: broken row in the manifest "
                                     f"({type(exc).__name__}: {exc})") from None
            f = man["files"][j]
            if not isinstance(f, dict) or not isinstance(f.get("file"), str) or f["file"] != pst.bp_name(j):
                raise PathStoreError(f"path store {str(root)!r}, breakpoint {j}: broken file entry {f!r}")
            if not (root / f["file"]).is_file():
                raise PathStoreError(f"path store {str(root)!r}, breakpoint {j} (λ = {row['lam']:.6g}): the "
                                     f"breakpoint file {f['file']} is missing")
            out._rows.append(row)
            out._W.append(None)
            out._files.append(f)
        out._store = root
        if isinstance(man.get("resume_state"), dict):
            out.meta["resume_state"] = man["resume_state"]
        return out

    def to_store(self, store, *, overwrite: bool = False) -> "RegPath":
        """Write this path to an on-disk path store breakpoint by breakpoint (e.g. to convert a
        single-file ``.npz``) and return it opened lazily (:meth:`open`)."""
        out = RegPath(self.kind, self.meta)
        out._attach_writer(store, overwrite=overwrite)
        try:
            for j in range(len(self)):
                out.append(self.point(j))
        finally:
            out._close_writer()
        return RegPath.open(out.store)

    def save_resume_state(self, solver: Solver | None = None) -> None:
        """Store-backed path: write the solver state of the last point into the store (for
        :func:`resume_path`); ``resume_solver`` when not given."""
        solver = solver if solver is not None else self.resume_solver
        if self._writer is None or solver is None or not self._rows:
            return
        if solver.lam != self._rows[-1]["lam"]:
            return  # not the last breakpoint's solver: a state saved under the wrong breakpoint would resume wrongly
        info, arrays = _solver_state(solver)
        info["point"] = len(self) - 1
        self._writer.write_resume_state(info, {k[len(_STATE_PREFIX):]: v for k, v in arrays.items()},
                                        meta=jsonsafe.encode(self.meta))

    @property
    def io_stats(self) -> dict:
        """{"io_time_s", "bytes_written"} of the store writes made by this process (zeros for an
        in-memory path): encoding, writing and fsync of breakpoints, manifests and solver states."""
        w = self._writer
        if w is not None:
            return {"io_time_s": w.io_time_s, "bytes_written": w.bytes_written}
        return dict(self._io_stats) if hasattr(self, "_io_stats") else {"io_time_s": 0.0, "bytes_written": 0}

    def attach_store(self, store, *, overwrite: bool = False, compress_values: bool = False) -> None:
        """Stream every point appended from now on to the path store ``store`` (a directory; see
        :mod:`gaplab.core.pathstore`): :meth:`append` writes it atomically and keeps only its row
        in memory. Call :meth:`close_store` when done."""
        self._attach_writer(store, overwrite=overwrite, compress_values=compress_values)

    def close_store(self) -> None:
        """Stop writing (the path stays readable from its store)."""
        self._close_writer()

    def _attach_writer(self, store, *, mode: str = "new", overwrite: bool = False,
                       compress_values: bool = False) -> None:
        """Stream the points appended from now on to the store ``store`` (a directory)."""
        if len(self) and mode == "new":
            raise ValueError("attach a store before the first point")
        writer = pst.PathStoreWriter(store, self.kind, jsonsafe.encode(self.meta), mode=mode, overwrite=overwrite,
                                     compress_values=compress_values)
        if mode == "new":
            self._rows, self._files = writer.man["rows"], writer.man["files"]
        else:  # continue from this path's rows (a prefix of the store's; the later files are removed)
            writer.adopt(self._rows, self._files)
        del self._W[len(self._rows):]
        self._writer = writer
        self._store = writer.root

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._io_stats = {"io_time_s": self._writer.io_time_s, "bytes_written": self._writer.bytes_written}
            self._writer = None

    def summary(self) -> dict:
        stale = (np.array([r["status"] == "converged_heuristic" for r in self._rows], dtype=bool)
                 if len(self) else np.zeros(0, dtype=bool))
        return jsonsafe.encode({
            "kind": self.kind, "points": len(self), "lam_first": self.lams[0] if len(self) else None,
            "lam_last": self.lams[-1] if len(self) else None, "lam_end": self.lam_end,
            "end": self.end_reason, "total_passes": self.total_passes, "total_time_s": self.total_time_s,
            # points whose gap <= ε is exact; a heuristic path's points pass on stale sums only
            "certified": int(np.sum(self.column("certified") & ~stale)) if len(self) else 0,
            "accepted_on_stale_gaps": int(np.sum(self.column("certified") & stale)) if len(self) else 0,
        })


# ============================================================================ the path (Alg. 6-7)
def _path_config(config, overrides) -> PathConfig:
    if config is None:
        config = PathConfig(**overrides)
    elif isinstance(config, PathConfig):
        if overrides:
            config = config.replace(**overrides)
    else:
        raise TypeError(f"config must be a PathConfig, got {type(config).__name__}")
    return config


def _next_step(point: PathPoint, eps: float, lam_min: float) -> None:
    """Fill next_lam / end of a solved point (Alg. 7 lines 4-12)."""
    g, D = point.gap, point.delta
    point.certified = bool(g <= eps)
    if not point.certified:
        point.next_lam = math.nan
        point.end = "not_converged"
        return
    tau = eps * (1.0 - _TAU_SAFETY) - g
    if tau <= 0:
        point.next_lam = point.lam
        point.end = "stalled"
        return
    if D <= tau:  # ρ <= 0: w_j is ε-approximate for every λ < λ_j
        point.next_lam = 0.0
        point.end = "rho<=0"
        return
    rho = 1.0 - tau / D
    point.next_lam = rho * point.lam
    if point.next_lam < lam_min:
        point.end = "lam_min"


def iter_path(model, config: PathConfig | None = None, solver_config: SolverConfig | None = None, *,
              test_data=None, should_stop: Callable[[], bool] | None = None, keep_solver: bool = False,
              test_metric: PathMetric | None = None, **overrides) -> Iterator[PathPoint]:
    """Compute the regularization path, yielding each breakpoint as soon as it is computed.

    Parameters
    ----------
    model : ChainModel or MulticlassModel
    config : PathConfig, optional
        Path settings; keyword ``overrides`` (eps=, kappa=, lam_min=, heuristic=, ...) replace
        single fields (validated: ValueError on bad values).
    solver_config : SolverConfig, optional
        The SSVM solver run at every breakpoint (any sampling / step / cache); default BCFW + gap
        sampling. Its lam, gap_threshold, max_passes and time_limit are set by the path.
    test_data : SequenceData, optional
        Test error of every w_j (outside the timed work).
    should_stop : callable() -> bool, optional
        Polled during the solver runs and between breakpoints (app's Stop button).
    keep_solver : bool
        Attach the live solver to each yielded point (``point.solver``).
    test_metric : PathMetric, optional
        A headline test metric recorded at every breakpoint (``point.test_metric``, outside the
        timed work), e.g. CoNLL's chunk F1: ``get_problem(name).path_metric(model, test)``.

    Yields
    ------
    PathPoint
        λ_∞ first (Alg. 6), then one per induction step (Alg. 7). The last one has ``end`` set
        unless the generator is closed or ``should_stop`` fires between breakpoints.
    """
    _check_model(model)
    cfg = _path_config(config, overrides)
    scfg = _as_solver_config(solver_config)
    return _path_points(model, cfg, scfg, _as_tests(test_data, test_metric), should_stop, keep_solver)


def _check_model(model):
    if not hasattr(model, "arrays"):
        raise TypeError(f"model must be a gaplab model (ChainModel, MulticlassModel), got {type(model).__name__}")
    box = _model_box(model)
    if box:  # only boxes whose finite bounds are all 0 (w_P >= 0, quadratic weights >= 0) keep Prop. 1
        check_path_box(box["lb"], box["ub"])


class _Clock:
    """Seconds the path has used: wall time since the start minus the excluded diagnostics, plus
    ``offset`` (the time of the saved part of a resumed path)."""

    def __init__(self, offset: float = 0.0):
        self.t_start = time.perf_counter()
        self.excluded = 0.0
        self.offset = float(offset)

    def used(self) -> float:
        return time.perf_counter() - self.t_start - self.excluded + self.offset


def _path_points(model, cfg: PathConfig, scfg: SolverConfig, tests: _Tests, should_stop, keep_solver):
    eps, kappa = cfg.eps, cfg.kappa
    target = kappa * eps
    clock = _Clock()  # diagnostics (test error, true gaps) are not part of the path's cost

    # ---- initialization (Alg. 6)
    t0 = time.perf_counter()
    init = init_reg_path(model, eps, kappa)
    solver = _new_solver(model, scfg.replace(lam=init.lam_inf, gap_threshold=target,
                                        max_passes=cfg.max_passes_per_breakpoint, time_limit=math.inf))
    solver.set_vertices(init.y_tilde)
    n = solver.n
    point = PathPoint(index=0, lam=init.lam_inf, w=solver.w, gap=init.gap_bound,
                      passes=init.oracle_calls / n, oracle_calls=init.oracle_calls,
                      time_s=time.perf_counter() - t0, solver_time_s=0.0, status="init")
    point.ell, point.delta = _ell_delta(solver)
    point.dual = solver.dual_objective()
    point.cum_passes, point.cum_time_s = point.passes, point.time_s
    clock.excluded += _diagnostics(point, solver, model, tests, cfg.true_gaps)
    _next_step(point, eps, cfg.lam_min)
    _budget_end(point, cfg, clock.used(), should_stop)
    if keep_solver:
        point.solver = solver
    yield point
    yield from _induction_points(model, cfg, solver, point, tests, should_stop, keep_solver, clock)


def _induction_points(model, cfg: PathConfig, solver: Solver, point: PathPoint, tests, should_stop,
                      keep_solver, clock: _Clock):
    """The breakpoints after ``point`` (solved by ``solver``), until the path ends (Alg. 7)."""
    eps = cfg.eps
    exact = not cfg.heuristic
    j = point.index
    cum_passes, cum_time = point.cum_passes, point.cum_time_s
    while not point.end:
        if should_stop is not None and should_stop():
            return
        t0 = time.perf_counter()
        lam_new = point.next_lam
        solver, res, status = induction_step(solver, lam_new, cfg, gap=point.gap if exact else math.nan,
                                             time_limit=cfg.time_limit - clock.used(), should_stop=should_stop)
        j += 1
        elapsed = time.perf_counter() - t0
        gap = res.exact_gap if exact else solver.heuristic_gap
        rho = lam_new / point.lam
        point = PathPoint(index=j, lam=lam_new, w=res.w, rho=rho, gap=gap, passes=res.effective_passes,
                          oracle_calls=res.oracle_calls, time_s=elapsed, solver_time_s=res.wall_time_s,
                          status=status)
        point.ell, point.delta = _ell_delta(solver)
        point.dual = solver.dual_objective()
        if exact:
            point.exact_gap, point.primal = res.exact_gap, res.primal
        cum_passes += point.passes
        cum_time += point.time_s
        point.cum_passes, point.cum_time_s = cum_passes, cum_time
        clock.excluded += _diagnostics(point, solver, model, tests, cfg.true_gaps and not exact)
        _next_step(point, eps, cfg.lam_min)
        if status in ("time_limit", "stopped") and point.end in ("", "not_converged"):
            point.end = status
        _budget_end(point, cfg, clock.used(), should_stop)
        if not point.end and j + 1 >= cfg.max_breakpoints:
            point.end = "max_breakpoints"
        if keep_solver:
            point.solver = solver
        yield point


def induction_step(solver: Solver, lam_new: float, config: PathConfig, *, gap: float = math.nan,
                   time_limit: float = math.inf, should_stop: Callable[[], bool] | None = None):
    """One induction step of the path (Paper: Alg. 7 lines 13-16), exactly as :func:`iter_path`
    takes it: a Proposition-1 warm start of ``solver`` to ``lam_new`` (w kept, α rescaled towards
    the ground truth, block gap estimates moved by (1 − ρ)δ_i), then the SSVM solver run to κε
    with exact gaps (ε-approximate path) or stale gaps (``config.heuristic``).

    Parameters
    ----------
    solver : Solver
        The solver of the previous breakpoint (left unchanged).
    lam_new : float
        λ_{j+1} <= the solver's λ (``PathPoint.next_lam``).
    config : PathConfig
    gap : float
        Exact duality gap of the previous breakpoint (ε-path; NaN for the heuristic path).
    time_limit : float
        Seconds for the solve.
    should_stop : callable() -> bool, optional

    Returns
    -------
    (Solver, Result, str)
        The new solver at ``lam_new``, its result and the stop reason ("converged",
        "converged_heuristic", "max_passes", "time_limit" or "stopped").
    """
    exact = not config.heuristic
    new = prop1_warm_start(solver, lam_new, gap=gap if exact else math.nan, batch_step=config.batch_step)
    res, status = _solve(new, config.kappa * config.eps, heuristic=not exact, verify=config.verify_heuristic_gap,
                         max_passes=config.max_passes_per_breakpoint, time_limit=time_limit,
                         should_stop=should_stop, check_every=config.check_every,
                         check_factor=config.check_factor)
    return new, res, status


def _diagnostics(point, solver, model, tests: _Tests, true_gap: bool) -> float:
    """The extras of a point that are not part of the method's cost: the exact gap where the
    method did not compute one (uncounted pass; Fig. 7), the test error and the headline test
    metric. Returns their seconds, which the caller excludes from the path's time."""
    t1 = time.perf_counter()
    if true_gap:
        ex = solver.exact_gap(count=False)
        point.exact_gap, point.primal = ex.gap, ex.primal
    if tests.data is not None:
        point.test_error = model.error(point.w, tests.data)
    if tests.metric is not None:
        point.test_metric = float(tests.metric.fn(point.w))
    return time.perf_counter() - t1


def _budget_end(point, cfg, used_s, should_stop):
    if point.end:
        return
    if used_s >= cfg.time_limit:
        point.end = "time_limit"
    elif should_stop is not None and should_stop():
        point.end = "stopped"


def _path_meta(model, cfg: PathConfig, scfg: SolverConfig, meta) -> dict:
    out = {"n": int(model.arrays.n), "d": int(model.arrays.d), "path_config": cfg.to_dict(),
           "solver_config": _solver_config_dict(scfg)}
    out.update(meta or {})
    return out


def regularization_path(model, config: PathConfig | None = None, solver_config: SolverConfig | None = None, *,
                        test_data=None, should_stop=None, callback: Callable[[PathPoint], object] | None = None,
                        meta: dict | None = None, checkpoint_every: int = 0, checkpoint_file=None,
                        store=None, overwrite: bool = False, store_compress: bool = False,
                        test_metric: PathMetric | None = None, **overrides) -> RegPath:
    """The whole path (ε-approximate, or heuristic with ``heuristic=True``) as a :class:`RegPath`.
    ``callback(point)`` is called on every breakpoint (CLI table, progress bar); returning True
    stops the path. See :func:`iter_path` for the parameters.

    ``checkpoint_every`` N > 0 with ``checkpoint_file``: every N breakpoints the path so far is
    saved there (atomically) with the solver state of its last breakpoint, so that
    :func:`resume_path` can continue it. On Ctrl-C, :class:`Interrupted` is raised with the
    finished breakpoints as ``exc.partial`` (end reason "interrupted"; ``partial.save(file)``
    keeps the solver state for :func:`resume_path`).

    ``store`` (a directory): stream the breakpoints to an on-disk path store
    (:mod:`gaplab.core.pathstore`), each written atomically as soon as it is certified; the
    returned path keeps only its rows in memory and reads w_j from the store on demand
    (:meth:`RegPath.open` reads it back later). Checkpoints (``checkpoint_every``) and Ctrl-C
    then write the solver state into the store; ``resume_path(store, model)`` continues it.
    ``overwrite``: replace a path already in ``store``; ``store_compress``: deflate the weights'
    values too (about half the store size on CoNLL, more write time)."""
    cfg = _path_config(config, overrides)
    scfg = _as_solver_config(solver_config)
    every = _check_checkpoint(checkpoint_every, checkpoint_file if store is None else store)
    tests = _as_tests(test_data, test_metric)
    path = RegPath("heuristic" if cfg.heuristic else "eps",
                   _metric_meta(_path_meta(model, cfg, scfg, meta), tests.metric))
    if store is not None:
        path._attach_writer(store, overwrite=overwrite, compress_values=store_compress)
    points = iter_path(model, cfg, scfg, test_data=tests, should_stop=should_stop, keep_solver=True)
    return _collect(path, points, callback, first_is_lam_inf=True, checkpoint_every=every,
                    checkpoint_file=checkpoint_file)


def _check_checkpoint(every, file) -> int:
    every = validate.int_at_least("checkpoint_every", every, 0)
    if every and file is None:
        raise ValueError("checkpoint_every needs a checkpoint_file")
    return int(every)


# ============================================================================ grid search
_WARM = {"none": "none", "no": "none", "cold": "none", "primal": "primal", "keep-primal": "primal",
         "keep_primal": "primal", "dual": "dual", "keep-dual": "dual", "keep_dual": "dual"}


def _check_grid(lams) -> np.ndarray:
    if lams is None:
        return default_grid()
    try:
        arr = np.asarray(lams, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"lams must be a sequence of numbers, got {lams!r}") from None
    if arr.size == 0:
        raise ValueError("the λ grid is empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError("every λ of the grid must be finite and > 0")
    if np.any(arr < LAM_MIN) or np.any(arr > LAM_MAX):
        raise ValueError(f"every λ of the grid must lie in [{LAM_MIN:g}, {LAM_MAX:g}] (SolverConfig.lam)")
    if arr.size > 1 and not np.all(np.diff(arr) < 0):
        raise ValueError("the λ grid must be strictly decreasing (largest λ first)")
    return arr


def iter_grid(model, lams=None, *, eps: float = 0.1, warm_start: str = "primal",
              solver_config: SolverConfig | None = None, test_data=None, max_passes_per_point: float = 1000.0,
              time_limit: float = math.inf, verify_heuristic_gap: bool = True, check_every: float = 1.0,
              check_factor: float = 0.8, batch_step: bool = False, should_stop: Callable[[], bool] | None = None,
              keep_solver: bool = False, test_metric: PathMetric | None = None) -> Iterator[PathPoint]:
    """Grid search: solve to exact gap <= ε at each λ of a decreasing grid (default 2^15..2^-15),
    yielding each point as it is computed.

    warm_start : "none" (fresh solver: w = 0, α on the ground truth), "primal" (keep w, rescale α
    by Proposition 1, gap estimates moved accordingly; the paper's choice) or "dual" (keep α,
    w ← (λ_old/λ) w; gap estimates left stale). ``check_every`` and ``check_factor`` as in
    :class:`PathConfig` (the exact gap pass runs once the stale sum is <= check_factor·ε).
    ``test_data`` and ``test_metric`` as in :func:`iter_path`.
    """
    _check_model(model)
    tests = _as_tests(test_data, test_metric)
    lams = _check_grid(lams)
    eps = validate.positive("eps", eps)
    key = str(warm_start).strip().lower() if warm_start is not None else "none"
    if key not in _WARM:
        raise ValueError(f"warm_start must be 'none', 'primal' or 'dual', got {warm_start!r}")
    mode = _WARM[key]
    max_passes_per_point = validate.positive("max_passes_per_point", max_passes_per_point)
    time_limit = validate.positive("time_limit", time_limit, allow_inf=True)
    checked = PathConfig(check_every=check_every, check_factor=check_factor)
    scfg = _as_solver_config(solver_config)
    return _grid_points(model, lams, eps, mode, scfg, tests, max_passes_per_point, float(time_limit),
                        verify_heuristic_gap, checked.check_every, checked.check_factor, batch_step, should_stop,
                        keep_solver)


def _grid_points(model, lams, eps, mode, scfg, tests, max_passes_per_point, time_limit,
                 verify_heuristic_gap, check_every, check_factor, batch_step, should_stop, keep_solver):
    t_start = time.perf_counter()
    excluded = 0.0
    cum_passes = cum_time = 0.0
    solver = None
    prev_gap = math.nan
    for j, lam in enumerate(lams):
        used = time.perf_counter() - t_start - excluded
        if used >= time_limit or (should_stop is not None and should_stop()):
            return
        t0 = time.perf_counter()
        if solver is None or mode == "none":
            solver = _new_solver(model, scfg.replace(lam=float(lam), gap_threshold=eps,
                                                max_passes=max_passes_per_point, time_limit=math.inf))
        elif mode == "primal":
            solver = prop1_warm_start(solver, float(lam), gap=prev_gap, batch_step=batch_step)
        else:
            solver = solver.warm_start(float(lam), keep="dual")
        res, status = _solve(solver, eps, heuristic=False, verify=verify_heuristic_gap,
                             max_passes=max_passes_per_point, time_limit=time_limit - used,
                             should_stop=should_stop, check_every=check_every, check_factor=check_factor)
        elapsed = time.perf_counter() - t0
        prev_gap = res.exact_gap
        point = PathPoint(index=j, lam=float(lam), w=res.w, rho=float(lam / lams[j - 1]) if j else math.nan,
                          gap=res.exact_gap, exact_gap=res.exact_gap, primal=res.primal, dual=res.dual,
                          passes=res.effective_passes, oracle_calls=res.oracle_calls, time_s=elapsed,
                          solver_time_s=res.wall_time_s, status=status)
        point.ell, point.delta = _ell_delta(solver)
        point.certified = bool(res.exact_gap <= eps)
        cum_passes += point.passes
        cum_time += point.time_s
        point.cum_passes, point.cum_time_s = cum_passes, cum_time
        excluded += _diagnostics(point, solver, model, tests, False)
        if j == len(lams) - 1:
            point.end = "done"
        elif status in ("time_limit", "stopped"):
            point.end = status
        elif time.perf_counter() - t_start - excluded >= time_limit:
            point.end = "time_limit"
        elif should_stop is not None and should_stop():
            point.end = "stopped"
        if keep_solver:
            point.solver = solver
        yield point


def grid_search(model, lams=None, *, eps: float = 0.1, warm_start: str = "primal",
                solver_config: SolverConfig | None = None, test_data=None, max_passes_per_point: float = 1000.0,
                time_limit: float = math.inf, verify_heuristic_gap: bool = True, check_every: float = 1.0,
                check_factor: float = 0.8, batch_step: bool = False, should_stop=None,
                callback: Callable[[PathPoint], object] | None = None, meta: dict | None = None,
                store=None, overwrite: bool = False, store_compress: bool = False,
                test_metric: PathMetric | None = None) -> RegPath:
    """Grid search as a :class:`RegPath` of kind "grid" (see :func:`iter_grid`); ``store``: stream
    the points to an on-disk store, as :func:`regularization_path`; ``test_metric``: record a
    headline test metric at every point (:class:`PathMetric`)."""
    lams_arr = _check_grid(lams)
    scfg = _as_solver_config(solver_config)
    m = {"n": int(model.arrays.n), "d": int(model.arrays.d), "eps": float(eps), "warm_start": str(warm_start),
         "grid": lams_arr.tolist(), "check_every": float(check_every), "check_factor": float(check_factor),
         "batch_step": bool(batch_step),
         "solver_config": _solver_config_dict(scfg)}
    m.update(meta or {})
    path = RegPath("grid", _metric_meta(m, test_metric))
    if store is not None:
        path._attach_writer(store, overwrite=overwrite, compress_values=store_compress)
    points = iter_grid(model, lams_arr, eps=eps, warm_start=warm_start, solver_config=scfg, test_data=test_data,
                       max_passes_per_point=max_passes_per_point, time_limit=time_limit,
                       verify_heuristic_gap=verify_heuristic_gap, check_every=check_every,
                       check_factor=check_factor, batch_step=batch_step, should_stop=should_stop,
                       test_metric=test_metric)
    return _collect(path, points, callback)


def _collect(path, points, callback, first_is_lam_inf=False, checkpoint_every: int = 0,
             checkpoint_file=None):
    """Append every point of a path/grid generator to ``path``; ``callback(point)`` returning
    True stops (the point is marked "stopped").

    Every ``checkpoint_every`` points the path so far is saved to ``checkpoint_file`` with the
    solver state of its last point (atomically; resumable with :func:`resume_path`). On Ctrl-C
    (KeyboardInterrupt, also from the callback) the finished points are kept, the last one gets
    the end reason "interrupted" (``path.resume_solver`` holds its solver) and
    :class:`Interrupted` is raised with ``partial=path``."""
    count = 0
    streamed = path._writer is not None
    try:
        for p in points:
            with held_sigint():  # the point, its row and its solver: all recorded, or none
                if first_is_lam_inf and p.index == 0:
                    path.meta["lam_inf"] = p.lam
                path.append(p)  # a store-backed path writes the breakpoint now (atomically)
                path.resume_solver = p.solver
                p.solver = None  # the path keeps the last solver only
            count += 1
            stop = callback is not None and callback(p) is True
            if stop and not p.end:
                path._rows[-1]["end"] = p.end = "stopped"
                path._sync_store()
            if checkpoint_every and count % checkpoint_every == 0 and not path._rows[-1]["end"]:
                if streamed:
                    path.save_resume_state()
                elif checkpoint_file is not None:
                    path.save(checkpoint_file)
            if streamed:
                p.w = None  # nothing of w stays in memory once it is on disk
            if stop:
                break
    except KeyboardInterrupt:
        if path._rows and not path._rows[-1]["end"]:
            path._rows[-1]["end"] = "interrupted"
        elif not path._rows:
            path.meta["end"] = "interrupted"
        if streamed:
            path._sync_store()
            path.save_resume_state()  # the store is the output: keep it resumable
            path._close_writer()
        raise Interrupted(f"{'grid search' if path.kind == 'grid' else 'regularization path'} interrupted "
                          f"after {len(path)} points", partial=path) from None
    except OSError:
        # a write failed (disk full, ...): the store lists exactly the breakpoints written before;
        # keep it resumable from the last of them if there is room for its solver state
        if streamed and path._writer is not None and path._rows and not path._rows[-1]["end"]:
            with contextlib.suppress(OSError):
                path.save_resume_state()
        path._close_writer()
        raise
    except BaseException:
        path._close_writer()
        raise
    if path._rows and path._rows[-1]["end"]:
        path.resume_solver = None  # finished: nothing to resume
        if streamed:
            path._writer.drop_resume_state()
    elif streamed and path.resume_solver is not None:
        path.save_resume_state()  # abandoned mid-way (generator ended): keep it resumable
    path._close_writer()
    return path


# ============================================================================ saving / resuming the solver
def _solver_state(solver: Solver):
    """(JSON info, arrays) of everything a solver needs to continue exactly (state arrays with
    the RNG, counters, the last exact gap pass, the configuration)."""
    info = {
        "config": jsonsafe.encode(asdict(solver.config)),
        "wall_time": float(solver.wall_time),
        "passes_since_check": int(solver.passes_since_check),
        "last_exact_iter": int(solver._last_exact_iter),
        "corners_valid": bool(getattr(solver, "_corners_valid", False)),
        "status": solver.status.name,
        "has_box": bool(solver.S.lb.size),
    }
    arrays = {_STATE_PREFIX + k: np.asarray(v) for k, v in solver.S._asdict().items()}
    ex = solver._last_exact
    if ex is not None:
        info["last_exact"] = {"gap": ex.gap, "primal": ex.primal, "dual": ex.dual}
        arrays[_STATE_PREFIX + "_exact_block_gaps"] = ex.block_gaps
        arrays[_STATE_PREFIX + "_exact_block_deltas"] = ex.block_deltas
    return info, arrays


def _config_from_json(d: dict) -> SolverConfig:
    d = dict(d)

    def num(v):
        return float(v) if isinstance(v, str) else v

    for k in ("lam", "gap_power", "gap_check", "gap_threshold", "max_passes", "time_limit", "drop_tol"):
        if k in d:
            d[k] = num(d[k])
    if isinstance(d.get("cache"), dict):
        d["cache"] = CacheConfig(**{k: num(v) if k in ("factor", "nu") else v for k, v in d["cache"].items()})
    return SolverConfig(**d)


def _restore_solver(model, info: dict, arrays: dict, bad) -> Solver:
    """A solver over ``model`` in the saved state (see :func:`_solver_state`)."""
    box = _model_box(model)
    if bool(info.get("has_box")) != bool(box):
        raise bad("the saved solver's box constraints do not match the model's bounds() (another model?)")
    solver = _new_solver(model, _config_from_json(info["config"]))
    ref = solver.S._asdict()
    state = {}
    for k in _STATE_FIELDS:
        a = arrays[k]
        if a.dtype != ref[k].dtype or a.ndim != ref[k].ndim:
            raise bad(f"saved solver array {k!r} has dtype {a.dtype} / {a.ndim}-D, expected {ref[k].dtype} / "
                      f"{ref[k].ndim}-D")
        state[k] = np.ascontiguousarray(a)
    for k in ("w", "mu", "gap_est", "ell", "counters", "scalars", "rng"):
        if state[k].shape != ref[k].shape:
            raise bad(f"saved solver array {k!r} has shape {state[k].shape}, expected {ref[k].shape} for this "
                      "model (another data set?)")
    if box:
        for k in ("v", "lb", "ub"):
            if state[k].shape != ref[k].shape:
                raise bad(f"saved solver array {k!r} has shape {state[k].shape}, expected {ref[k].shape}")
        if not (np.array_equal(state["lb"], ref["lb"]) and np.array_equal(state["ub"], ref["ub"])):
            raise bad("the saved solver's box constraints differ from the model's bounds()")
    else:
        state["v"] = state["w"]  # no box: w is v (one array)
    solver.S = kr.StateArrays(**state)
    solver.wall_time = float(info["wall_time"])
    solver.passes_since_check = int(info["passes_since_check"])
    solver._last_exact_iter = int(info["last_exact_iter"])
    solver._corners_valid = bool(info["corners_valid"])
    solver.status = Status[info["status"]]
    le = info.get("last_exact")
    if le is not None:
        solver._last_exact = ExactGap(gap=float(le["gap"]), primal=float(le["primal"]), dual=float(le["dual"]),
                                      block_gaps=np.array(arrays["_exact_block_gaps"], dtype=np.float64),
                                      block_deltas=np.array(arrays["_exact_block_deltas"], dtype=np.float64))
    return solver


def resume_path(file, model, *, test_data=None, should_stop=None,
                callback: Callable[[PathPoint], object] | None = None, checkpoint_every: int = 0,
                checkpoint_file=None, test_metric: PathMetric | None = None) -> RegPath:
    """Continue a regularization path saved with its solver state (an interrupted path, or a
    checkpoint: ``gaplab path --checkpoint-every N``), from its last breakpoint, to the end an
    uninterrupted run reaches. The path and solver settings are those saved in the file.

    Parameters
    ----------
    file : str or os.PathLike
        The saved path (.npz).
    model : ChainModel or MulticlassModel
        The model over the same training set (n and d are checked).
    test_data, should_stop, callback, test_metric :
        As in :func:`regularization_path`.
    checkpoint_every, checkpoint_file :
        Save the path (with the solver state) every N new breakpoints.

    Returns
    -------
    RegPath
        The saved points followed by the new ones.

    Raises
    ------
    PathFileError
        If the file is not a path file, holds no solver state, is a grid search or a finished
        path, or does not match the model.
    Interrupted
        On Ctrl-C, with the points so far (resumable again).
    """
    _check_model(model)
    path = RegPath.open(file)
    streamed = path.store is not None

    def bad(problem):
        if streamed:
            return PathStoreError(f"path store {str(file)!r}: cannot resume: {problem}")
        return PathFileError(f"{file}: cannot resume: {problem}")

    if streamed and isinstance(path.meta.get("resume_state"), dict):
        path._resume_arrays = pst.read_resume_arrays(path.store, path.meta["resume_state"])

    n, d = int(model.arrays.n), int(model.arrays.d)
    if path.meta.get("n") != n or path.meta.get("d") != d:
        raise bad(f"it was computed on a model with n={path.meta.get('n')}, d={path.meta.get('d')}; this model has "
                  f"n={n}, d={d}")
    if path.kind == "grid":
        raise bad("it is a grid search (only a regularization path can be resumed)")
    if not len(path):
        raise bad("it holds no breakpoint (start the path again)")
    end = path._rows[-1]["end"]
    if end not in ("", "interrupted"):
        raise bad(f"the path is finished (end: {end!r})")
    if path._resume_arrays is None:
        raise bad("it holds no solver state (save with --checkpoint-every N, or interrupt with Ctrl-C)")
    info = path.meta.pop("resume_state")
    point_k = info.get("point")
    if streamed and isinstance(point_k, int) and 0 <= point_k < len(path) - 1:
        # the state of an earlier breakpoint: recompute the later ones (deterministic) from it
        del path._rows[point_k + 1:], path._W[point_k + 1:], path._files[point_k + 1:]
        if path._rows[-1]["end"] not in ("", "interrupted"):
            raise bad(f"the saved solver state belongs to breakpoint {point_k}, which ends the path")
    elif info.get("point") != len(path) - 1:
        raise bad("the saved solver state does not belong to the last breakpoint")
    arrays = path._resume_arrays
    path._resume_arrays = None
    try:
        cfg = PathConfig(**{k: (float(v) if isinstance(v, str) else v) for k, v in path.meta["path_config"].items()})
        solver = _restore_solver(model, info, arrays, bad)
    except PathFileError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"broken saved settings ({type(exc).__name__}: {exc})") from None
    path._rows[-1]["end"] = ""
    point = path.point(len(path) - 1)
    path.meta.pop("end", None)
    if streamed:
        path._attach_writer(path.store, mode="append")  # lists this path's rows (end reason cleared)
    clock = _Clock(offset=point.cum_time_s)
    tests = _as_tests(test_data, test_metric)
    path.meta = _metric_meta(path.meta, tests.metric)
    points = _induction_points(model, cfg, solver, point, tests, should_stop, True, clock)
    return _collect(path, points, callback, checkpoint_every=checkpoint_every, checkpoint_file=checkpoint_file)
