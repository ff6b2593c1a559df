"""The regularization path: the ε-approximate path (Paper: Sec. 4, App. D, Alg. 7) and the
heuristic path (App. K), as a generator of breakpoints (:func:`iter_path`) or a whole
:class:`~gaplab.core.regpath.container.RegPath` (:func:`regularization_path`).

ε-approximate path
    Breakpoints λ_0 = λ_∞ > λ_1 > ... with weights w_j such that, for every λ >= λ_end,
    ``RegPath.w_at`` returns an ε-approximate primal point: (λ_0/λ)·w_0 for λ >= λ_0, and
    w_j for λ in [λ_{j+1}, λ_j] (piecewise constant). Each w_j comes with the dual point α_j it
    was computed from; the certificate for λ in [λ_{j+1}, λ_j] is α_j rescaled by Proposition 1
    (ρ = λ/λ_j), whose duality gap at λ is g_j + (1 − ρ)·Δ_j <= ε exactly.

    * Initialization (Alg. 6): :func:`~gaplab.core.regpath.init.init_reg_path`.
    * Induction (Alg. 7): Δ = (1/n) Σ_i Σ_y α_i(y) H_i(y; w) = ℓ − λ‖w‖² (Σ_i δ_i, δ_i per block),
      τ = ε − g, ρ = 1 − τ/Δ. ρ <= 0 (Δ <= τ) ends the path: w_j is ε-approximate for every
      λ < λ_j (Alg. 7 as printed has the test inverted, "if Δ <= τ then ρ := 1 − τ/Δ"; Sec. 4's
      text is the reference). Otherwise λ_{j+1} = ρλ_j, the dual variables (and active sets)
      are rescaled towards the ground truth (:meth:`~gaplab.core.solver.Solver.warm_start`,
      ``keep="primal"``; ℓ_i ← ρℓ_i), the block gap estimates move by (1 − ρ)δ_i (Proposition 1, block by block) and the SSVM
      solver runs to κε. If λ_{j+1} < λ_min the path stops *before* solving there: w_j already
      covers [λ_{j+1}, λ_j] ∋ λ_min (Alg. 7 as printed solves one more, useless, breakpoint).

    Since τ <= ε, ρ >= 1 − ε/Δ: where Δ ≈ the average loss (large λ) the path needs about Δ/ε
    breakpoints per factor e of λ.

heuristic path (App. K)
    The same recursion, but the solver stops when the *stale* gap sum is <= κε (no exact pass)
    and τ uses that stale sum. Cheaper, no guarantee (the paper uses κ = 0.7).
"""
from __future__ import annotations

import math
import time
from typing import Callable, Iterator

from .. import validate
from ..config import SolverConfig
from ..solver import Solver
from . import run
from .certificate import _check_model, _ell_delta, prop1_warm_start
from .collect import _collect
from .config import PathConfig, _as_solver_config, _path_config, _solver_config_dict
from .container import RegPath
from .init import init_reg_path
from .points import PathMetric, PathPoint, _as_tests, _metric_meta, _Tests
from .run import _Clock, _new_solver, _solve

__all__ = ["iter_path", "regularization_path", "induction_step"]

_TAU_SAFETY = 1e-9  # τ = ε(1 − 1e-9) − g: the new breakpoint's gap stays <= ε despite round-off


def _next_step(point: PathPoint, eps: float, lam_min: float) -> None:
    """Fill next_lam / end of a solved point (Paper: Alg. 7 lines 4-12)."""
    g, D = point.gap, point.delta
    point.certified = bool(g <= eps) and point.status != "oracle_not_exact"  # a negative gap certifies nothing
    if not point.certified:
        point.next_lam = math.nan
        point.end = "oracle_not_exact" if point.status == "oracle_not_exact" else "not_converged"
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


def _budget_end(point, cfg, used_s, should_stop):
    """End the path at ``point`` when its time budget is used up or ``should_stop`` fires."""
    if point.end:
        return
    if used_s >= cfg.time_limit:
        point.end = "time_limit"
    elif should_stop is not None and should_stop():
        point.end = "stopped"


def iter_path(model, config: PathConfig | None = None, solver_config: SolverConfig | None = None, *,
              test_data=None, should_stop: Callable[[], bool] | None = None, keep_solver: bool = False,
              test_metric: PathMetric | None = None, **overrides) -> Iterator[PathPoint]:
    """Compute the regularization path, yielding each breakpoint as soon as it is computed
    (Paper: Alg. 6-7; heuristic path: App. K).

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

    Raises
    ------
    TypeError, ValueError
        For a model that is not a gaplab model, a box that breaks Proposition 1, or bad settings.
    """
    _check_model(model)
    cfg = _path_config(config, overrides)
    scfg = _as_solver_config(solver_config)
    return _path_points(model, cfg, scfg, _as_tests(test_data, test_metric), should_stop, keep_solver)


def _path_points(model, cfg: PathConfig, scfg: SolverConfig, tests: _Tests, should_stop, keep_solver):
    """λ_∞ (Paper: Alg. 6, solved by a solver set on α_∞), then the induction (Alg. 7)."""
    eps, kappa = cfg.eps, cfg.kappa
    target = kappa * eps
    clock = _Clock()  # diagnostics (test error, true gaps) are not part of the path's cost
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
    clock.excluded += run._diagnostics(point, solver, model, tests, cfg.true_gaps)
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
        clock.excluded += run._diagnostics(point, solver, model, tests, cfg.true_gaps and not exact)
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


def _path_meta(model, cfg: PathConfig, scfg: SolverConfig, meta) -> dict:
    """The path's metadata: n, d, the path and solver settings, then the caller's ``meta``."""
    out = {"n": int(model.arrays.n), "d": int(model.arrays.d), "path_config": cfg.to_dict(),
           "solver_config": _solver_config_dict(scfg)}
    out.update(meta or {})
    return out


def _check_checkpoint(every, file) -> int:
    every = validate.int_at_least("checkpoint_every", every, 0)
    if every and file is None:
        raise ValueError("checkpoint_every needs a checkpoint_file")
    return int(every)


def regularization_path(model, config: PathConfig | None = None, solver_config: SolverConfig | None = None, *,
                        test_data=None, should_stop=None, callback: Callable[[PathPoint], object] | None = None,
                        meta: dict | None = None, checkpoint_every: int = 0, checkpoint_file=None,
                        store=None, overwrite: bool = False, store_compress: bool = False,
                        test_metric: PathMetric | None = None, **overrides) -> RegPath:
    """The whole path (ε-approximate, or heuristic with ``heuristic=True``) as a
    :class:`~gaplab.core.regpath.container.RegPath` (Paper: Alg. 6-7, App. K). ``callback(point)`` is
    called on every breakpoint (CLI table, progress bar); returning True stops the path. See
    :func:`iter_path` for the parameters.

    ``checkpoint_every`` N > 0 with ``checkpoint_file``: every N breakpoints the path so far is
    saved there (atomically) with the solver state of its last breakpoint, so that
    :func:`~gaplab.core.regpath.resume.resume_path` can continue it. On Ctrl-C,
    :class:`~gaplab.core.interrupt.Interrupted` is raised with the finished breakpoints as
    ``exc.partial`` (end reason "interrupted"; ``partial.save(file)`` keeps the solver state for
    ``resume_path``).

    ``store`` (a directory): stream the breakpoints to an on-disk path store
    (:mod:`gaplab.core.regpath.store`), each written atomically as soon as it is certified; the
    returned path keeps only its rows in memory and reads w_j from the store on demand
    (``RegPath.open`` reads it back later). Checkpoints (``checkpoint_every``) and Ctrl-C
    then write the solver state into the store; ``resume_path(store, model)`` continues it.
    ``overwrite``: replace a path already in ``store``; ``store_compress``: deflate the weights'
    values too (a smaller store, more write time)."""
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
