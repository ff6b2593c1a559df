"""gaplab.core: the numba solver core (models, samplers, block steps, solver, objectives).

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
