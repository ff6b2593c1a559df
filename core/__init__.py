"""gaplab.core: the numba solver core (models, samplers, block steps, solver, objectives).

What lives where:

- ``solver``: :class:`Solver` (block steps, exact gap checks, warm starts, runs);
  ``solver_state``: its state handling (copies, warm starts, memory); ``solver_records``: its
  trace records and results; ``compile_clock``: numba's compile-time clock; ``certify``: when
  an exact gap certifies nothing (a negative gap: the max oracle is not exact);
  ``config``: :class:`SolverConfig` and its parts; ``state``: the solver state arrays;
  ``estimator``: the scikit-learn estimator :class:`~gaplab.core.estimator.SSVM` (the chain, or any model).
- ``kernels``: the numba kernels (model-kind registry, atoms, samplers, step phases, gap passes).
- ``reference``: the readable plain-numpy reference solver, one driver per algorithm.
- ``models``: the SSVM models (chain, multiclass, segmentation, pose, plain-Python) and the
  model contract; ``datasets``: data containers and loaders; ``problems``: the registry of
  named problems (data set + model) used by the CLI and the app; ``builtin_problems``: the
  problems gaplab ships (registered when ``problems`` is imported).
- ``regpath``: the regularization path (Paper: Alg. 6, Alg. 7, Prop. 1) and the grid search;
  the package also holds the on-disk stores of paths and grids.
- ``sweep``: sweeps of solver settings over problems, seeds and λ (spec, runs, store, Dask).
- ``warmup``: compiling the kernels ahead of use.
- ``validate``: checks of numeric arguments; ``jsonsafe``: JSON with non-finite numbers;
  ``atomic``: atomic file writes; ``interrupt``: holding Ctrl-C during writes; ``storelock``: one
  writer per store (an OS file lock); ``rng``: the solver's own
  seeded random number generator (xoshiro256**) kept in the state arrays.

Typical use::

    from gaplab.core import ChainModel, Solver, load_ocr
    train, test = load_ocr("small")
    solver = Solver(ChainModel(train), lam=0.01, sampling="gap", gap_threshold=1e-3)
    result = solver.run()
"""
from .config import CacheConfig, Sampling, SolverConfig, Status, StepKind
from .datasets import SequenceData, load_ocr
from .models import ChainModel, MulticlassModel, label_score, max_oracle
from .solver import ExactGap, Result, Solver, StepRecord

__all__ = [
    "CacheConfig", "Sampling", "SolverConfig", "Status", "StepKind",
    "SequenceData", "load_ocr", "ChainModel", "MulticlassModel", "max_oracle", "label_score",
    "Solver", "Result", "StepRecord", "ExactGap",
]
