"""The command line: ``gaplab train | path | grid | sweep | figure | warmup | app | lesson``.

The CLI presents what the core returns (progress bars, summary tables, JSON); the core prints
nothing. What lives where:

- :mod:`~gaplab.cli.entry` — :func:`main` (run by the ``gaplab`` console script and ``python -m
  gaplab`` through :mod:`gaplab.console`, which holds Ctrl-C from its first statement: errors
  and Ctrl-C as one line and a non-zero exit), :func:`build_parser`,
  ``gaplab warmup`` and ``gaplab app``;
- :mod:`~gaplab.cli.train` — ``gaplab train`` and the options it shares with path and grid;
- :mod:`~gaplab.cli.path` — ``gaplab path`` and ``gaplab grid`` (regularization path, grid
  search);
- :mod:`~gaplab.cli.sweep` — ``gaplab sweep`` and ``gaplab figure`` (experiment sweeps and
  their figures, :mod:`gaplab.plots`);
- :mod:`~gaplab.cli.lesson` — ``gaplab lesson export`` (a lesson as one self-contained HTML
  page, :mod:`gaplab.app.textbook`);
- :mod:`~gaplab.cli.options` — options generated from the settings schema and the problem
  registry, shared by every command.
"""
from .entry import build_parser, main
from .train import add_solver_arguments, solver_config_from_args

__all__ = ["main", "build_parser", "add_solver_arguments", "solver_config_from_args"]
