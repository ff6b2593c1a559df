"""gaplab: an interactive lab for block-coordinate Frank-Wolfe solvers of structured SVMs.

Paper: Osokin, Alayrac, Lukasewitz, Dokania, Lacoste-Julien, "Minding the Gaps for
Block Frank-Wolfe Optimization of Structured SVMs", ICML 2016.

Sub-packages
------------
gaplab.core          numba solver core: models, samplers, block steps, solver, objectives
gaplab.app           the Panel app
gaplab.toy_examples  the teaching examples (App. C hard/easy problem, staleness study, ...)
"""
__version__ = "0.1.0"
