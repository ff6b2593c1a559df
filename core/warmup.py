"""Compile every numba kernel once on a tiny problem (the kernels are cached on disk with
``cache=True``, so later starts load machine code instead of compiling).

Set ``NUMBA_CACHE_DIR`` to redirect the cache, ``NUMBA_DISABLE_JIT=1`` to disable compiling.
"""
from __future__ import annotations

import time

import numpy as np

__all__ = ["warmup"]


def warmup(progress=None) -> float:
    """Compile (or load from the cache) the solver kernels for every model and step kind.

    Parameters
    ----------
    progress : callable(fraction: float, message: str), optional
        Called as the warm-up advances (the app shows it).

    Returns
    -------
    float
        Seconds spent.
    """
    from .datasets.base import SequenceData
    from .models import ChainModel, MulticlassModel, max_oracle
    from .solver import Solver

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = [rng.random((3, 4)), rng.random((2, 4))]
    Y = [np.array([0, 1, 1]), np.array([1, 0])]
    chain = ChainModel(SequenceData.from_dense(X, Y, ["a", "b"], name="warmup"))
    mc = MulticlassModel([np.eye(3), np.eye(3)], [np.array([0.0, 1, 1]), np.array([0.0, 1, 1])], [0, 0])
    jobs = [(m, step, cache) for m in (chain, mc) for step in ("fw", "pairwise", "away", "combined")
            for cache in (False, True)]
    for j, (m, step, cache) in enumerate(jobs):
        if progress is not None:
            progress(j / len(jobs), f"compiling {m.kind} / {step}{' + cache' if cache else ''}")
        s = Solver(m, lam=0.1, step=step, sampling="gap", cache={"enabled": cache}, gap_check=1,
                   batch_step=cache, max_passes=3)
        s.run()
        s.block_gap_now(0)
        s.exact_gap(count=False)
        max_oracle(m, 0, s.w)
        m.predict(s.w)
    box = Solver(chain, lam=0.1, lb=np.zeros(chain.d), max_passes=2)
    box.run()
    if progress is not None:
        progress(0.95, "compiling the regularization path")
    from .regpath import regularization_path
    for m in (chain, mc):  # Alg. 6-7 kernels
        for step in ("fw", "pairwise"):
            regularization_path(m, solver_config={"sampling": "gap", "step": step}, eps=0.3, lam_min=1e-2,
                                max_breakpoints=3)
    if progress is not None:
        progress(1.0, "ready")
    return time.perf_counter() - t0
