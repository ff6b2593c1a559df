"""The readable reference solver (gaplab.core.reference) driven with the fast solver's blocks
and compared step by step (:func:`follow`), for the solver tests of every model.

Exact ties (two labellings with the same H_i up to round-off) are followed through the drivers'
``oracle``: :class:`FollowCorners` takes the fast solver's corner only when it ties with the
reference's own choice."""
import math

import numpy as np

from gaplab.core import CacheConfig, Solver
from gaplab.core import reference as ref


#: Two labellings whose H_i(y; w) differ by at most this (times n) are tied.
TIE_TOL = 1e-10


class FollowCorners(ref.MaxOracle):
    """The reference's own corners, except that a given FW / away corner of the fast solver is
    taken instead when it is a candidate of the same search and ties with the reference's choice
    (the same H_i up to round-off): which of two tied labellings comes first is decided by
    round-off, so this follows the fast solver through exact ties and nowhere else."""

    def __init__(self, fw=None, away=None):
        self.fw, self.away = fw, away

    @staticmethod
    def _tie(state, i, best, prefer, candidates=None):
        if prefer is None:
            return best
        prefer, best_key = tuple(int(t) for t in prefer), tuple(int(t) for t in best)
        if candidates is not None and prefer not in candidates:
            return best
        tied = abs(ref.scaled_H(state, i, best) - ref.scaled_H(state, i, prefer)) * state.n <= TIE_TOL
        return np.array(prefer, dtype=np.int64) if prefer != best_key and tied else best

    def argmax(self, state, i):
        return self._tie(state, i, super().argmax(state, i), self.fw)

    def argmax_cache(self, state, i):
        return self._tie(state, i, super().argmax_cache(state, i), self.fw, state.atoms[i])

    def argmin_active(self, state, i):
        active = [y for y, a in state.atoms[i].items() if a > 0.0]
        return self._tie(state, i, super().argmin_active(state, i), self.away, active)


def close(a, b, scale, rtol=1e-9):
    return abs(a - b) <= rtol * (abs(a) + abs(b) + scale)


def follow(solver, state, kind, steps, stop_gap=0.0):
    """Drive the reference with the fast solver's blocks and compare every step. Stops early once
    the fast solver's exact gap is <= stop_gap (at the optimum every comparison is round-off)."""
    counts = dict(steps=0, hits=0, misses=0, drops=0, gap_checks=0, batch=0, fw=0, away=0, pairwise=0,
                  kind_ties=0)
    seen = solver.n_trace_records
    last_pass = None
    for _ in range(steps):
        rec = solver.step()
        info = ref.block_step(state, rec.block, kind, oracle=FollowCorners(rec.fw_corner, rec.away_corner))
        scale = 1.0 / state.n
        assert info.cache_hit == rec.cache_hit, (counts, rec, info)
        assert np.array_equal(info.fw_corner, rec.fw_corner), (rec, info)
        if rec.away_corner is not None:
            assert np.array_equal(info.away_corner, rec.away_corner), (rec, info)
        if info.kind == rec.kind:
            assert close(info.gamma, rec.gamma, 1e-12), (rec, info)
            assert close(info.direction_gap, rec.direction_gap, scale), (rec, info)
            assert info.drop == rec.drop
        else:
            # the kinds may differ only when the candidates improve f equally: the combined step's
            # FW, away and pairwise candidates reach the same point when the FW corner is in a
            # two-atom active set; at the optimum every candidate is a round-off no-op
            assert kind in ("away", "combined"), (rec, info)
            assert close(info.improvement, rec.improvement, 1e-15), (rec, info)
            counts["kind_ties"] += 1
        assert close(info.improvement, rec.improvement, 1e-15), (rec, info)
        assert close(info.block_gap_estimate, rec.block_gap_estimate, scale), (rec, info)
        for r in solver.trace(since=seen):  # the fast solver's gap checks and batch steps
            if r["kind"] == "gap_check":
                last_pass = ref.exact_gap(state)
                assert close(last_pass.gap, r["exact_gap"], scale), (last_pass.gap, r["exact_gap"])
                assert close(last_pass.primal, r["primal"], scale)
                counts["gap_checks"] += 1
            elif r["kind"] == "batch":
                assert math.isclose(ref.batch_fw_step(state, last_pass.corners, last_pass.gap), r["gamma"],
                                    rel_tol=1e-9, abs_tol=1e-15)
                counts["batch"] += 1
        seen = solver.n_trace_records
        w_fast = solver.w
        assert np.abs(state.w - w_fast).max() <= 1e-10 * max(1.0, np.abs(w_fast).max())
        counts["steps"] += 1
        counts[rec.kind] += 1
        counts["hits" if rec.cache_hit else "misses"] += 1
        counts["drops"] += rec.drop
        if last_pass is not None and solver.fresh_exact_gap is not None and last_pass.gap <= stop_gap:
            break
    # the exact duality gap of both solvers at the same point (Eq. (5)-(7))
    mine, theirs = ref.exact_gap(state, count=False), solver.exact_gap(count=False)
    for a, b in ((mine.gap, theirs.gap), (mine.primal, theirs.primal), (mine.dual, theirs.dual)):
        assert close(a, b, 1.0 / state.n), (mine, theirs)
    return counts


def pair(model, lam, kind, *, cache=False, size=8, factor=0.25, lb=None, ub=None, batch=False,
         sampling="gap"):
    solver = Solver(model, lam=lam, step=kind, sampling=sampling, gap_check=1, max_passes=1e9,
                    cache=CacheConfig(enabled=cache, size=size, factor=factor), lb=lb, ub=ub, batch_step=batch)
    state = ref.init_state(model, lam, lb=lb, ub=ub, atoms=solver.config.needs_atoms, cache=cache,
                           cache_size=size, cache_factor=factor)
    return solver, state
