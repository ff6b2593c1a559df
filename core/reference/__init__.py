"""A readable reference solver for the structured SVM dual: plain numpy, one short driver per
algorithm of Osokin et al., "Minding the Gaps for Block Frank-Wolfe Optimization of Structured
SVMs" (ICML 2016), to read top to bottom beside its pseudo-code. It is also the tests' oracle of
truth for the fast solver (:class:`gaplab.core.Solver`) on small problems.

- :mod:`~gaplab.core.reference.algorithms`: the drivers. ``bcfw_step`` (Alg. 1, with the gap
  estimates of Alg. 2; Alg. 9 with a box), ``bcpfw_step`` (Alg. 3), ``bcafw_step`` (Alg. 4),
  ``bcfw_cache_step`` (Alg. 5), ``combined_step`` (gaplab's own step kind, not one of Alg. 1-5:
  the step of largest dual improvement among FW, away and pairwise, a choice App. G mentions
  trying in one sentence), ``batch_fw_step`` (Alg. 8);
  ``block_step`` picks one by step kind and ``solve`` is the outer loop (uniform or gap
  sampling, Alg. 1-2; the "update global gap" pass, Alg. 2 lines 14-21).
- :mod:`~gaplab.core.reference.steps`: the step functions they are built from (corners, gaps,
  line search, step candidates, updates, the exact gap pass, sampling) and the state.
- :mod:`~gaplab.core.reference.citations`: the table of the algorithm lines gaplab cites, with
  what each line says (the reference solver, the compiled kernels and the app cite from it).

Every name is importable from ``gaplab.core.reference``. The drivers take an optional
``oracle`` (a :class:`MaxOracle`, default the plain max oracle) that finds the FW, cache and
away corners.

Typical use::

    from gaplab.core import ChainModel, load_ocr
    from gaplab.core import reference as ref
    train, _ = load_ocr("small")
    state = ref.init_state(ChainModel(train.subset(range(20))), lam=0.01, atoms=True)
    for i in [0, 5, 3]:
        info = ref.bcpfw_step(state, i)
    print(ref.exact_gap(state).gap)
"""
from . import algorithms, citations, steps
from .algorithms import *  # noqa: F401,F403
from .steps import *  # noqa: F401,F403

__all__ = steps.__all__ + algorithms.__all__
