"""The solver: one block-update kernel for every step kind, stepped one block at a time
(``Solver.step``), k at a time (``steps``) or until a stopping rule (``run``).

Stepping and running share one code path and one RNG stream: a run of whole passes and the
same number of single steps give the same trace. Paper: Alg. 1-5 (block steps, samplers,
cache), Alg. 8 (batch FW step), Sec. 2.3 (duality gap).
"""
from __future__ import annotations

import bisect
import contextlib
import math
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numba.core.event
import numpy as np

from . import kernels as kr
from . import validate
from .config import CacheConfig, Sampling, SolverConfig, Status, StepKind, check_run_ends
from .models.protocol import check_arrays, check_interface, check_labelling
from .interrupt import Interrupted, deferred_sigint
from .state import allocate_state, config_arrays, copy_state, grow_atoms, state_nbytes

__all__ = ["Solver", "StepRecord", "Result", "ExactGap", "watch_compiles"]

_KIND_NAMES = {kr.KIND_FW: "fw", kr.KIND_AWAY: "away", kr.KIND_PAIRWISE: "pairwise", kr.KIND_NONE: "none"}


class _CompileClock(numba.core.event.Listener):
    """Seconds each thread spends in numba's global compiler lock: compiling a kernel for new
    argument types, or loading its machine code from the on-disk cache (a call of a kernel
    already compiled for its argument types does not take the lock). The solver subtracts
    this time from its own (``wall_time_s``) and reports it as ``compile_time_s``: on a cold
    cache the first pass and the first gap check are mostly compilation, which is not the
    method's cost. Per thread, because the app runs several solvers in worker threads;
    nested (reentrant) lock holds count once."""

    def __init__(self):
        self._local = threading.local()

    def _state(self):
        st = self._local
        if not hasattr(st, "depth"):
            st.depth, st.t0, st.total, st.watchers = 0, 0.0, 0.0, []
        return st

    def on_start(self, event):
        st = self._state()
        if st.depth == 0:
            st.t0 = time.perf_counter()
            self._notify(st, True)
        st.depth += 1

    def on_end(self, event):
        st = self._state()
        st.depth = max(st.depth - 1, 0)
        if st.depth == 0:
            st.total += time.perf_counter() - st.t0
            self._notify(st, False)

    @staticmethod
    def _notify(st, active):
        for fn in list(st.watchers):
            try:
                fn(active)
            except Exception:  # noqa: BLE001 - a failing display must not fail numba's compile
                pass

    def total(self) -> float:
        """Seconds this thread has spent in the compiler lock (finished holds)."""
        return self._state().total


_COMPILE_CLOCK = _CompileClock()
numba.core.event.register("numba:compiler_lock", _COMPILE_CLOCK)


@contextlib.contextmanager
def watch_compiles(callback: Callable[[bool], None]):
    """Within the block, ``callback(True)`` when this thread starts compiling (or loading
    compiled kernels from the cache) and ``callback(False)`` when it is done: the CLI's progress
    bar says "compiling" meanwhile."""
    st = _COMPILE_CLOCK._state()
    st.watchers.append(callback)
    try:
        yield
    finally:
        st.watchers.remove(callback)


@dataclass(frozen=True)
class StepRecord:
    """What one block step did (Paper: Alg. 1, 3, 4, 5).

    Attributes
    ----------
    iteration : int
        Iteration k of the step (block steps done before it).
    block : int
        The block (training example) i that was updated.
    kind : str
        "fw", "away" or "pairwise".
    cache_hit : bool
        The FW corner came from the cache (no oracle call).
    drop : bool
        The away corner's mass reached 0 (drop step).
    oracle_called : bool
        A max-oracle call was made (cache miss or no cache).
    gamma, gamma_max : float
        Step size and its upper bound (1 for FW, α_a for pairwise, α_a/(1-α_a) for away).
    block_gap_estimate : float
        The block's gap estimate after the step's oracle call (exact at the step's iterate when
        the oracle was called; unchanged and stale on a cache hit).
    direction_gap : float
        ⟨-∇_i f, d⟩ of the chosen direction d (the FW gap for a FW step).
    improvement : float
        Decrease of the dual objective f (>= 0).
    active_set_size : int
        Number of atoms with α > 0 on the block after the step (-1 when not tracked).
    fw_corner, away_corner : ndarray of int64 or None
        The labellings of the FW corner and of the away corner (None for a FW step).
    """

    iteration: int
    block: int
    kind: str
    cache_hit: bool
    drop: bool
    oracle_called: bool
    gamma: float
    gamma_max: float
    block_gap_estimate: float
    direction_gap: float
    improvement: float
    active_set_size: int
    fw_corner: np.ndarray | None = None
    away_corner: np.ndarray | None = None


@dataclass(frozen=True)
class ExactGap:
    """Result of an exact gap pass (n oracle calls at the current w).

    Attributes
    ----------
    gap : float
        Duality gap g(α) = Σ_i g_i = primal − dual (Paper: Eq. (5)-(7)).
    primal, dual : float
        Primal objective λ/2‖w‖² + (1/n)Σ_i max_y H_i(y; w) and dual objective (maximization form).
    block_gaps : ndarray of float64, shape (n,)
        Exact block gaps g_i (Paper: Eq. (6)-(7)); NaN for an uncounted pass.
    block_deltas : ndarray of float64, shape (n,)
        δ_i = (1/n) Σ_y α_i(y) H_i(y; w) at the same point, Σ_i δ_i = ℓ − λ‖w‖² (Paper: Alg. 7,
        line 4; what a regularization path step adds to the gap, Proposition 1). Computed for
        free from the scores of the pass.
    """

    gap: float
    primal: float
    dual: float
    block_gaps: np.ndarray
    block_deltas: np.ndarray


@dataclass
class Result:
    """Outcome of :meth:`Solver.run`.

    Attributes
    ----------
    status : Status
    primal, dual, exact_gap : float
        At the last exact gap pass (fresh at the end of the run when ``final_gap_check``).
    heuristic_gap : float
        Sum of the (stale) block gap estimates at the end.
    effective_passes : float
        Oracle calls / n (gap passes included).
    oracle_calls, cache_hits, steps : int
    wall_time_s : float
        Seconds spent in the solver (block steps and gap passes; test-error evaluation and
        numba's compilation excluded). The trace's ``wall_time_s`` is on the same clock.
    step_counts : dict
        Counts of "fw", "away", "pairwise", "drop", "cache_hit", "purge", "batch" steps.
    w : ndarray of float64, shape (d,)
    trace : list of dict
        One record per pass over the data and per gap check (see :meth:`Solver.trace`).
    compile_time_s : float
        Seconds numba spent compiling the solver's kernels (or loading them from its on-disk
        cache) during the solver's calls, apart from ``wall_time_s``.
    """

    status: Status
    primal: float
    dual: float
    exact_gap: float
    heuristic_gap: float
    effective_passes: float
    oracle_calls: int
    cache_hits: int
    steps: int
    wall_time_s: float
    step_counts: dict
    w: np.ndarray
    trace: list = field(default_factory=list)
    compile_time_s: float = 0.0

    def to_dict(self, include_w: bool = False) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("w", "status")}
        out["status"] = self.status.name.lower()
        if include_w:
            out["w"] = self.w.tolist()
        return out


def _check_bounds(lb, ub, d):
    if lb is None and ub is None:
        return None, None
    lb = np.full(d, -np.inf) if lb is None else np.asarray(lb, dtype=np.float64)
    ub = np.full(d, np.inf) if ub is None else np.asarray(ub, dtype=np.float64)
    if lb.shape != (d,):
        raise ValueError(f"lower bound lb must have shape ({d},), got {lb.shape}")
    if ub.shape != (d,):
        raise ValueError(f"upper bound ub must have shape ({d},), got {ub.shape}")
    if np.isnan(lb).any() or np.isnan(ub).any():
        raise ValueError("box bounds lb/ub contain NaN")
    if np.any(lb > ub):
        j = int(np.flatnonzero(lb > ub)[0])
        raise ValueError(f"box bounds need lb <= ub; coordinate {j} has lb={lb[j]} > ub={ub[j]}")
    if np.any(lb == np.inf) or np.any(ub == -np.inf):
        raise ValueError("box bounds need lb < +inf and ub > -inf")
    return lb, ub


class Solver:
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
        lb, ub = _check_bounds(lb, ub, model.arrays.d)
        log_size = validate.int_at_least("log_size", log_size, 1)
        trace_limit = validate.int_at_least("trace_limit", trace_limit, 16)
        n = model.arrays.n
        if config.sampling == Sampling.WEIGHTS:
            if sampling_weights is None:
                raise ValueError("sampling='weights' needs sampling_weights (shape (n,))")
            sampling_weights = np.asarray(sampling_weights, dtype=np.float64)
            if sampling_weights.shape != (n,):
                raise ValueError(f"sampling_weights must have shape ({n},), got {sampling_weights.shape}")
            if not np.all(np.isfinite(sampling_weights)) or np.any(sampling_weights < 0) or sampling_weights.sum() <= 0:
                raise ValueError("sampling_weights must be finite, >= 0 and not all 0")
        elif sampling_weights is not None:
            raise ValueError("sampling_weights is only used with sampling='weights'")
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
        c0 = _COMPILE_CLOCK.total()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            dc = _COMPILE_CLOCK.total() - c0
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

    def _record(self, kind, exact: ExactGap | None = None, test_error=math.nan, extra=None):
        c = self.S.counters
        rec = {
            "kind": kind,
            "iteration": int(c[kr.C_ITER]),
            "effective_passes": self.effective_passes,
            "oracle_calls": int(c[kr.C_ORACLE]),
            "wall_time_s": self.wall_time,
            "heuristic_gap": self.heuristic_gap,
            "exact_gap": exact.gap if exact else math.nan,
            "primal": exact.primal if exact else math.nan,
            "dual": self.dual_objective(),
            "cache_hits": int(c[kr.C_HIT]),
            "test_error": test_error,
        }
        rec.update(self.step_counts())
        if extra:
            rec.update(extra)
        self._trace.append(rec)
        self._trace_ids.append(self._n_records)
        self._n_records += 1
        if len(self._trace) > self._trace_limit:
            self._thin_trace()
        return rec

    def _thin_trace(self):
        """Drop every second record of the older half of the trace (the first record kept)."""
        old = len(self._trace) - self._trace_limit // 2
        keep = [j for j in range(len(self._trace)) if j >= old or j % 2 == 0]
        self._trace = [self._trace[j] for j in keep]
        self._trace_ids = [self._trace_ids[j] for j in keep]

    def _records_since(self, since: int) -> list:
        return self._trace[bisect.bisect_left(self._trace_ids, since):]

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

    def last_steps(self, m: int) -> list[StepRecord]:
        """The last m step records (at most the ring log's size)."""
        S = self.S
        total = int(S.counters[kr.C_LOG_POS])
        cap = S.log.shape[0]
        m = min(m, total, cap)
        out = []
        for j in range(total - m, total):
            r = S.log[j % cap]
            flags = int(r[kr.L_FLAGS])
            kind = _KIND_NAMES[int(r[kr.L_KIND])]
            is_last = j == total - 1
            i = int(r[kr.L_BLOCK])
            L = int(self._M.lab_off[i + 1] - self._M.lab_off[i])
            out.append(StepRecord(
                iteration=int(r[kr.L_ITER]), block=i, kind=kind,
                cache_hit=bool(flags & kr.FLAG_HIT), drop=bool(flags & kr.FLAG_DROP),
                oracle_called=bool(flags & kr.FLAG_ORACLE), gamma=float(r[kr.L_GAMMA]),
                gamma_max=float(r[kr.L_GAMMA_MAX]), block_gap_estimate=float(r[kr.L_GAP]),
                direction_gap=float(r[kr.L_CORNER_GAP]), improvement=float(r[kr.L_IMPROVE]),
                active_set_size=int(r[kr.L_ACTIVE]),
                fw_corner=S.last_fw[:L].copy() if is_last else None,
                away_corner=S.last_away[:L].copy() if (is_last and self.config.step != StepKind.FW) else None,
            ))
        return out

    def block_gap_now(self, i: int) -> float:
        """Exact gap of block i at the current w (a diagnostic oracle call, not counted)."""
        if not 0 <= i < self.n:
            raise IndexError(f"block {i} out of range [0, {self.n})")
        if self.python_oracle:
            S = self.S
            S.counters[kr.C_DIAG_ORACLE] += 1
            g, _, _ = kr.gap_block_given_corner(self._M, S.w, S.mu, int(i), np.empty(S.h.shape[0]),
                                               self._oracle(i, S.w), np.empty(S.ybuf.shape[0], dtype=np.int64))
            return float(g)
        return float(kr.block_gap_now(self._M, self.S, int(i)))

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
            check is then what certified it).

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
        cfg = self.config
        max_passes = cfg.max_passes if max_passes is None else validate.positive("max_passes", max_passes,
                                                                                  allow_inf=True)
        time_limit = cfg.time_limit if time_limit is None else validate.positive("time_limit", time_limit,
                                                                                  allow_inf=True)
        thr = cfg.gap_threshold if gap_threshold is None else validate.nonnegative("gap_threshold", gap_threshold,
                                                                                    allow_inf=True)
        if callback is None and should_stop is None:  # else the caller may end the run
            try:
                check_run_ends(max_passes, time_limit, thr, cfg.gap_check, cfg.stop_on_heuristic_gap)
            except ValueError as exc:
                raise ValueError(f"run(): {exc} (or pass a callback / should_stop that ends the run)") from None
        n = self.n
        start_time = self.wall_time
        budget_calls = max_passes * n
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
        self.status = status
        return self.result()

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
                if rec["kind"] == "gap_check" and thr > 0 and rec["exact_gap"] <= thr:
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

    def result(self) -> Result:
        ex = self._last_exact
        return Result(
            status=self.status,
            primal=ex.primal if ex else math.nan,
            dual=self.dual_objective(),
            exact_gap=ex.gap if ex else math.nan,
            heuristic_gap=self.heuristic_gap,
            effective_passes=self.effective_passes,
            oracle_calls=self.oracle_calls,
            cache_hits=int(self.S.counters[kr.C_HIT]),
            steps=self.iteration,
            wall_time_s=self.wall_time,
            step_counts=self.step_counts(),
            w=self.w,
            trace=[dict(r) for r in self._trace],
            compile_time_s=self.compile_time,
        )

    def trace(self, since: int = 0) -> list[dict]:
        """Trace records ``since`` onwards (copies): one per pass ("pass"), per gap check
        ("gap_check") and per batch step ("batch"), with iteration, effective_passes,
        oracle_calls, wall_time_s, heuristic_gap, exact_gap (NaN unless computed), primal
        (idem), dual, cache_hits, step counts and test_error (at gap checks when test data is
        given). Records are numbered in the order they are made and ``since`` is such a number,
        so ``trace(since=n_trace_records)`` taken earlier gives the new ones. Past ``trace_limit``
        records, older ones are thinned (see :class:`Solver`), never the newest half."""
        since = validate.int_at_least("since", since, 0)
        return [dict(r) for r in self._records_since(int(since))]

    @property
    def n_trace_records(self) -> int:
        """Records made so far (kept or thinned)."""
        return self._n_records

    @property
    def trace_records_dropped(self) -> int:
        """Records dropped by thinning (0 unless the trace outgrew ``trace_limit``)."""
        return self._n_records - len(self._trace)

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

    # ------------------------------------------------------------------ warm starts & copies
    def copy(self) -> "Solver":
        """An independent copy (state, RNG, counters and trace)."""
        other = object.__new__(Solver)
        other.__dict__.update(self.__dict__)
        other.S = copy_state(self.S)
        other._trace = [dict(r) for r in self._trace]
        other._trace_ids = list(self._trace_ids)
        other._ci, other._cf = self._ci.copy(), self._cf.copy()
        return other

    def warm_start(self, lam: float, *, keep: str = "primal") -> "Solver":
        """A new solver at regularization ``lam`` started from this solver's point.

        keep="dual": same α, w scaled by λ_old/λ (the authors' warm start on the dual).
        keep="primal": same w; α moved towards the ground truth, α(y) ← ρα(y) for y ≠ y_i with
        ρ = λ/λ_old (Paper: Proposition 1); needs λ <= λ_old and tracked atoms or FW steps.
        Counters and trace start from zero; gap estimates are kept (stale) and g^(k_0) reset.
        """
        if keep not in ("primal", "dual"):
            raise ValueError(f"keep must be 'primal' or 'dual', got {keep!r}")
        new_cfg = self.config.replace(lam=lam)
        other = self.copy()
        other.config = new_cfg
        other._ci, other._cf = config_arrays(new_cfg, bool(self._ci[kr.I_BOX]), self.track)
        S = other.S
        ratio = self.lam / new_cfg.lam
        if keep == "dual":
            S.v[:] *= ratio
            if S.w is not S.v:
                np.clip(S.v, S.lb, S.ub, out=S.w)
        else:
            rho = new_cfg.lam / self.lam
            if rho > 1:
                raise ValueError(f"keep='primal' needs lam <= {self.lam} (the current λ), got {lam}")
            _rescale_to_gt(other, rho)
        S.counters[:] = 0
        S.counters[kr.C_UNVISITED] = int(np.sum(S.gap_iter < 0))
        S.counters[kr.C_LAST_CHECK] = -1
        S.gap_iter[S.gap_iter >= 0] = 0
        S.scalars[kr.S_GLOBAL_GAP] = np.inf
        other.wall_time = 0.0
        other.compile_time = 0.0
        other.passes_since_check = 0
        other._trace = []
        other._trace_ids = []
        other._n_records = 0
        other._last_exact = None
        other._last_exact_iter = -1
        other.status = Status.RUNNING
        if new_cfg.sampling in (Sampling.GAP, Sampling.EXACT_GAP, Sampling.WEIGHTS):
            kr.tree_rebuild(S, other._cf, other.n)
        return other

    def set_vertices(self, labels) -> None:
        """Move every block to the corner α_i = e_{y~_i} of its simplex and recompute w.

        Parameters
        ----------
        labels : list of int arrays
            ``labels[i]`` is the labelling y~_i of block i (shape (T_i,) for chains, (1,) for
            multiclass), each label in range. Paper: Alg. 6 (α^∞ of the regularization path).
        """
        M = self._M
        if len(labels) != self.n:
            raise ValueError(f"labels must hold {self.n} labellings, got {len(labels)}")
        flat = []
        for i, y in enumerate(labels):
            if callable(getattr(type(self.model), "check_labelling", None)):  # the model's own labellings
                flat.append(self.model.check_labelling(i, y, f"labels[{i}]"))
                continue
            y = np.asarray(y, dtype=np.int64).ravel()
            L = int(M.lab_off[i + 1] - M.lab_off[i])
            if y.shape != (L,):
                raise ValueError(f"labels[{i}] must have shape ({L},), got {y.shape}")
            hi = int(self.model.n_labels(i))
            if y.size and (y.min() < 0 or y.max() >= hi):
                raise ValueError(f"labels[{i}] must lie in [0, {hi}), got {y.tolist()}")
            flat.append(y)
        kr.set_vertices(M, self.S, self._ci, self._cf, np.concatenate(flat))
        self._last_exact = None
        self._last_exact_iter = -1

    def recompute_primal(self) -> None:
        """Recompute w = Aα from the block statistics (removes accumulated round-off)."""
        kr.recompute_primal(self._M, self.S, self._ci, self._cf)

    def memory_bytes(self) -> int:
        return state_nbytes(self.S)


def _rescale_to_gt(solver: Solver, rho: float):
    """α(y) ← ρ α(y) for y ≠ y_i, the rest on y_i (w unchanged; Paper: Prop. 1). Grows the atom
    pools when a block has no room for its ground-truth atom, and keeps a free slot after."""
    done_upto = 0
    while True:
        # the kernel stops at the first full block, before touching it; blocks before it are done
        sub = kr.rescale_to_gt_from(solver._M, solver.S, solver._ci, rho, done_upto)
        if sub < 0:
            break
        solver.S = grow_atoms(solver._M, solver.S)
        done_upto = sub
    if solver.S.counters[kr.C_GROW]:
        solver.S = grow_atoms(solver._M, solver.S, cache_size=solver._cache_slots())
