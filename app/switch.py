"""Keep α when a setting changes: a solver that continues the current run under new settings
(sampler, step kind, cache, gap checks, λ) from the current dual point, instead of α⁰.

α is feasible for every sampler and step kind: the samplers only read the block gap estimates
(kept, stale) and the sampling tree (rebuilt here), and pairwise / away steps and the cache read
the per-block atoms, which exist when the old run tracked them. A run that kept no atoms (FW
steps without a cache) cannot start pairwise or away steps or a cache: its α_i is known only
through μ_i, not as a combination of labellings, so :func:`can_continue` says why not.

A new λ is a warm start: same α, w scaled by λ_old/λ_new (:meth:`gaplab.core.Solver.warm_start`
with ``keep="dual"``, the authors' warm start on the dual; the regularization path uses the
primal one, Proposition 1, which needs λ to decrease). The new λ's counters and trace start from
zero; its gap estimates are the old ones (stale) until blocks are visited again.
No Panel import.
"""
from __future__ import annotations

import math

from gaplab.core import Solver, SolverConfig
from gaplab.core import kernels as kr
from gaplab.core.state import config_arrays

__all__ = ["CONTINUE_SETTINGS", "can_continue", "continue_with", "describe_change"]

#: the app settings whose change can continue from the current α (the others restart from α⁰:
#: the seed defines the run; a smaller cache than the atoms held has no eviction rule here)
CONTINUE_SETTINGS = ("lam", "sampling", "gap_power", "step_kind", "cache", "cache_factor", "cache_nu",
                     "gap_check")


def can_continue(solver: Solver, cfg: SolverConfig) -> str:
    """Why ``solver`` cannot continue under ``cfg`` ("" when it can)."""
    old = solver.config
    if cfg.seed != old.seed:
        return "a new seed starts a new run"
    if cfg.cache.size != old.cache.size:
        return "a new cache size rebuilds the cache"
    if cfg.needs_atoms and not solver.track:
        return ("the run so far kept no atoms (FW steps without a cache know α_i only through its "
                "mean μ_i), so pairwise/away steps or a cache cannot start from it")
    if getattr(solver, "python_oracle", False) and cfg.sampling.name == "EXACT_GAP":
        return "exact-gap sampling needs a compiled max oracle"
    return ""


def continue_with(solver: Solver, cfg: SolverConfig) -> Solver:
    """A new solver that continues ``solver``'s run under ``cfg`` from its current α.

    Parameters
    ----------
    solver : Solver
        The current solver (not modified).
    cfg : SolverConfig
        The new settings (same seed and cache size; see :func:`can_continue`).

    Returns
    -------
    Solver
        Same λ: same α, w, gap estimates, counters, RNG state and trace (the run goes on; the
        dual objective is unchanged at the switch). New λ: :meth:`Solver.warm_start` with
        ``keep="dual"`` (same α; counters and trace from zero).

    Raises
    ------
    ValueError
        If ``cfg`` cannot continue this run (the reason of :func:`can_continue`).
    """
    why = can_continue(solver, cfg)
    if why:
        raise ValueError(f"cannot continue from the current α: {why}")
    track = bool(solver.track)
    if track and not cfg.needs_atoms:
        cfg = cfg.replace(track_active_set=True)   # keep the atoms already tracked
    if cfg.lam != solver.lam:
        new = solver.warm_start(cfg.lam, keep="dual")
    else:
        new = solver.copy()
    has_box = bool(new._ci[kr.I_BOX])
    new.config = cfg
    new._ci, new._cf = config_arrays(cfg, has_box, track)
    new.track = track
    new.status = type(new.status).RUNNING
    if cfg.sampling.name in ("GAP", "EXACT_GAP", "WEIGHTS"):
        # the tree holds the sampling weights ĝᵢ^p: stale (or never built) under another sampler
        kr.tree_rebuild(new.S, new._cf, new.n)
    return new


_SAMPLER_NAMES = {"PERM": "permutation", "MAXGAP": "max-gap", "EXACT_GAP": "exact-gap"}


def describe_change(old: SolverConfig, new: SolverConfig) -> str:
    """A short label of what changed ("gap sampling", "pairwise steps", "λ = 0.001"), for the
    marker on the convergence curves."""
    parts = []
    if new.sampling != old.sampling or new.gap_power != old.gap_power:
        s = _SAMPLER_NAMES.get(new.sampling.name, new.sampling.name.lower().replace("_", "-"))
        parts.append(f"{s} sampling" + (f" (p={new.gap_power:g})" if s == "gap" and new.gap_power != 1 else ""))
    if new.step != old.step:
        parts.append(f"{new.step.name.lower()} steps")
    if new.cache != old.cache:
        parts.append("cache on" if new.cache.enabled and not old.cache.enabled else
                     "cache off" if not new.cache.enabled else
                     f"cache F={new.cache.factor:g}, ν={new.cache.nu:g}")
    if new.gap_check != old.gap_check:
        parts.append("check " + ("∞" if math.isinf(new.gap_check) else f"{int(new.gap_check)}"))
    if new.lam != old.lam:
        parts.append(f"λ = {new.lam:g}")
    return ", ".join(parts) or "settings"
