"""gaplab: an interactive lab for block-coordinate Frank-Wolfe solvers of structured SVMs.

Paper: Osokin, Alayrac, Lukasewitz, Dokania, Lacoste-Julien, "Minding the Gaps for
Block Frank-Wolfe Optimization of Structured SVMs", ICML 2016.

Sub-packages and modules
------------------------
gaplab.core          numba solver core: models, samplers, block steps, solver, objectives
gaplab.app           the Panel app
gaplab.toy_examples  the teaching examples (App. C hard/easy problem, staleness study, ...)
gaplab.assets        data files shipped with the package (the OCR letters, checksums)
gaplab.cli           the command line (``gaplab train | path | grid | sweep | figure | app | warmup``)
gaplab.console       the ``gaplab`` console script and ``python -m gaplab`` (Ctrl-C held from its first statement)
gaplab.plots         the paper's comparison figures (HoloViews) built from a sweep store
"""
__version__ = "0.1.0"
