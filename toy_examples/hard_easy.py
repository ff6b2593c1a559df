"""The hard/easy toy problem of App. C: gap sampling is about min(n, K, 1/(nε)) times faster than
uniform or curvature-proportional sampling, and faster still than Lipschitz-proportional sampling
(about 2K(n−1)·t oracle calls against n + t).

One "hard" object needs t ≈ min(K, 1/(2nε)) Frank-Wolfe steps for a duality gap ε; n−1 "easy" objects are all solved
by a single step on any one of them. The curvature constants are equal (C_f^(i) = 1/n), so
curvature sampling is uniform sampling; the ℓ2 Lipschitz constants even favour the easy
objects (K/n against 1/(2n)). Only the adaptive gap sampler stops visiting the easy objects.

Run ``python -m gaplab.toy_examples.hard_easy --n 20 --K 50 --eps 1e-4 --seed 0 --out
summary.json``; it writes ``summary.json`` (sampler name -> ``oracle_calls`` to reach ε) and
a figure ``hard_easy.png`` in ``--out-dir``.

Paper: App. C (construction, curvature and Lipschitz constants, the n + t vs n·t argument),
Sec. 3.1 (gap sampling, Theorem 2).
"""
from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from pathlib import Path

import numpy as np

from gaplab.core.atomic import save_figure

from ._common import (DEFAULT_OUT_DIR, check_int, check_positive, gap_check_label,
                      new_figure, out_path, parse_gap_check, write_json)

__all__ = [
    "SAMPLERS", "make_hard_easy", "curvature_constants", "lipschitz_constants",
    "hard_block_gap", "hard_steps_needed", "predicted_speedup", "predicted_oracle_calls",
    "oracle_calls_to_eps", "compare_samplers", "plot_hard_easy", "main",
]

#: Samplers compared on the toy problem, in display order.
SAMPLERS = ("uniform", "curvature", "lipschitz", "gap", "exact_gap")

_SAMPLER_LABELS = {
    "uniform": "uniform",
    "curvature": "curvature ∝ C_f^(i)",
    "lipschitz": "Lipschitz ∝ L_i (ℓ2)",
    "gap": "gap (stale estimates)",
    "exact_gap": "exact gap (Thm. 2)",
}


# ============================================================================ construction

def make_hard_easy(n: int, K: int):
    """The toy SSVM of App. C with one hard and n−1 easy objects, K+1 labels each.

    Labels are {0, …, K}, label 0 is correct with φ(x_i, 0) = 0, the loss is 0-1, d = K + 1 and
    λ = 1/n (so that 1/(λn) = 1 and A holds the difference feature maps themselves). Block 0 is
    the hard object, φ(x_0, k) = −e_k/√2 (coordinate k−1, 0-based); blocks 1..n−1 are easy,
    φ(x_i, k) = −e_{K+1} (coordinate K) for every k >= 1.

    Paper: App. C, "Explicit construction".

    Parameters
    ----------
    n : int
        Number of objects (>= 2: one hard and at least one easy object).
    K : int
        Number of wrong labels per object (>= 1). The paper's C_f^(1) = 1/n needs K >= 2
        (with K = 1 the hard block's curvature is 1/(2n)).

    Returns
    -------
    model : gaplab.core.MulticlassModel
    lam : float
        λ = 1/n.
    info : dict
        ``n``, ``K``, ``d``, ``lam``, ``hard_index`` (0), ``features`` (list of (K+1, d)
        arrays; the easy objects share one array), ``gt`` (zeros), ``w_star`` (the optimum
        e_{K+1} + (1/(K√2)) Σ_{k<=K} e_k, see Notes), ``optimal_value`` (primal = dual optimum
        (3/2 − 1/(4K))/n).

    Raises
    ------
    ValueError
        If n < 2 or K < 1 (or they are not integers).

    Notes
    -----
    The paper states w* = e_{K+1} + (1/K) Σ_k e_k; with its own feature scaling
    (ψ_1(k) = e_k/√2 and α*_1(k) = 1/K) the hard coordinates are 1/(K√2). Its dual objective
    (Eq. (15), the 1/4 α² term) agrees with the 1/√2 scaling, so only the stated w* drops it.
    """
    from gaplab.core import MulticlassModel

    n = check_int("n", n, 2)
    K = check_int("K", K, 1)
    d = K + 1
    hard = np.zeros((K + 1, d))
    hard[np.arange(1, K + 1), np.arange(K)] = -1.0 / math.sqrt(2.0)
    easy = np.zeros((K + 1, d))
    easy[1:, K] = -1.0
    losses = np.ones(K + 1)
    losses[0] = 0.0
    features = [hard] + [easy] * (n - 1)
    gt = np.zeros(n, dtype=np.int64)
    model = MulticlassModel(features, [losses] * n, gt)
    lam = 1.0 / n
    w_star = np.zeros(d)
    w_star[:K] = 1.0 / (K * math.sqrt(2.0))
    w_star[K] = 1.0
    info = {
        "n": n, "K": K, "d": d, "lam": lam, "hard_index": 0,
        "features": features, "gt": gt, "w_star": w_star,
        "optimal_value": (1.5 - 0.25 / K) / n,
    }
    return model, lam, info


def _features_of(obj):
    """(features list, gt array) from a MulticlassModel or a list of feature arrays."""
    if hasattr(obj, "_features") and hasattr(obj, "gt"):
        return obj._features, np.asarray(obj.gt)
    feats = [np.asarray(f, dtype=np.float64) for f in obj]
    return feats, None


def _dedupe(features):
    """Map each block to a representative (equal arrays share one computation)."""
    keys, seen = [], {}
    for F in features:
        k = id(F)
        if k not in seen:
            h = hashlib.sha1(np.ascontiguousarray(F).view(np.uint8)).hexdigest() + str(F.shape)
            seen[k] = h
        keys.append(seen[k])
    return keys


def curvature_constants(features, lam: float) -> np.ndarray:
    """Exact block curvature constants of the SSVM dual for enumerated labels.

    C_f^(i) = max_{k,l} ‖φ(x_i, k) − φ(x_i, l)‖² / (λ n²), which is λ·max_{k,l}‖φ(x_i,k) −
    φ(x_i,l)‖² at λ = 1/n (the dual is quadratic with Hessian λAᵀA and the supremum over the
    simplex is attained at a pair of vertices).

    Paper: App. C, "Curvature constants" (Eq. (18)-(19): 1/n for every block).

    Parameters
    ----------
    features : MulticlassModel or list of ndarray
        ``features[i]`` of shape (``|Y_i|``, d) holds φ(x_i, y) for every label y.
    lam : float
        Regularization λ > 0.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    feats, _ = _features_of(features)
    lam = check_positive("lam", lam)
    n = len(feats)
    keys = _dedupe(feats)
    cache: dict[str, float] = {}
    out = np.empty(n)
    for i, F in enumerate(feats):
        if keys[i] not in cache:
            F = np.asarray(F, dtype=np.float64)
            sq = np.einsum("ij,ij->i", F, F)
            D = sq[:, None] + sq[None, :] - 2.0 * (F @ F.T)
            cache[keys[i]] = max(float(D.max()), 0.0)
        out[i] = cache[keys[i]] / (lam * n * n)
    return out


def _sigma_max_sq(P: np.ndarray) -> float:
    """Largest eigenvalue of PᵀP (exact, via the smaller Gram matrix of the non-zero part)."""
    P = P[np.any(P != 0, axis=1)][:, np.any(P != 0, axis=0)]
    if P.size == 0:
        return 0.0
    G = P.T @ P if P.shape[1] <= P.shape[0] else P @ P.T
    off = G - np.diag(np.diag(G))
    if not np.any(off):
        return float(np.diag(G).max())
    return float(np.linalg.eigvalsh(G)[-1])


def lipschitz_constants(features, lam: float, gt=None) -> np.ndarray:
    """ℓ2 Lipschitz constants of the block gradients ∇_(i) f of the SSVM dual.

    L_i is the largest eigenvalue of the block Hessian λ A_iᵀA_i, A_i = Ψ_i/(λn) with the rows
    ψ_i(y) = φ(x_i, y_i) − φ(x_i, y), i.e. L_i = σ_max(Ψ_i)² / (λn²).

    Paper: App. C, "Lipschitz and curvature constants" (K/n for an easy block, 1/(2n) for
    the hard block).

    Parameters
    ----------
    features : MulticlassModel or list of ndarray
        ``features[i]`` of shape (``|Y_i|``, d).
    lam : float
        Regularization λ > 0.
    gt : array of int, shape (n,), optional
        Correct labels (taken from the model when a model is given; default all 0).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    feats, model_gt = _features_of(features)
    lam = check_positive("lam", lam)
    n = len(feats)
    gt = model_gt if gt is None else np.asarray(gt, dtype=np.int64)
    gt = np.zeros(n, dtype=np.int64) if gt is None else gt
    keys = _dedupe(feats)
    cache: dict[tuple, float] = {}
    out = np.empty(n)
    for i, F in enumerate(feats):
        key = (keys[i], int(gt[i]))
        if key not in cache:
            F = np.asarray(F, dtype=np.float64)
            cache[key] = _sigma_max_sq(F[int(gt[i])][None, :] - F)
        out[i] = cache[key] / (lam * n * n)
    return out


# ============================================================================ analysis of App. C

def hard_block_gap(t: int, n: int, K: int) -> float:
    """Gap of the hard block after t BCFW steps on it (exact for FW with line search).

    From α_1(0) = 1 the k-th FW step moves to a new label and the line search gives the
    uniform distribution over the t labels visited: the gap is 1/n at t = 0, 1/(2nt) for
    1 <= t < K and 0 for t >= K.

    Paper: App. C, "Optimization on the hard object".
    """
    t = check_int("t", t, 0)
    if t == 0:
        return 1.0 / n
    return 0.0 if t >= K else 1.0 / (2.0 * n * t)


def hard_steps_needed(n: int, K: int, eps: float) -> int:
    """Steps t on the hard block needed for a duality gap <= ε once the easy blocks are solved:
    t = min{K, ⌈1/(2nε)⌉} (0 if ε >= 1/n).

    Paper: App. C, Eq. (16) (t >= Ω(min{K, 1/(nε)})) and the hard block's smallest gap 1/(2nt)
    after t steps, stated just before it.
    """
    n = check_int("n", n, 2)
    K = check_int("K", K, 1)
    eps = check_positive("eps", eps)
    if eps >= 1.0 / n:
        return 0
    return int(min(K, math.ceil((1.0 - 1e-12) / (2.0 * n * eps))))


def predicted_speedup(n: int, K: int, eps: float) -> float:
    """The App. C speed-up of gap sampling over uniform/curvature sampling, min(n, K, 1/(nε)).

    Paper: App. C, "Adaptive and non-uniform sampling".
    """
    n = check_int("n", n, 2)
    K = check_int("K", K, 1)
    eps = check_positive("eps", eps)
    return float(min(n, K, 1.0 / (n * eps)))


def predicted_oracle_calls(n: int, K: int, eps: float, gap_check: float = 10) -> dict:
    """Approximate expected oracle calls of each sampler to reach a duality gap <= ε.

    With t = :func:`hard_steps_needed`: uniform and curvature ≈ n·t; Lipschitz ≈ t / p_hard with
    p_hard = L_1 / Σ L_i = 1/(1 + 2K(n−1)); stale gap sampling = S + n·⌊S/(gap_check·n)⌋ with
    S = n + t steps plus its gap passes (a bootstrap sweep that visits the hard block once,
    t − 1 more hard steps, and one revisit of the first easy block visited: its estimate 1/n
    was computed before its own step made every easy gap 0); exact gap sampling ≈ t + 1 block
    calls (plus n sampler calls per step, reported apart). With gap_check = 1 the gap pass
    that ends the bootstrap sweep refreshes that estimate first, so S = n + t − 1.

    Paper: App. C, "Adaptive and non-uniform sampling" (O(nt) against O(n + t)).

    Returns
    -------
    dict
        Sampler name -> expected oracle calls (float), plus ``hard_steps`` (t).
    """
    n = check_int("n", n, 2)
    K = check_int("K", K, 1)
    gc = parse_gap_check(gap_check)
    t = hard_steps_needed(n, K, eps)
    p_hard_lip = 1.0 / (1.0 + 2.0 * K * (n - 1))
    if t == 0:
        uni = n / (n - 1.0)
        lip = 1.0 / (1.0 - p_hard_lip)
        steps_gap = 1.0 + 1.0 / n
    else:
        uni = float(n * t)
        lip = t / p_hard_lip
        # the stale first-easy estimate is revisited unless a gap pass ends the bootstrap sweep
        steps_gap = float(n + t - 1) if gc == 1 else float(n + t)
    gap = steps_gap + (0.0 if math.isinf(gc) else n * math.floor(steps_gap / (gc * n)))
    return {"hard_steps": t, "uniform": uni, "curvature": uni, "lipschitz": lip, "gap": gap,
            "exact_gap": float(t + 1), "exact_gap_sampler_calls": float(n * (t + 1))}


# ============================================================================ measurement

#: Relative tolerance of "gap <= ε": App. C's gaps 1/(2nt) hit round values of ε exactly, and
#: round-off must not decide whether t or t + 1 hard steps are needed.
_REL_TOL = 1e-9


def _gap_now(solver) -> float:
    return solver.exact_gap(count=False).gap


def _refine(solver, m: int, eps: float, curve: list):
    """``solver`` sits at the start of a chunk of m steps whose end has gap <= ε; return the
    solver right after the first step with gap <= ε (replaying from copies; the solver is
    deterministic given its state, RNG included)."""
    while True:
        sub = max(1, -(-m // 16))
        done = 0
        while True:
            if done >= m:
                raise RuntimeError("replay did not reproduce the gap crossing (non-deterministic solver?)")
            k = min(sub, m - done)
            snap = solver.copy()
            solver.steps(k)
            done += k
            g = _gap_now(solver)
            curve.append((solver.oracle_calls, solver.sampler_oracle_calls, g))
            if g <= eps:
                if k == 1:
                    return solver, g
                solver, m = snap, k
                break


def oracle_calls_to_eps(model, lam: float, eps: float, sampling: str = "uniform", *, seed: int = 0,
                        gap_check: float = math.inf, sampling_weights=None, max_calls: int | None = None,
                        check_every: int | None = None) -> dict:
    """Oracle calls of a BCFW run until the exact duality gap first drops to <= ε.

    The exact gap is observed without side effects (``Solver.exact_gap(count=False)``: no
    oracle call counted, no gap estimate changed) at chunk ends of geometrically growing size;
    the chunk where it first drops to <= ε is replayed from a copy of the solver in
    sub-chunks down to single steps. This finds the first step with gap <= ε whenever the gap
    is non-increasing between checks (true on the App. C problem; in general it is the first
    step after the last check with gap > ε). "<= ε" allows a relative round-off of 1e-9 (the
    toy's gaps 1/(2nt) equal round values of ε exactly).

    Counted oracle calls are the solver's ``oracle_calls``: block steps plus the exact gap
    passes the stale gap sampler makes every ``gap_check`` passes (real work of that sampler).
    The idealized exact-gap sampler's recomputations are reported separately as
    ``sampler_oracle_calls``.

    Paper: App. C (the quantity compared between samplers), Sec. 2.3 (duality gap).

    Parameters
    ----------
    model : gaplab.core model
    lam : float
        Regularization λ.
    eps : float
        Target duality gap ε > 0.
    sampling : str
        ``uniform``, ``weights``, ``gap``, ``exact_gap``, … (see ``SolverConfig``).
    seed : int
        Seed of the solver's RNG.
    gap_check : float
        Passes between exact gap passes (inf: never).
    sampling_weights : array of float, shape (n,), optional
        Fixed weights for ``sampling="weights"``.
    max_calls : int, optional
        Give up (``reached`` False, ``oracle_calls`` None) after this many counted calls.
    check_every : int, optional
        Smallest chunk between gap observations (default n).

    Returns
    -------
    dict
        ``oracle_calls`` (int, or None when not reached), ``reached``, ``steps``,
        ``sampler_oracle_calls``, ``gap_passes``, ``final_gap``, ``censored_at`` (calls made
        when giving up, else None), ``wall_time_s``, ``w`` (final iterate), ``curve`` (sorted
        list of (oracle_calls, sampler_oracle_calls, exact gap) observations).
    """
    from gaplab.core import Solver

    eps = check_positive("eps", eps)
    if max_calls is not None:
        max_calls = check_int("max_calls", max_calls, 1)
    n = model.arrays.n
    base = n if check_every is None else check_int("check_every", check_every, 1)
    t0 = time.perf_counter()
    solver = Solver(model, lam=lam, sampling=sampling, gap_check=gap_check, seed=seed,
                    gap_threshold=eps, max_passes=math.inf, sampling_weights=sampling_weights)
    thr = eps * (1.0 + _REL_TOL)
    g = _gap_now(solver)
    curve = [(0, 0, g)]
    reached = g <= thr
    while not reached:
        if max_calls is not None and solver.oracle_calls >= max_calls:
            break
        m = max(base, solver.iteration // 4)
        if max_calls is not None:
            m = max(1, min(m, max_calls - solver.oracle_calls))
        snap = solver.copy()
        solver.steps(m)
        g = _gap_now(solver)
        curve.append((solver.oracle_calls, solver.sampler_oracle_calls, g))
        if g <= thr:
            solver, g = (solver, g) if m == 1 else _refine(snap, m, thr, curve)
            reached = True
    return _to_eps_record(solver, reached, g, curve, t0)


def _to_eps_record(solver, reached: bool, g: float, curve, t0: float) -> dict:
    """The record :func:`oracle_calls_to_eps` returns, from its final solver and observations."""
    gap_passes = sum(1 for r in solver.trace() if r["kind"] == "gap_check")
    curve = sorted(set(curve), key=lambda c: (c[0] + c[1], -c[2]))
    wall_time_s = time.perf_counter() - t0
    return {
        "oracle_calls": solver.oracle_calls if reached else None,
        "reached": bool(reached),
        "steps": solver.iteration,
        "sampler_oracle_calls": solver.sampler_oracle_calls,
        "gap_passes": gap_passes,
        "final_gap": float(g),
        "censored_at": None if reached else solver.oracle_calls,
        "wall_time_s": wall_time_s,
        "w": solver.w,
        "curve": [(int(a), int(b), float(c)) for a, b, c in curve],
    }


def _default_max_calls(n, K, eps, sampler):
    """max(10⁵, 4·n·t) calls (never hit: uniform needs ≈ n·t); for the Lipschitz sampler
    max(10⁵, min(5·10⁵, 3·E[calls])) (about 6 s at K = 1000)."""
    if sampler == "lipschitz":
        lip = predicted_oracle_calls(n, K, eps)["lipschitz"]
        return int(max(100_000, min(500_000, 3 * lip)))
    return int(max(100_000, 4 * n * max(hard_steps_needed(n, K, eps), 1)))


def _budgets(n, K, eps, samplers, max_calls) -> dict:
    """Per-sampler budgets of counted oracle calls (see :func:`compare_samplers`' ``max_calls``)."""
    if max_calls is None or isinstance(max_calls, dict):
        caps = {s: _default_max_calls(n, K, eps, s) for s in samplers}
        caps.update({s: check_int(f"max_calls[{s}]", v, 1) for s, v in (max_calls or {}).items()})
    else:
        caps = {s: check_int("max_calls", max_calls, 1) for s in samplers}
    return caps


def _sampler_settings(name, model, lam, info, gc) -> dict:
    """Solver settings of a sampler of :data:`SAMPLERS` (the weights of the fixed-weight samplers are
    computed once and cached in ``info``)."""
    kw = {}
    if name == "uniform":
        kw = dict(sampling="uniform")
    elif name in ("curvature", "lipschitz"):
        key = f"{name}_constants"
        if key not in info:
            fn = curvature_constants if name == "curvature" else lipschitz_constants
            info[key] = fn(model, lam)
        kw = dict(sampling="weights", sampling_weights=info[key])
    elif name == "gap":
        kw = dict(sampling="gap", gap_check=gc)
    elif name == "exact_gap":
        kw = dict(sampling="exact_gap")
    return kw


def _prediction(n, K, eps, pred) -> dict:
    """App. C's expectations: hard steps t, min(n, K, 1/(nε)), uniform/gap and the expected calls."""
    t_need = pred["hard_steps"]
    return {
        "hard_steps_needed": t_need,
        "speedup_min_n_K_1_over_n_eps": predicted_speedup(n, K, eps),
        "speedup_uniform_over_gap": (pred["uniform"] / pred["gap"]) if pred["gap"] > 0 else None,
        "expected_calls": {k: v for k, v in pred.items() if k != "hard_steps"},
    }


def _measured(out, samplers, n, t_need) -> dict:
    """Speed-ups over uniform sampling and the observed constant c = (gap calls − n)/t."""
    meas = {}
    uni = out.get("uniform", {}).get("oracle_calls")
    for name in samplers:
        c = out[name]["oracle_calls"]
        if name != "uniform" and uni and c:
            meas[f"speedup_{name}"] = uni / c
    if "gap" in samplers and out["gap"]["oracle_calls"] is not None and t_need > 0:
        meas["gap_constant_c"] = (out["gap"]["oracle_calls"] - n) / t_need
    if "uniform" in samplers and uni is not None and t_need > 0:
        meas["uniform_calls_per_hard_step_over_n"] = uni / (n * t_need)
    return meas


def compare_samplers(n: int, K: int, eps: float, seed: int = 0, gap_check: float = 10, *,
                     samplers=SAMPLERS, max_calls: int | None = None, problem=None,
                     keep_curves: bool = True) -> dict:
    """Oracle calls to reach a duality gap <= ε on the App. C problem for each sampler.

    Samplers: ``uniform``; ``curvature`` (fixed weights ∝ exact C_f^(i), all equal here);
    ``lipschitz`` (fixed weights ∝ ℓ2 Lipschitz constants L_i); ``gap`` (stale gap estimates
    with an exact gap pass every ``gap_check`` passes, counted); ``exact_gap`` (Theorem 2's
    idealized sampler: every block gap recomputed before each draw, those calls reported as
    ``sampler_oracle_calls``). Non-gap samplers run without gap passes (they do not use them).

    Paper: App. C (the n + t vs n·t comparison), Sec. 3.1 (Theorem 2).

    Parameters
    ----------
    n, K : int
        Problem size (n >= 2, K >= 1).
    eps : float
        Target duality gap ε > 0.
    seed : int
        Solver seed (same for every sampler).
    gap_check : float
        Passes between gap passes of the stale gap sampler (inf: never).
    samplers : sequence of str
        Subset of :data:`SAMPLERS`.
    max_calls : int or dict, optional
        Per-run budget of counted oracle calls, one for all samplers or a dict sampler ->
        budget (missing samplers and None: max(10⁵, 4·n·t), and for Lipschitz
        max(10⁵, min(5·10⁵, 3·E[calls]))).
        A run that hits it is reported with ``reached`` False, ``oracle_calls`` None and
        ``censored_at`` (the Lipschitz sampler needs ≈ 2K(n−1)·t calls).
    problem : tuple, optional
        ``(model, lam, info)`` from :func:`make_hard_easy` to reuse (constants are cached in
        ``info``).
    keep_curves : bool
        Keep each run's (oracle_calls, gap) observations.

    Returns
    -------
    dict
        One entry per sampler name (``oracle_calls``, ``reached``, ``steps``,
        ``sampler_oracle_calls``, ``gap_passes``, ``hard_labels_visited``, ``final_gap``,
        ``wall_time_s``, ``predicted_calls``, optionally ``curve``), plus ``problem`` (n, K,
        ε, λ, seed, gap_check, max_calls), ``prediction`` (t, min(n, K, 1/(nε)), expected calls)
        and ``measured`` (speed-ups over uniform, observed constant c = (calls − n)/t of gap
        sampling), and ``sampler_names``.
    """
    n = check_int("n", n, 2)
    K = check_int("K", K, 1)
    eps = check_positive("eps", eps)
    seed = check_int("seed", seed, 0)
    gc = parse_gap_check(gap_check)
    unknown = [s for s in samplers if s not in SAMPLERS]
    if unknown:
        raise ValueError(f"unknown sampler(s) {unknown}; expected a subset of {list(SAMPLERS)}")
    if problem is None:
        problem = make_hard_easy(n, K)
    model, lam, info = problem
    if (info["n"], info["K"]) != (n, K):
        raise ValueError("problem does not match n and K")
    caps = _budgets(n, K, eps, samplers, max_calls)
    pred = predicted_oracle_calls(n, K, eps, gc)
    t_need = pred["hard_steps"]
    out: dict = {}
    for name in samplers:
        kw = _sampler_settings(name, model, lam, info, gc)
        r = oracle_calls_to_eps(model, lam, eps, seed=seed, max_calls=caps[name], **kw)
        w = r.pop("w")
        r["hard_labels_visited"] = int(np.count_nonzero(w[:K]))
        r["predicted_calls"] = pred[name]
        if not keep_curves:
            r.pop("curve")
        out[name] = r
    out["sampler_names"] = list(samplers)
    out["problem"] = {"n": n, "K": K, "eps": eps, "lam": lam, "seed": seed,
                      "gap_check": gap_check_label(gc), "max_calls": caps}
    out["prediction"] = _prediction(n, K, eps, pred)
    out["measured"] = _measured(out, samplers, n, t_need)
    return out


# ============================================================================ figure & CLI

def plot_hard_easy(summary: dict, path=None):
    """Figure of a :func:`compare_samplers` summary: exact duality gap against oracle calls per
    sampler (left) and calls to reach ε against the App. C expectations (right).

    Paper: App. C.

    Parameters
    ----------
    summary : dict
        Output of :func:`compare_samplers` (with curves).
    path : str or Path, optional
        Where to save the PNG.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = new_figure(1, 2, figsize=(11.0, 4.2))
    ax, bx = axes[0]
    colors = {"uniform": "C0", "curvature": "C1", "lipschitz": "C2", "gap": "C3", "exact_gap": "C4"}
    _plot_gap_curves(ax, summary, colors)
    _plot_calls_to_eps(bx, summary, colors)
    if path is not None:
        save_figure(fig, path, dpi=110)
    return fig


def _plot_gap_curves(ax, summary: dict, colors: dict):
    """Left panel of :func:`plot_hard_easy`: the exact duality gap against oracle calls per sampler."""
    prob = summary["problem"]
    names = summary["sampler_names"]
    styles = {"curvature": "--"}
    # gaps below ε/1000 are round-off zeros here (the toy's gaps are 0 or >= 1/(2nK)); they
    # are drawn on a floor under the smallest meaningful value
    pos = [g for s in names for (_, _, g) in summary[s].get("curve", []) if g > 1e-3 * prob["eps"]]
    floor = 0.1 * min([prob["eps"]] + pos)
    for name in names:
        r = summary[name]
        if "curve" not in r:
            continue
        c = np.asarray(r["curve"], dtype=float)
        x = np.maximum(c[:, 0], 0.5)
        y = np.maximum(c[:, 2], floor)
        lab = _SAMPLER_LABELS[name]
        if name == "gap":
            lab += f", gap_check={prob['gap_check']}"
        ax.plot(x, y, styles.get(name, "-"), color=colors[name], marker=".", ms=3, lw=1.3, label=lab)
        if name == "exact_gap" and r["sampler_oracle_calls"]:
            xs = np.maximum(c[:, 0] + c[:, 1], 0.5)
            ax.plot(xs, y, ":", color=colors[name], lw=1.0, label="exact gap incl. sampler calls")
    ax.axhline(prob["eps"], color="k", lw=0.8, ls="--")
    ax.annotate("ε", xy=(0.99, prob["eps"]), xycoords=("axes fraction", "data"), ha="right",
                va="bottom", fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("oracle calls (the start, 0 calls, drawn at 0.5)")
    ax.set_ylabel("exact duality gap (0 drawn at the bottom)")
    ax.set_ylim(bottom=floor * 0.7)
    ax.set_title(f"App. C toy: n={prob['n']}, K={prob['K']}, ε={prob['eps']:g}")
    ax.legend(fontsize=7, loc="upper right", framealpha=0.85)
    ax.grid(True, which="major", alpha=0.3)


def _plot_calls_to_eps(bx, summary: dict, colors: dict):
    """Right panel of :func:`plot_hard_easy`: oracle calls to reach ε per sampler (bars) against the
    App. C expectations."""
    prob = summary["problem"]
    names = summary["sampler_names"]
    xs = np.arange(len(names))
    meas = [summary[s]["oracle_calls"] for s in names]
    pred = [summary[s]["predicted_calls"] for s in names]
    heights = [m if m is not None else summary[s]["censored_at"] for s, m in zip(names, meas)]
    bars = bx.bar(xs, heights, color=[colors[s] for s in names], alpha=0.8)
    for b, s, m in zip(bars, names, meas):
        if m is None:
            b.set_hatch("//")
            b.set_alpha(0.35)
            bx.text(b.get_x() + b.get_width() / 2, b.get_height(), "not reached\n(budget)",
                    ha="center", va="bottom", fontsize=7)
        else:
            bx.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{m:,}", ha="center",
                    va="bottom", fontsize=8)
    bx.scatter(xs, pred, marker="_", s=400, color="k", zorder=3, label="App. C expectation")
    if "exact_gap" in names and summary["exact_gap"]["sampler_oracle_calls"]:
        j = names.index("exact_gap")
        tot = summary["exact_gap"]["oracle_calls"]
        if tot is not None:
            bx.scatter([j], [tot + summary["exact_gap"]["sampler_oracle_calls"]], marker="v",
                       color=colors["exact_gap"], zorder=3, label="exact gap + sampler calls")
    bx.set_yscale("log")
    bx.set_xticks(xs)
    bx.set_xticklabels([s.replace("_", " ") for s in names], fontsize=8)
    bx.set_ylabel(f"oracle calls to reach gap ≤ {prob['eps']:g}")
    p = summary["prediction"]
    bx.set_title(f"t = {p['hard_steps_needed']} hard steps; "
                 f"min(n, K, 1/(nε)) = {p['speedup_min_n_K_1_over_n_eps']:.3g}", fontsize=10)
    bx.legend(fontsize=7, loc="upper right")
    bx.margins(y=0.25)


def _table(summary) -> str:
    names = summary["sampler_names"]
    lines = [f"{'sampler':<12} {'oracle calls':>13} {'expected':>11} {'sampler calls':>14} {'gap passes':>10}"]
    for s in names:
        r = summary[s]
        calls = f"{r['oracle_calls']:,}" if r["oracle_calls"] is not None else f">{r['censored_at']:,}"
        lines.append(f"{s:<12} {calls:>13} {r['predicted_calls']:>11,.0f} {r['sampler_oracle_calls']:>14,} "
                     f"{r['gap_passes']:>10}")
    p, m = summary["prediction"], summary["measured"]
    lines.append(f"hard steps needed t = {p['hard_steps_needed']}, App. C speed-up min(n,K,1/(nε)) = "
                 f"{p['speedup_min_n_K_1_over_n_eps']:.3g}; measured uniform/gap = "
                 f"{m.get('speedup_gap', float('nan')):.3g}; c = (gap calls − n)/t = "
                 f"{m.get('gap_constant_c', float('nan')):.3g}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m gaplab.toy_examples.hard_easy",
                                 description="App. C hard/easy toy problem: oracle calls of each sampler "
                                             "until the exact duality gap <= eps.")
    ap.add_argument("--n", type=int, default=20, help="number of objects (>= 2; default 20)")
    ap.add_argument("--K", type=int, default=50, help="wrong labels per object (>= 1; default 50)")
    ap.add_argument("--eps", type=float, default=1e-4, help="target duality gap (> 0; default 1e-4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap-check", default="10", help="passes between gap passes of gap sampling (or inf)")
    ap.add_argument("--samplers", default=",".join(SAMPLERS), help="comma-separated subset of samplers")
    ap.add_argument("--max-calls", type=int, default=None, help="per-run oracle-call budget")
    ap.add_argument("--out", default=None, help="JSON summary path (default OUT_DIR/hard_easy.json)")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR, help="directory of the figure (default ./toy_out)")
    ap.add_argument("--no-figure", action="store_true")
    return ap


def main(argv=None) -> int:
    """CLI: ``python -m gaplab.toy_examples.hard_easy --n N --K K --eps EPS --seed S --out
    summary.json``. Prints a table; writes the JSON summary and ``hard_easy.png``."""
    args = build_parser().parse_args(argv)
    try:
        gc = parse_gap_check(args.gap_check)
        samplers = tuple(s.strip() for s in args.samplers.split(",") if s.strip())
        t0 = time.perf_counter()
        summary = compare_samplers(args.n, args.K, args.eps, args.seed, gc, samplers=samplers,
                                   max_calls=args.max_calls)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    summary["wall_time_s"] = time.perf_counter() - t0
    print(_table(summary))
    out = Path(args.out) if args.out else out_path(args.out_dir, "hard_easy.json")
    if not args.no_figure:
        fig_path = out_path(args.out_dir, "hard_easy.png")
        plot_hard_easy(summary, fig_path)
        summary["figure"] = str(fig_path)
        print(f"figure: {fig_path}")
    write_json(out, summary)
    print(f"summary: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
