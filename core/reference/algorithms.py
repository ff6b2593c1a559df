"""The algorithms of the paper, one short driver each, to read beside its pseudo-code: a comment
names the pseudo-code line(s) each line of a driver carries out. The drivers are built from the
step functions of :mod:`gaplab.core.reference.steps`.

A block-step driver is the body of the paper's loop "for k = 0, 1, ...": it changes ``state``
in place and returns a :class:`~gaplab.core.reference.steps.ReferenceStep`. Its ``oracle`` finds the
corners (FW: the max oracle; cache; away); the default :data:`MAX_ORACLE` is the plain search.
:func:`solve` is the loop itself, with block sampling and the exact gap passes.
"""
from __future__ import annotations

import numpy as np

from .steps import (MAX_ORACLE, Candidate, MaxOracle, RefState, ReferenceStep, _key, apply_step,
                    away_candidate, choose_step, corner, exact_gap, finish_step, fw_candidate,
                    fw_corner, init_state, line_search, pairwise_candidate, record_oracle_call,
                    sample_block, trim_cache)

__all__ = ["STEP_KINDS", "bcfw_step", "bcfw_cache_step", "bcpfw_step", "bcafw_step", "combined_step",
           "batch_fw_step", "block_step", "solve"]

#: The step kinds of :func:`block_step`.
STEP_KINDS = ("fw", "pairwise", "away", "combined")


def bcfw_step(state: RefState, i: int, oracle: MaxOracle = MAX_ORACLE) -> ReferenceStep:
    """One BCFW step on block i (Paper: Alg. 1 lines 4-11, with k_i and the stored gap g_i^(k_i)
    of Alg. 2 lines 6 and 8).

    With a box (App. H, Alg. 9 lines 5-12) the same lines run on the untruncated v_i and v,
    against the truncated w = clip(v) (``state.w``, Alg. 9 line 12)."""
    y_s = oracle.argmax(state, i)                   # Alg. 1 line 4: y* = argmax_y H_i(y; w)
    record_oracle_call(state, i, y_s)               # Alg. 2 lines 6, 8: k_i := k and g_i^(k_i)
    step = fw_candidate(state, i, y_s)              # Alg. 1 lines 5-7: w_s, ℓ_s, g_i, γ in [0, 1]
    apply_step(state, i, step, y_s)                 # Alg. 1 lines 8-11: w_i, ℓ_i, then w, ℓ
    return finish_step(state, i, step, y_s)


def bcfw_cache_step(state: RefState, i: int, oracle: MaxOracle = MAX_ORACLE) -> ReferenceStep:
    """One BCFW step with the oracle cache C_i (Paper: Alg. 5 lines 6-22): a cached labelling
    whose gap passes the hit rule replaces the max-oracle call."""
    y_s, hit = fw_corner(state, i, oracle)          # Alg. 5 lines 6-17: cache hit, else the oracle
    step = fw_candidate(state, i, y_s)              # Alg. 5 line 18: γ from g_i^c (= g_i on a miss)
    apply_step(state, i, step, y_s)                 # Alg. 5 lines 19-22: w_i, ℓ_i, then w, ℓ
    return finish_step(state, i, step, y_s, hit=hit)


def bcpfw_step(state: RefState, i: int, oracle: MaxOracle = MAX_ORACLE) -> ReferenceStep:
    """One block pairwise FW step (Paper: Alg. 3 lines 6-21): move mass γ from the away corner
    to the FW corner. With a cache the FW corner may be a cache hit (Alg. 5 lines 6-17)."""
    y_s, hit = fw_corner(state, i, oracle)          # Alg. 3 lines 6-7: FW corner y*, (w_s, ℓ_s)
    y_a = oracle.argmin_active(state, i)            # Alg. 3 lines 8-9: away corner y^a, (w_a, ℓ_a)
    step = pairwise_candidate(state, i, y_s, y_a)   # Alg. 3 lines 10-11: d, γ in [0, α_i(y^a)]
    drop = apply_step(state, i, step, y_s, y_a)     # Alg. 3 lines 12-21: w_i, ℓ_i, w, ℓ, α_i, S_i
    return finish_step(state, i, step, y_s, y_a, hit=hit, drop=drop)


def bcafw_step(state: RefState, i: int, oracle: MaxOracle = MAX_ORACLE) -> ReferenceStep:
    """One block away-step FW step (Paper: Alg. 4 lines 6-27): a FW step towards y* or an away
    step from y^a, whichever direction has the larger gap. With a cache the FW corner may be a
    cache hit (Alg. 5 lines 6-17)."""
    y_s, hit = fw_corner(state, i, oracle)          # Alg. 4 lines 6-7: FW corner y*, (w_s, ℓ_s)
    y_a = oracle.argmin_active(state, i)            # Alg. 4 lines 8-9: away corner y^a, (w_a, ℓ_a)
    fw = fw_candidate(state, i, y_s)                # Alg. 4 lines 10, 13: g_i^FW, γ in [0, 1]
    away = away_candidate(state, i, y_a)            # Alg. 4 lines 11, 19: g_i^A, γ in [0, α/(1 − α)]
    step = away if away.gap > fw.gap else fw        # Alg. 4 line 12 (FW if equal: choose_step)
    drop = apply_step(state, i, step, y_s, y_a)     # Alg. 4 lines 14-17 or 20-22, then 24-27
    return finish_step(state, i, step, y_s, y_a, hit=hit, drop=drop)


def combined_step(state: RefState, i: int, oracle: MaxOracle = MAX_ORACLE) -> ReferenceStep:
    """The FW, away or pairwise step of block i, whichever decreases f most (not one of the
    paper's algorithms: App. G mentions trying it; the authors' code has it as a step type)."""
    y_s, hit = fw_corner(state, i, oracle)          # as Alg. 4 lines 6-7
    y_a = oracle.argmin_active(state, i)            # as Alg. 4 lines 8-9
    fw = fw_candidate(state, i, y_s)
    away = away_candidate(state, i, y_a)
    pairwise = pairwise_candidate(state, i, y_s, y_a)
    step = choose_step("combined", fw, away, pairwise)
    drop = apply_step(state, i, step, y_s, y_a)
    return finish_step(state, i, step, y_s, y_a, hit=hit, drop=drop)


def batch_fw_step(state: RefState, corners, gap: float) -> float:
    """A batch FW step on all blocks at once (Paper: Alg. 8 lines 7-11, with a box or without)
    towards the FW corners y_i* of an exact gap pass (its oracle calls are Alg. 8 lines 4-6) whose
    duality gap ``gap`` is the numerator of line 8. Returns γ."""
    targets = [corner(state, i, y) for i, y in enumerate(corners)]   # Alg. 8 line 7: v_s,i, ℓ_s,i
    v_s = sum(w_s for w_s, _ in targets)                               # Alg. 8 line 7: v_s
    gamma, _ = line_search(gap, v_s - state.v, state.lam, 1.0)         # Alg. 8 line 8
    if gamma <= 0.0:
        return 0.0
    for i, (w_s, ell_s) in enumerate(targets):   # Alg. 8 lines 9-11, block by block: v, ℓ, w = clip(v)
        step = Candidate("fw", gamma, 1.0, 0.0, 0.0, w_s - state.w_i[i], ell_s - state.ell_i[i])
        if state.atoms is not None:
            state.atoms[i].setdefault(_key(corners[i]), 0.0)
            state.last_used[i].setdefault(_key(corners[i]), state.k)
        apply_step(state, i, step, corners[i])
        if state.atoms is not None:
            trim_cache(state, i)
    return float(gamma)


#: The driver of each step kind without a cache (a "fw" step with a cache: ``bcfw_cache_step``).
STEP_DRIVERS = {"fw": bcfw_step, "pairwise": bcpfw_step, "away": bcafw_step, "combined": combined_step}


def block_step(state: RefState, i: int, kind: str = "fw", *, oracle: MaxOracle = MAX_ORACLE) -> ReferenceStep:
    """One block step on block i by the driver of its kind: "fw" (Alg. 1; Alg. 5 when the state
    has a cache), "pairwise" (Alg. 3), "away" (Alg. 4) or "combined" (gaplab's own, not one of
    the paper's algorithms; App. G mentions trying it).

    Parameters
    ----------
    state : RefState
        Changed in place.
    i : int
        The block, in [0, n).
    kind : str
        "fw", "pairwise", "away" or "combined".
    oracle : MaxOracle
        Finds the FW, cache and away corners (default: the plain max oracle).

    Returns
    -------
    ReferenceStep

    Raises
    ------
    ValueError
        An unknown kind, or a kind other than "fw" on a state without active sets.
    IndexError
        i outside [0, n).
    """
    if kind not in STEP_KINDS:
        raise ValueError(f"kind must be one of {STEP_KINDS}, got {kind!r}")
    if not 0 <= i < state.n:
        raise IndexError(f"block {i} out of range [0, {state.n})")
    if kind != "fw" and state.atoms is None:
        raise ValueError(f"a {kind} step needs the active sets: init_state(..., atoms=True)")
    driver = bcfw_cache_step if kind == "fw" and state.cache else STEP_DRIVERS[kind]
    return driver(state, i, oracle)


def solve(model, lam: float, *, passes: int = 10, kind: str = "fw", sampling: str = "gap",
          gap_check: int = 1, batch: bool = False, seed: int = 0, **state_options):
    """Run the reference solver: ``passes`` passes of n block steps of the given kind, an exact
    gap pass every ``gap_check`` passes, optionally followed by a batch FW step (Alg. 8). Slow,
    for small problems. ``state_options`` go to :func:`init_state` (box, cache, ...).

    Returns (state, gaps): the final RefState and the duality gap of each exact gap pass.
    """
    if kind != "fw":
        state_options.setdefault("atoms", True)
    state = init_state(model, lam, **state_options)   # Alg. 1 line 1, Alg. 2 lines 1-2, Alg. 3 lines 1-3
    rng = np.random.default_rng(seed)
    gaps = []
    for p in range(1, passes + 1):
        for _ in range(state.n):                        # Alg. 1 line 2: for k = 0, 1, ...
            i = sample_block(state, rng, sampling)      # Alg. 1 line 3 (uniform) or Alg. 2 line 4 (gap)
            block_step(state, i, kind)                  # Alg. 1 lines 4-11 (Alg. 3, 4, 5: the kind)
        if p % gap_check == 0:                          # Alg. 2 line 14: update global gap
            res = exact_gap(state)                      # Alg. 2 lines 15-20, Alg. 5 lines 24-30
            gaps.append(res.gap)
            if batch and res.gap > 0:
                batch_fw_step(state, res.corners, res.gap)
    return state, gaps
