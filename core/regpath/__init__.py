"""Regularization path of the structured SVM (Paper: Sec. 4, Proposition 1; App. D, Alg. 6-7;
App. K) and grid search over λ with or without warm starts.

Every public name is importable from here (``from gaplab.core.regpath import RegPath, ...``).
Where each part lives:

- ``config``: :class:`~gaplab.core.regpath.config.PathConfig` and its defaults, the default grid.
- ``init``: the initialization λ_∞, ψ̃, θ_i, α_∞ (Alg. 6).
- ``certificate``: Proposition 1 (δ_i, Δ, the warm start, boxes with zero bounds).
- ``run``: one solve at a breakpoint or grid point and its stopping rule.
- ``epspath``: the ε-approximate path (Alg. 7) and the heuristic path (App. K).
- ``grid``: the grid search (App. K).
- ``points``, ``container``: a point and the :class:`~gaplab.core.regpath.container.RegPath`
  that holds them (``w_at``, ``gap_at``, columns).
- ``persist``, ``store``: the single-file ``.npz`` and the on-disk path store (one npz per
  breakpoint and a JSON manifest).
- ``collect``, ``solverstate``, ``resume``: checkpoints, Ctrl-C and resuming a path exactly.

For the app: :func:`~gaplab.core.regpath.epspath.iter_path` /
:func:`~gaplab.core.regpath.grid.iter_grid` are generators yielding one
:class:`~gaplab.core.regpath.points.PathPoint` as soon as it is computed;
:class:`~gaplab.core.regpath.container.RegPath` collects them (``append``), answers
``w_at(lam)``, and saves/loads itself with ``np.savez`` (no pickle). With ``store=DIR``
(:func:`~gaplab.core.regpath.epspath.regularization_path`,
:func:`~gaplab.core.regpath.grid.grid_search`) every point is streamed to an on-disk path store
as soon as it is computed and only the rows stay in memory;
:meth:`~gaplab.core.regpath.container.RegPath.open` reads a store lazily (``w_at`` reads one
breakpoint file) or a single-file npz.
"""
from __future__ import annotations

from .certificate import block_deltas, check_path_box, prop1_warm_start
from .config import HEURISTIC_KAPPA, PathConfig, default_grid, path_defaults
from .container import RegPath
from .epspath import induction_step, iter_path, regularization_path
from .grid import grid_search, iter_grid
from .init import PathInit, init_reg_path
from .persist import PathFileError
from .points import PathMetric, PathPoint
from .resume import resume_path
from .store import PathStoreError

__all__ = [
    "PathConfig", "HEURISTIC_KAPPA", "path_defaults", "PathInit", "PathPoint", "RegPath",
    "init_reg_path", "block_deltas", "prop1_warm_start", "induction_step",
    "iter_path", "regularization_path", "iter_grid", "grid_search", "default_grid",
    "resume_path", "PathFileError", "PathStoreError", "PathMetric",
]
