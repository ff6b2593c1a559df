"""Step with the reference solver while the numba kernels compile, then hand over.

On a fresh install the kernels of a block step take a minute or more to compile. Until they are
ready, a Session answers Step (k = 1 steps only) with :class:`ReferenceStepper`: the readable
reference solver (:mod:`gaplab.core.reference`, plain numpy) on the chain model written in
plain Python (:class:`gaplab.toy_examples.plain_chain.PlainChain`, a numpy Viterbi), drawing
the blocks exactly as the fast solver does (its xoshiro256** stream, run uncompiled by
:class:`gaplab.core.rng.Xoshiro`, and its list of never-visited blocks, here as plain Python
ints). The blocks, step kinds and corners are the fast solver's; γ, the gaps and w agree with
it to round-off (the reference keeps w_i per block, the fast solver the block statistics). Once
the kernels are ready, :meth:`ReferenceStepper.handover` replays the same k steps on the fast
:class:`~gaplab.core.Solver` from the same seed, so from then on state and trace are bitwise the
fast solver's.

Supported: the chain model (OCR, CoNLL) with FW steps (Paper: Alg. 1), uniform or gap
sampling (Alg. 2), no cache, no box, within the first pass (before the pass end's gap check;
while a block is unvisited gap sampling draws uniformly among the unvisited blocks, which does
not depend on the gaps' round-off). No Panel import.
"""
from __future__ import annotations

import math
import time

import numpy as np

from gaplab.core import reference as ref
from gaplab.core.config import Sampling, StepKind
from gaplab.core.kernels.layout import C_DIAG_ORACLE
from gaplab.core.rng import Xoshiro
from gaplab.core.solver_records import StepRecord

__all__ = ["REFERENCE_NOTE", "Xoshiro", "ReferenceStepper", "reference_stepper", "supports"]

#: what the page says while the reference solver answers the Steps
REFERENCE_NOTE = "stepping with the reference solver while the kernels compile"


def supports(solver) -> bool:
    """The reference solver can stand in for ``solver`` (see the module's text)."""
    from gaplab.core.models.chain import ChainModel
    cfg = solver.config
    return (isinstance(solver.model, ChainModel) and solver.iteration == 0 and solver.n >= 2
            and StepKind(cfg.step) == StepKind.FW and Sampling(cfg.sampling) in (Sampling.UNIFORM, Sampling.GAP)
            and not cfg.cache.enabled and not solver.track and not np.size(solver.S.lb))


def reference_stepper(solver):
    """A :class:`ReferenceStepper` standing in for ``solver`` (a fast Solver that has made no
    step), or None when its model or settings are not supported (see the module's text)."""
    return ReferenceStepper(solver) if supports(solver) else None


class ReferenceStepper:
    """Stands in for an unstepped fast Solver ``fast`` (what a Session reads of a solver) and
    answers its first block steps with the reference solver.

    Parameters
    ----------
    fast : gaplab.core.Solver
        The fast solver, at iteration 0, of a chain model with FW steps, uniform or gap
        sampling, no cache and no box (:func:`reference_stepper` checks this).
    """

    def __init__(self, fast):
        from gaplab.core.models.plain import PythonModel
        from gaplab.toy_examples.plain_chain import PlainChain, chain_examples
        m = fast.model
        self.fast = fast
        self.config, self.model, self.lam, self.n = fast.config, m, fast.lam, fast.n
        self.track, self.test_data, self.S = False, fast.test_data, fast.S
        self.plain = PythonModel(PlainChain(m.F, m.K), chain_examples(m.data), name="reference chain")
        self.state = ref.init_state(self.plain, self.lam)
        self._rng = Xoshiro(fast.config.seed)
        self._uniform = Sampling(fast.config.sampling) == Sampling.UNIFORM
        self._unv = list(range(self.n))   # the fast solver's never-visited list (swap-remove)
        self._pos = list(range(self.n))
        self._nu = self.n
        self.records: list[StepRecord] = []
        self.wall_time = 0.0
        self.diagnostic_calls = 0   # block_gap_now's oracle calls (the fast solver counts them too)

    # ------------------------------------------------------------------ stepping
    def can_step(self) -> bool:
        """Another step stays within the first pass before its last step (whose pass end the
        fast solver follows with its own bookkeeping)."""
        return self.state.k < self.n - 1

    def _draw(self) -> int:
        if self._uniform:
            return self._rng.randint(self.n)             # Alg. 1 line 3
        return self._unv[self._rng.randint(self._nu)]    # Alg. 2 line 4: unvisited (g_i = +inf) first

    def _visit(self, i: int) -> None:
        p = self._pos[i]
        if p >= 0:
            last = self._nu - 1
            other = self._unv[last]
            self._unv[p], self._pos[other] = other, p
            self._unv[last], self._pos[i] = i, -1
            self._nu = last

    def step(self) -> StepRecord:
        """One block step (Paper: Alg. 1 lines 3-11, with the gap sampling draw, k_i and the
        stored gap g_i^(k_i) of Alg. 2 lines 4, 6 and 8).

        Raises
        ------
        RuntimeError
            When :meth:`can_step` is False (hand over first)."""
        if not self.can_step():
            raise RuntimeError("the reference stepper covers the first pass only: hand over to the fast solver")
        t0 = time.perf_counter()
        k = self.state.k
        i = self._draw()
        info = ref.bcfw_step(self.state, i)
        self._visit(i)
        rec = StepRecord(iteration=k, block=i, kind=info.kind, cache_hit=False, drop=False, oracle_called=True,
                         gamma=float(info.gamma), gamma_max=float(info.gamma_max),
                         block_gap_estimate=float(info.block_gap_estimate), direction_gap=float(info.direction_gap),
                         improvement=float(info.improvement), active_set_size=-1,
                         fw_corner=np.asarray(self.plain.labels(i, info.fw_corner), dtype=np.int64),
                         away_corner=None)
        self.records.append(rec)
        self.wall_time += time.perf_counter() - t0
        return rec

    def handover(self, fresh=None):
        """The fast solver after the same steps from the same seed (k = 1 steps or a chunk of k
        give the same trace bitwise). Needs the compiled kernels (compiles them otherwise).

        Parameters
        ----------
        fresh : gaplab.core.Solver or None
            An unstepped Solver of the same model and settings (default: the one this stepper
            stands in for)."""
        fast = self.fast if fresh is None else fresh
        if fast.iteration != 0:
            raise ValueError(f"fresh must be an unstepped Solver, got one at iteration {fast.iteration}")
        fast.steps(len(self.records))
        fast.S.counters[C_DIAG_ORACLE] += self.diagnostic_calls
        return fast

    # ------------------------------------------------------------------ what a Session reads
    @property
    def iteration(self) -> int:
        return self.state.k

    @property
    def oracle_calls(self) -> int:
        return self.state.k

    @property
    def effective_passes(self) -> float:
        return self.state.k / self.n

    @property
    def w(self) -> np.ndarray:
        return self.state.w

    @property
    def gap_estimates(self) -> np.ndarray:
        return self.state.gap_estimates.copy()

    @property
    def staleness(self) -> np.ndarray:
        it = self.state.gap_iteration
        return np.where(it >= 0, self.state.k - it, -1)

    @property
    def heuristic_gap(self) -> float:
        return float(np.sum(self.state.gap_estimates))

    @property
    def exact_block_gaps(self):
        return None, -1

    @property
    def n_trace_records(self) -> int:
        return self.fast.n_trace_records   # no pass has ended: the records of α⁰

    def trace(self, since: int = 0) -> list:
        return self.fast.trace(since=since)

    def dual_objective(self) -> float:
        return float(ref.dual_objective(self.state))

    def sampling_probabilities(self) -> np.ndarray:
        if self._uniform:
            return np.full(self.n, 1.0 / self.n)
        p = np.zeros(self.n)
        p[self._unv[:self._nu]] = 1.0 / self._nu
        return p

    def last_steps(self, m: int) -> list:
        return self.records[-m:] if m > 0 else []

    def block_gap_now(self, i: int) -> float:
        """Exact gap of block i at the current w (a diagnostic oracle call, not counted)."""
        if not 0 <= i < self.n:
            raise IndexError(f"block {i} out of range [0, {self.n})")
        self.diagnostic_calls += 1
        return float(ref.block_gap(self.state, i, ref.MAX_ORACLE.argmax(self.state, i)))

    def step_counts(self) -> dict:
        counts = self.fast.step_counts()   # the fast solver's keys, at iteration 0
        counts = {key: 0 for key in counts}
        counts["fw"] = self.state.k
        return counts

    def test_error(self) -> float:
        return math.nan if self.test_data is None else self.model.error(self.state.w, self.test_data)
