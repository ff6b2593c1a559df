"""Compile every numba kernel once on tiny problems (the kernels are cached on disk with
``cache=True``, so later starts load machine code instead of compiling).

The models to compile come from the problem registry (:func:`gaplab.core.problems.warmup_plan`):
one tiny instance per distinct model class among the registered problems.

Set ``NUMBA_CACHE_DIR`` to redirect the cache, ``NUMBA_DISABLE_JIT=1`` to disable compiling.
"""
from __future__ import annotations

import time

import numpy as np

from .config import STEP_CHOICES as STEP_KINDS  # every step kind, named once in config

__all__ = ["warmup", "STEP_KINDS"]


def warmup(progress=None, names=None) -> float:
    """Compile (or load from the cache) the solver kernels of every registered problem's model
    class, for every step kind with and without the cache, box constraints and the
    regularization path (Alg. 6-7).

    Parameters
    ----------
    progress : callable(fraction: float, message: str), optional
        Called as the warm-up advances (the app shows it).
    names : sequence of str, optional
        Only the model classes of these registered problems (default: all).

    Returns
    -------
    float
        Seconds spent.
    """
    from .models import max_oracle
    from .problems import model_box, warmup_plan
    from .regpath import regularization_path
    from .solver import Solver

    t0 = time.perf_counter()
    plan = warmup_plan(names)
    jobs = [(job, step, cache) for job in plan for step in STEP_KINDS for cache in (False, True)]
    for j, (job, step, cache) in enumerate(jobs):
        if progress is not None:
            progress(0.9 * j / max(len(jobs), 1),
                     f"compiling {job.model_class} ({', '.join(job.problems)}) / {step}{' + cache' if cache else ''}")
        m = job.model
        s = Solver(m, lam=0.1, step=step, sampling="gap", cache={"enabled": cache}, gap_check=1,
                   batch_step=cache, max_passes=3, **model_box(m))
        s.run()
        s.block_gap_now(0)
        s.exact_gap(count=False)
        max_oracle(m, 0, s.w)
        m.predict(s.w)
    for job in plan:  # box constraints (Paper: App. H)
        if not model_box(job.model):  # (models with a box of their own compiled it above)
            Solver(job.model, lam=0.1, lb=np.zeros(job.model.d), max_passes=2).run()
    if progress is not None:
        progress(0.95, "compiling the regularization path")
    for job in plan:  # Alg. 6-7 kernels (the path does not support a model's box constraints)
        if model_box(job.model):
            continue
        for step in ("fw", "pairwise"):
            regularization_path(job.model, solver_config={"sampling": "gap", "step": step}, eps=0.3,
                                lam_min=1e-2, max_breakpoints=3)
    if progress is not None:
        progress(1.0, "ready")
    return time.perf_counter() - t0
