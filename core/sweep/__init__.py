"""Experiment sweeps: a declarative spec, its expansion into independent runs, execution on Dask
distributed, and a resumable Parquet results store (Paper: Sec. 5, App. J/K — 8 methods × seeds ×
λ × datasets, gap against effective passes and time).

What lives where:

- :mod:`~gaplab.core.sweep.spec` — the spec format (TOML or dict) and its validation
  (:class:`SweepSpec`, :func:`load_spec`), datasets of the problem registry (:class:`DatasetRef`,
  :func:`parse_dataset`, :func:`load_dataset`), the runs of a spec (:func:`expand_runs`) and
  their keys (:func:`run_id`);
- :mod:`~gaplab.core.sweep.runs` — one run in a worker process (:func:`execute_run`) and the
  trace columns it returns (:data:`TRACE_COLUMNS`);
- :mod:`~gaplab.core.sweep.store` — the results store directory (:class:`Store`: manifest.json
  and one Parquet file per finished run, written atomically);
- :mod:`~gaplab.core.sweep.dask_runner` — :func:`run_sweep`: the unfinished runs of a spec,
  serially or on Dask (LocalCluster, a scheduler's address or a client), with retries, and
  :class:`SweepReport`.

Everything is importable from ``gaplab.core.sweep``.
"""
from .dask_runner import DASHBOARD_ADDRESS, SweepReport, run_sweep
from .runs import TRACE_COLUMNS, WALL_CLOCK_COLUMNS, execute_run
from .spec import METRICS, RUN_KINDS, TEST_KINDS, DatasetRef, SweepSpec, expand_runs, load_dataset, load_spec, \
    parse_dataset, run_id
from .store import STORE_FORMAT, Store

__all__ = ["SweepSpec", "load_spec", "expand_runs", "run_id", "execute_run", "Store", "run_sweep",
           "SweepReport", "load_dataset", "parse_dataset", "DatasetRef", "STORE_FORMAT", "TRACE_COLUMNS"]
