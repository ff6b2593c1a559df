"""The solver: one block-update kernel for every step kind, stepped one block at a time
(``Solver.step``), k at a time (``steps``) or until a stopping rule (``run``).

Stepping and running share one code path and one RNG stream: a run of whole passes and the
same number of single steps give the same trace. Paper: Alg. 1-5 (block steps, samplers,
cache), Alg. 8 (batch FW step), Sec. 2.3 (duality gap).

What lives where: this module holds the :class:`Solver`'s construction, inspection, stepping
and running; :mod:`~gaplab.core.solver_records` the records it reports (:class:`StepRecord`,
:class:`ExactGap`, :class:`Result`) and its trace; :mod:`~gaplab.core.solver_state` its copies
and warm starts and the checks of its bounds and sampling weights;
:mod:`~gaplab.core.compile_clock` numba's compile time kept apart (:func:`watch_compiles`).
"""
from __future__ import annotations

import contextlib
import math
import time
from typing import Callable

import numpy as np

from . import certify, kernels as kr
from . import validate
from .compile_clock import COMPILE_CLOCK, watch_compiles
from .config import CacheConfig, Sampling, SolverConfig, Status, check_run_ends
from .models.protocol import check_arrays, check_interface, check_labelling
from .interrupt import Interrupted, deferred_sigint
from .solver_records import ExactGap, Result, StepRecord, TraceRecords
from .solver_state import SolverState, check_bounds, check_sampling_weights
from .state import allocate_state, config_arrays, grow_atoms

__all__ = ["Solver", "StepRecord", "Result", "ExactGap", "watch_compiles"]


class Solver(TraceRecords, SolverState):
    """BCFW-family solver for the SSVM dual (Paper: Eq. (3)).

    Parameters
    ----------
    model : ChainModel or MulticlassModel
        The model over the training set (one dual block per example).
    config : SolverConfig, optional
        Settings; keyword ``overrides`` replace single fields (validated).
    lb, ub : array of float64, shape (d,), optional
        Box constraints on w (±inf allowed; Paper: App. H). The untruncated v = Aα is kept and
        w = clip(v, lb, ub). Default: the model's own ``bounds()`` (None: no box).
    test_data : SequenceData, optional
        Evaluated (test error) at every exact gap check, outside the timed solver work.
    log_size : int
        Size of the ring log of step records (for the app).
    trace_limit : int
        Most trace records kept (>= 16). Beyond it the older half of the trace is thinned
        (every second record dropped, the first kept), so an unbounded run (a time limit, a
        callback or the app's Stop button ends it) keeps O(trace_limit) records with a
        resolution that coarsens geometrically into the past; ``trace_records_dropped`` counts
        what was dropped.
    sampling_weights : array of float64, shape (n,), optional
        Fixed non-negative sampling weights, required by (and only used with)
        ``sampling="weights"`` (e.g. curvature constants C_f^(i) of App. C).

    Raises
    ------
    ValueError, TypeError
        On invalid settings or bounds, or model arrays whose offsets, sizes or indices do not
        fit together (``ArraysError``, a ValueError); nothing is allocated then.
    """

    def __init__(self, model, config: SolverConfig | None = None, *, lb=None, ub=None,
                 test_data=None, log_size: int = 4096, sampling_weights=None, trace_limit: int = 10_000,
                 **overrides):
        check_interface(model)
        kr.model_kind_name(model.arrays)  # TypeError when its arrays are not a registered model kind
        check_arrays(model)  # the offsets and sizes the compiled kernels index with, O(n)
        if getattr(model, "oracle_tier", "compiled") == "compiled" and not kr.has_compiled_oracle(model.arrays):
            raise TypeError(f"model {getattr(model, 'name', type(model).__name__)!r} says oracle_tier='compiled' but its "
                            f"model kind {kr.model_kind_name(model.arrays)!r} registers no compiled oracle")
        config = SolverConfig() if config is None else config
        if not isinstance(config, SolverConfig):
            raise TypeError(f"config must be a SolverConfig, got {type(config).__name__}")
        if overrides:
            if "cache" in overrides and isinstance(overrides["cache"], dict):
                overrides["cache"] = CacheConfig(**overrides["cache"])
            config = config.replace(**overrides)
        if lb is None and ub is None:
            own = model.bounds()  # the box the model needs (App. H: e.g. w_pairwise >= 0), or None
            if own is not None:
                lb, ub = own
        lb, ub = check_bounds(lb, ub, model.arrays.d)
        log_size = validate.int_at_least("log_size", log_size, 1)
        trace_limit = validate.int_at_least("trace_limit", trace_limit, 16)
        n = model.arrays.n
        sampling_weights = check_sampling_weights(config.sampling, sampling_weights, n)
        self.python_oracle = getattr(model, "oracle_tier", "compiled") == "python"
        if self.python_oracle and config.sampling == Sampling.EXACT_GAP:
            raise ValueError("sampling='exact_gap' recomputes every block gap inside the compiled step and needs a "
                             f"compiled max oracle; model {getattr(model, 'name', type(model).__name__)!r} has a "
                             "Python one")
        self.model = model
        self.config = config
        self.test_data = test_data
        self.track = config.needs_atoms
        self._M = model.arrays
        self.n = n
        self.S = allocate_state(model, config, lb=lb, ub=ub, track=self.track, log_size=log_size,
                                weights=sampling_weights)
        self._ci, self._cf = config_arrays(config, lb is not None, self.track)
        self.wall_time = 0.0
        self.compile_time = 0.0
        self.passes_since_check = 0
        self._trace: list[dict] = []
        self._trace_ids: list[int] = []  # the record number of each kept record (thinning drops some)
        self._n_records = 0
        self._trace_limit = trace_limit
        self._last_exact: ExactGap | None = None
        self._last_exact_iter = -1
        self.status = Status.RUNNING
        self.not_exact: certify.OracleNotExact | None = None  # why the last run's gap certifies nothing

    # ------------------------------------------------------------------ properties
    @property
    def lam(self) -> float:
        return self.config.lam

    @property
    def w(self) -> np.ndarray:
        """Current primal iterate w(α) (a copy), float64 of shape (d,)."""
        return self.S.w.copy()

    @property
    def iteration(self) -> int:
        return int(self.S.counters[kr.C_ITER])

    @property
    def oracle_calls(self) -> int:
        return int(self.S.counters[kr.C_ORACLE])

    @property
    def effective_passes(self) -> float:
        """Oracle calls / n (an effective pass is n max-oracle calls)."""
        return self.oracle_calls / self.n

    @property
    def gap_estimates(self) -> np.ndarray:
        """Stale per-block gap estimates g_i^(k_i) (+inf where never computed), copy."""
        return self.S.gap_est.copy()

    @property
    def staleness(self) -> np.ndarray:
        """Iterations since each block gap estimate was computed (-1: never), int64 (n,)."""
        it = self.S.gap_iter
        return np.where(it >= 0, self.iteration - it, -1)

    @property
    def heuristic_gap(self) -> float:
        """Sum of the stale block gap estimates (inf until every block was visited)."""
        return float(np.sum(self.S.gap_est))

    def dual_objective(self) -> float:
        """Dual objective (maximization form) D(α) = ℓ − λ/2‖w‖² [− λ(β_u·ub − β_l·lb) with a
        box], O(d). Paper: Eq. (3) (its negative), App. H Eq. (52) (its negative)."""
        S, lam = self.S, self.lam
        D = S.scalars[kr.S_ELL] - 0.5 * lam * float(S.w @ S.w)
        if self._ci[kr.I_BOX]:
            bu = np.maximum(S.v - S.ub, 0.0)
            bl = np.maximum(S.lb - S.v, 0.0)
            fin_u, fin_l = bu > 0, bl > 0
            D -= lam * (float(bu[fin_u] @ S.ub[fin_u]) - float(bl[fin_l] @ S.lb[fin_l]))
        return float(D)

    def sampling_probabilities(self) -> np.ndarray:
        """Probability of each block at the next draw under the current sampler, float64 (n,)."""
        n = self.n
        mode = self.config.sampling
        S = self.S
        if mode in (Sampling.UNIFORM, Sampling.PERMUTATION):
            if mode == Sampling.PERMUTATION and S.counters[kr.C_PERM_POS] > 0:
                p = np.zeros(n)
                rest = S.perm[S.counters[kr.C_PERM_POS]:]
                p[rest] = 1.0 / rest.size
                return p
            return np.full(n, 1.0 / n)
        if mode == Sampling.WEIGHTS:
            return S.weights / S.weights.sum()
        nu = int(S.counters[kr.C_UNVISITED])
        if nu > 0 and mode != Sampling.EXACT_GAP:
            p = np.zeros(n)
            p[S.unv[:nu]] = 1.0 / nu
            return p
        g = np.maximum(np.nan_to_num(S.gap_est, nan=0.0), 0.0)
        if mode == Sampling.MAXGAP:
            p = np.zeros(n)
            p[int(np.argmax(S.gap_est))] = 1.0
            return p
        p = self.config.gap_power
        if p == 1.0:
            wts = g
        else:  # relative to the largest gap: a large p neither underflows nor overflows (-> max-gap)
            gmax = g[np.isfinite(g)].max(initial=0.0)
            wts = (g / gmax) ** p if gmax > 0 else g
        tot = wts.sum()
        return wts / tot if tot > 0 else np.full(n, 1.0 / n)

    def active_set_sizes(self) -> np.ndarray:
        """Number of atoms with α > 0 per block (int64 (n,)); -1 when atoms are not tracked."""
        if not self.track:
            return np.full(self.n, -1, dtype=np.int64)
        return (self.S.a_alpha > 0).sum(axis=1).astype(np.int64)

    def cache_sizes(self) -> np.ndarray:
        """Number of cached labellings per block (atoms, active or not), int64 (n,)."""
        return self.S.a_count.copy() if self.track else np.zeros(self.n, dtype=np.int64)

    def atoms(self, i: int):
        """The atoms of block i: list of (labelling int64 array, α, loss)."""
        if not 0 <= i < self.n:
            raise IndexError(f"block {i} out of range [0, {self.n})")
        if not self.track:
            return []
        M, S = self._M, self.S
        L = int(M.lab_off[i + 1] - M.lab_off[i])
        cap = S.a_alpha.shape[1]
        out = []
        for s in range(int(S.a_count[i])):
            b = int(M.lab_off[i]) * cap + s * L
            out.append((S.a_lab[b:b + L].copy(), float(S.a_alpha[i, s]), float(S.a_loss[i, s])))
        return out

    @property
    def sampler_oracle_calls(self) -> int:
        """Oracle calls made by the idealized exact-gap sampler (not in ``oracle_calls``)."""
        return int(self.S.counters[kr.C_SAMPLER_ORACLE])

    def step_counts(self) -> dict:
        c = self.S.counters
        return {"fw": int(c[kr.C_FW]), "away": int(c[kr.C_AWAY]), "pairwise": int(c[kr.C_PAIR]),
                "drop": int(c[kr.C_DROP]), "cache_hit": int(c[kr.C_HIT]), "purge": int(c[kr.C_PURGE]),
                "batch": int(c[kr.C_BATCH])}

    # ------------------------------------------------------------------ exact gaps
    def exact_gap(self, *, count: bool = True, store_corners: bool = False) -> ExactGap:
        """Exact duality gap at the current iterate (n oracle calls; Paper: Eq. (5)).

        With ``count`` (default) this is a gap check: the calls are counted as an effective pass,
        every block gap estimate is refreshed and g^(k_0) of the cache criterion is updated. With
        ``count=False`` it only observes (nothing in the solver state changes but a scratch buffer).
        With ``store_corners`` the FW corners of the pass are kept for :meth:`batch_step`.
        """
        S = self.S
        # with count=False the kernel leaves the estimates, counters and g^(k_0) untouched
        deltas = np.empty(self.n)
        with self._timed(solver_time=count), kr.primitive_errors(self._M):
            if self.python_oracle:
                gap, hsum = kr.exact_gap_pass_python(self._M, S, self._ci, self._cf, count, store_corners, deltas,
                                                     self._oracle)
            else:
                gap, hsum = kr.exact_gap_pass(self._M, S, self._ci, self._cf, count, store_corners, deltas)
        if store_corners:
            self._corners_valid = True
        if count:
            block_gaps = S.gap_exact.copy()
        else:
            block_gaps = np.full(self.n, np.nan)
        primal = 0.5 * self.lam * float(S.w @ S.w) + hsum / self.n
        if count:
            S.scalars[kr.S_LAST_PRIMAL] = primal
        res = ExactGap(gap=float(gap), primal=float(primal), dual=self.dual_objective(), block_gaps=block_gaps,
                       block_deltas=deltas)
        if count:
            self._last_exact = res
            self._last_exact_iter = self.iteration
        return res

    # ------------------------------------------------------------------ stepping
    @contextlib.contextmanager
    def _timed(self, solver_time: bool = True):
        """Add the block's time to ``wall_time`` (when ``solver_time``), less what numba spent
        compiling meanwhile, which goes to ``compile_time``."""
        c0 = COMPILE_CLOCK.total()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            dc = COMPILE_CLOCK.total() - c0
            self.compile_time += dc
            if solver_time:
                self.wall_time += max(dt - dc, 0.0)

    def _grow_if_needed(self):
        if self.S.counters[kr.C_GROW]:
            self.S = grow_atoms(self._M, self.S, cache_size=self._cache_slots())

    def _cache_slots(self) -> int:
        """Labellings the cache may keep per block (0 without a cache)."""
        return int(self._ci[kr.I_CACHE_SIZE]) if self._ci[kr.I_CACHE] else 0

    def _advance(self, max_steps: int) -> int:
        """Run up to max_steps block steps without crossing a pass boundary."""
        self._grow_if_needed()
        n = self.n
        todo = min(max_steps, n - (self.iteration % n))
        with self._timed():
            done = self._run_steps(todo)
        if done < todo:
            self._grow_if_needed()
            with self._timed():
                done += self._run_steps(todo - done)
        if done > 0:
            self._corners_valid = False
        if self.iteration % n == 0 and done > 0:
            self._end_of_pass()
        return done

    def _run_steps(self, todo: int) -> int:
        """Up to ``todo`` block steps: the fused compiled loop, or (Python oracle tier) per step
        the compiled pre-step kernel, the model's max oracle and the compiled post-step kernel.
        Stops early when an atom pool must grow."""
        with kr.primitive_errors(self._M):
            if not self.python_oracle:
                return kr.run_steps(self._M, self.S, self._ci, self._cf, todo)
            return self._run_steps_python(todo)

    def _run_steps_python(self, todo: int) -> int:
        S = self.S
        done = 0
        while done < todo:
            # what the pre-step kernel changes before the oracle answers (the draw), to undo it
            # when the oracle fails: the step is then not taken and the next draw is the same
            saved = (S.rng.copy(), S.counters.copy(), S.perm.copy() if S.counters[kr.C_PERM_POS] == 0 else None)
            i, need_oracle = kr.pre_step(self._M, S, self._ci, self._cf)
            if i < 0:
                break
            if need_oracle:
                try:
                    y = self._oracle(i, S.w)
                except BaseException:
                    S.rng[:], S.counters[:] = saved[0], saved[1]
                    if saved[2] is not None:
                        S.perm[:] = saved[2]
                    raise
                S.ybuf[: y.shape[0]] = y
            kr.post_step(self._M, S, self._ci, self._cf)
            done += 1
        return done

    def _oracle(self, i: int, w) -> np.ndarray:
        """The model's Python max oracle at block i, its answer checked (shape, integer dtype,
        labels in range): a wrong answer raises before it can reach the compiled kernels."""
        return check_labelling(self.model, int(i), self.model.max_oracle(int(i), w), "max oracle's labelling")

    def _end_of_pass(self):
        self.passes_since_check += 1
        rec = self._record("pass")
        if self.passes_since_check >= self.config.gap_check:
            self._gap_check()
        return rec

    def _gap_check(self):
        self.passes_since_check = 0
        ex = self.exact_gap(count=True, store_corners=self.config.batch_step)
        test_err = self.test_error() if self.test_data is not None else math.nan
        self._record("gap_check", exact=ex, test_error=test_err)
        # no batch step once the run's threshold is met: the result must be the certified point
        stop_gap = getattr(self, "_run_threshold", None)  # set while run() is running
        if stop_gap is None:
            stop_gap = self.config.gap_threshold
        if self.config.batch_step and ex.gap > 0 and not (stop_gap > 0 and ex.gap <= stop_gap):
            self.batch_step(ex.gap)

    def batch_step(self, gap: float | None = None) -> float:
        """Batch FW step on all blocks at once (Paper: Alg. 8; the authors' ``do_batch_step``).

        Parameters
        ----------
        gap : float, optional
            The duality gap at the current iterate. When given, the FW corners stored by the
            last ``exact_gap(store_corners=True)`` are reused (they depend on w only, so they stay
            valid across a keep-primal warm start); otherwise a counted exact gap pass finds them.

        Returns
        -------
        float
            The step size γ in [0, 1].
        """
        if gap is None or not getattr(self, "_corners_valid", False):
            gap = self.exact_gap(count=True, store_corners=True).gap
        gap = validate.nonnegative("gap", gap, allow_inf=True)
        with self._timed():
            gam = kr.batch_fw_step(self._M, self.S, self._ci, self._cf, gap)
            if gam < 0:
                self._grow_if_needed()
                gam = kr.batch_fw_step(self._M, self.S, self._ci, self._cf, gap)
            self._grow_if_needed()
        self._corners_valid = False
        if gam > 0:
            self._last_exact_iter = -1  # w moved: the last exact gap is no longer the current one
        self._record("batch", extra={"gamma": float(gam)})
        return float(gam)


    def step(self) -> StepRecord:
        """One block step (k = 1 of the same kernel that runs whole passes)."""
        self.steps(1)
        return self.last_steps(1)[-1]

    def steps(self, k: int) -> int:
        """Run k block steps (gap checks happen at pass boundaries exactly as in ``run``).
        Returns the number of steps done."""
        k = validate.int_at_least("k", k, 0)
        done = 0
        while done < k:
            done += self._advance(int(k - done))
        return done

    def block_gap_now(self, i: int) -> float:
        """Exact gap of block i at the current w (a diagnostic oracle call, not counted)."""
        if not 0 <= i < self.n:
            raise IndexError(f"block {i} out of range [0, {self.n})")
        if self.python_oracle:
            self.S.counters[kr.C_DIAG_ORACLE] += 1
            return self.corner_gap(i, self._oracle(i, self.S.w))
        return float(kr.block_gap_now(self._M, self.S, int(i)))

    def corner_gap(self, i: int, y) -> float:
        """⟨−∇_i f, e_y − α_i⟩ = λ⟨w_i − w_y, w⟩ − ℓ_i + ℓ_y at the current point: the gap towards
        labelling ``y`` of block i (the block gap for the FW corner; the cache corner's gap, Paper:
        Alg. 5 line 8). No oracle call. Raises IndexError for a block out of range."""
        if not 0 <= i < self.n:
            raise IndexError(f"block {i} out of range [0, {self.n})")
        S = self.S
        g, _, _ = kr.gap_block_given_corner(self._M, S.w, S.mu, int(i), np.empty(S.h.shape[0]),
                                            np.asarray(y, dtype=np.int64), np.empty(S.ybuf.shape[0], dtype=np.int64))
        return float(g)

    # ------------------------------------------------------------------ running
    def run(self, *, max_passes: float | None = None, time_limit: float | None = None,
            gap_threshold: float | None = None, callback: Callable | None = None,
            final_gap_check: bool = True, should_stop: Callable[[], bool] | None = None) -> Result:
        """Run until a stopping rule fires.

        Parameters
        ----------
        max_passes : float, optional
            Budget in effective passes counted from the start of the solver (default: config).
        time_limit : float, optional
            Seconds of solver time for this call (default: config).
        gap_threshold : float, optional
            Stop when the exact duality gap <= this (default: config). Only an exact, fresh gap
            stops the run unless ``config.stop_on_heuristic_gap``.
        callback : callable(solver, record) -> bool, optional
            Called after every pass and gap check record; returning True stops the run.
        final_gap_check : bool
            Make sure the result carries an exact gap of the final iterate (one more counted gap
            pass if the last one is stale).
        should_stop : callable() -> bool, optional
            Polled between chunks (used by the app's Stop button).

        Returns
        -------
        Result
            Its status is ``converged`` whenever the exact duality gap of the final iterate is
            <= gap_threshold (> 0), also when the budget ran out at the same time (the final gap
            check is then what certified it); ``oracle_not_exact`` when an exact gap fell below
            −tolerance (the max oracle is not exact, :mod:`~gaplab.core.certify`; the run stops
            at that gap check and ``solver.not_exact`` names the block and a better labelling).

        Raises
        ------
        ValueError
            On an invalid override, or when nothing would ever stop the run: max_passes and
            time_limit inf, no callback or should_stop, and gap_threshold 0 or no exact gap ever
            computed (gap_check inf without ``stop_on_heuristic_gap``).
        Interrupted
            On Ctrl-C (SIGINT, main thread): the run stops after the current chunk (at most
            one pass and its gap check), without the final gap check; the solver state is intact
            and a second ``run()`` continues. ``exc.partial`` is the :class:`Result` so far
            (status ``interrupted``; its exact gap is the last one computed, see
            :attr:`fresh_exact_gap`). A second Ctrl-C raises KeyboardInterrupt at once.
        """
        max_passes, time_limit, thr = self._run_limits(max_passes, time_limit, gap_threshold,
                                                       callback is None and should_stop is None)
        start_time = self.wall_time
        budget_calls = max_passes * self.n
        status = Status.RUNNING
        n_records = self._n_records
        self._run_threshold = thr
        try:
            with deferred_sigint() as sigint:  # Ctrl-C: stop between chunks, state intact
                status = self._run_loop(status, budget_calls, n_records, thr, start_time, time_limit,
                                        callback, should_stop, sigint)
                if sigint.is_set():  # Ctrl-C during the last chunk of a run that ended anyway
                    status = Status.INTERRUPTED
        finally:
            self._run_threshold = None
        if status == Status.INTERRUPTED:
            self.status = status
            raise Interrupted("Solver.run() interrupted (SIGINT); the state is intact, run() continues",
                              partial=self.result())
        if final_gap_check and (self._last_exact is None or self._last_exact_iter != self.iteration):
            ex = self.exact_gap(count=True)
            self._record("gap_check", exact=ex,
                         test_error=self.test_error() if self.test_data is not None else math.nan)
        fresh = self.fresh_exact_gap
        if (status in (Status.MAX_PASSES, Status.TIME_LIMIT, Status.CONVERGED_HEURISTIC) and thr > 0
                and fresh is not None and fresh.gap <= thr):
            status = Status.CONVERGED  # the budget ran out, but the final iterate's exact gap meets it
        ex = fresh or self._last_exact
        if status == Status.ORACLE_NOT_EXACT or (ex is not None and certify.is_impossible_gap(ex.gap, ex.primal,
                                                                                              ex.dual)):
            status, self.not_exact = Status.ORACLE_NOT_EXACT, certify.diagnose(self, ex)  # never "converged"
        self.status = status
        return self.result()

    def _run_limits(self, max_passes, time_limit, gap_threshold, must_end: bool):
        """(max_passes, time_limit, gap_threshold) of a run: the overrides checked, else the
        config's; with ``must_end`` (no callback or should_stop) a ValueError when nothing
        would ever stop the run."""
        cfg = self.config
        max_passes = cfg.max_passes if max_passes is None else validate.positive("max_passes", max_passes,
                                                                                  allow_inf=True)
        time_limit = cfg.time_limit if time_limit is None else validate.positive("time_limit", time_limit,
                                                                                  allow_inf=True)
        thr = cfg.gap_threshold if gap_threshold is None else validate.nonnegative("gap_threshold", gap_threshold,
                                                                                    allow_inf=True)
        if must_end:
            try:
                check_run_ends(max_passes, time_limit, thr, cfg.gap_check, cfg.stop_on_heuristic_gap)
            except ValueError as exc:
                raise ValueError(f"run(): {exc} (or pass a callback / should_stop that ends the run)") from None
        return max_passes, time_limit, thr

    def _run_loop(self, status, budget_calls, n_records, thr, start_time, time_limit, callback,
                  should_stop, sigint):
        cfg = self.config
        n = self.n
        while status == Status.RUNNING:
            # a budget of k/n passes is k calls: floor with a relative tolerance, so that rounding in
            # max_passes * n (e.g. (c/n + 0.1) * n = c + 0.999…) cannot lose a call
            remaining = (int(math.floor(budget_calls - self.oracle_calls + 1e-9 * max(1.0, budget_calls)))
                         if math.isfinite(budget_calls) else n)
            if remaining <= 0:
                status = Status.MAX_PASSES
                break
            self._advance(min(remaining, n))
            for rec in self._records_since(n_records):
                if rec["kind"] == "gap_check" and certify.is_impossible_gap(rec["exact_gap"], rec["primal"],
                                                                            rec["dual"]):
                    status = Status.ORACLE_NOT_EXACT  # a negative gap: no certificate, stop here
                elif rec["kind"] == "gap_check" and thr > 0 and rec["exact_gap"] <= thr:
                    status = Status.CONVERGED
                elif (rec["kind"] == "pass" and cfg.stop_on_heuristic_gap and thr > 0
                      and rec["heuristic_gap"] <= thr):
                    status = Status.CONVERGED_HEURISTIC
                if callback is not None and callback(self, rec):
                    status = Status.STOPPED if status == Status.RUNNING else status
            n_records = self._n_records
            if status != Status.RUNNING:
                break
            if sigint.is_set():
                status = Status.INTERRUPTED
            elif self.wall_time - start_time >= time_limit:
                status = Status.TIME_LIMIT
            elif should_stop is not None and should_stop():
                status = Status.STOPPED
        return status


    @property
    def fresh_exact_gap(self) -> ExactGap | None:
        """The last counted exact gap pass if the iterate has not moved since (no block step,
        batch step or warm start after it), else None. Its ``block_deltas`` and ``block_gaps``
        then describe the current point."""
        if self._last_exact is None or self._last_exact_iter != self.iteration:
            return None
        return self._last_exact

    def gap_check(self) -> ExactGap:
        """A gap check now, as the periodic ones: a counted exact gap pass (n oracle calls) that
        refreshes every block gap estimate, adds a "gap_check" trace record (with the test error
        when test data is given) and restarts the count of passes to the next periodic check."""
        self._gap_check()
        return self._last_exact

    @property
    def exact_block_gaps(self):
        """(block gaps, iteration): the exact block gaps g_i of the last counted exact gap pass,
        float64 (n,), and the iteration k it was made at; (None, -1) before any."""
        if self._last_exact is None or self.S.counters[kr.C_LAST_CHECK] < 0:
            return None, -1
        return self.S.gap_exact.copy(), int(self.S.counters[kr.C_LAST_CHECK])

    def test_error(self) -> float:
        if self.test_data is None:
            return math.nan
        return self.model.error(self.S.w, self.test_data)

    def train_error(self) -> float:
        return self.model.error(self.S.w)
