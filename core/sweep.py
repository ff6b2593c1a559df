"""Experiment sweeps: a declarative spec, its expansion into independent runs, execution on Dask
distributed, and a resumable Parquet results store (Paper: Sec. 5, App. J/K — 8 methods × seeds ×
λ × datasets, gap against effective passes and time).

A **spec** (TOML file or the same structure as a Python dict)::

    name = "ocr-small"            # identifies the sweep; a store belongs to one (name, version)
    version = 1                   # bump when the meaning of the spec changes
    datasets = ["ocr-small"]      # registered problems (gaplab.core.problems): ocr-small, ocr-large,
                                  # conll2000, toy, seg-tiny, horse-small, lsp-pose, lsp-tiny, ...;
                                  # "ocr-small[:20]" = its first 20 training examples; or a table
                                  # {problem = "lsp-pose", options = {G = 16, n_train = 100},
                                  #  first = 50, label = "pose-G16"} for loader options
    lams = [0.1, 0.01, 0.001]     # λ > 0, "1/n" or "default" (the problem's own λ); or a table
                                  # {dataset = [λ, ...]}; omitted: each problem's own λ
    seeds = 5                     # 5 -> 0..4, or an explicit list
    metrics = ["exact_gap", "heuristic_gap", "primal", "dual"]   # optional (default: all)

    [budgets.laptop]              # or one [budget] table
    max_passes = 100              # or a table {dataset = passes}
    gap_check = 10                # passes between exact gap passes (inf: never)
    time_limit = inf
    [budgets.paper]
    max_passes = 1000
    time_limit = 86400

    [methods.bcfw_uniform]        # run kind "solve" (default): Solver(...).run()
    sampling = "uniform"
    step = "fw"
    [methods.bcpfw_gap_cache]
    sampling = "gap"
    step = "pairwise"
    cache = true                  # or {enabled = true, factor = 0.25, nu = 0.01, size = 100}
    [methods.eps_path]            # kind "path": regularization path (Alg. 6-7); "grid": grid search
    kind = "path"
    kappa = 0.9

Datasets come from the problem registry (:mod:`gaplab.core.problems`, as for ``gaplab
train/path/grid``, the app and ``gaplab warmup``): the run loads the problem with its options,
builds its model and passes the model's box (:func:`~gaplab.core.problems.model_box`, e.g.
w_P >= 0 of the segmentation model) to every Solver. A problem registered by your own code
must be registered in the worker processes too (import the module that registers it there).

The **runs** are datasets × λ × methods × seeds (path and grid runs: datasets × methods × seeds,
λ is theirs to choose). Each run is keyed by a hash of its config (:func:`run_id`), so re-running
a spec skips what is done.

The **store** is a directory::

    STORE/manifest.json          store format, spec name/version, the spec, one entry per run
                                 (config, status "done"/"failed", attempts, errors, file)
    STORE/runs/<run_id>.parquet  one file per finished run: its trace rows and config columns

Every file is written to a temporary file and moved in place with ``os.replace``, so an
interrupted sweep leaves a consistent store; re-running the spec skips the runs whose status is
"done" and re-runs failed and missing ones. Read it with :class:`Store` or directly with
pandas/pyarrow (``pd.read_parquet(STORE / "runs" / f)``).

Dask ships the run configs (plain dicts) and the trace rows between processes with its own
serialization; nothing pickled is ever written to disk.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import jsonsafe, validate
from .atomic import atomic_path

__all__ = ["SweepSpec", "load_spec", "expand_runs", "run_id", "execute_run", "Store", "run_sweep",
           "SweepReport", "load_dataset", "parse_dataset", "DatasetRef", "STORE_FORMAT", "TRACE_COLUMNS"]

STORE_FORMAT = 1
RUN_KINDS = ("solve", "path", "grid")
TEST_KINDS = ("_test_raise", "_test_kill_once")   # for the test suite: a run that raises / kills its worker
TRACE_COLUMNS = ("kind", "iteration", "effective_passes", "oracle_calls", "wall_time_s", "heuristic_gap",
                 "exact_gap", "primal", "dual", "cache_hits", "test_error")
METRICS = ("exact_gap", "heuristic_gap", "primal", "dual", "test_error", "cache_hits")
WALL_CLOCK_COLUMNS = ("wall_time_s", "time_s", "solver_time_s", "cum_time_s")

_SOLVE_KEYS = {"kind", "sampling", "step", "cache", "gap_power", "batch_step", "label"}
_PATH_KEYS = {"kind", "sampling", "step", "cache", "gap_power", "eps", "kappa", "lam_min", "heuristic",
              "max_passes_per_breakpoint", "true_gaps", "check_factor", "label"}
_GRID_KEYS = {"kind", "sampling", "step", "cache", "gap_power", "eps", "warm_start", "grid_hi", "grid_lo",
              "max_passes_per_point", "check_factor", "label"}
_TEST_KEYS = _SOLVE_KEYS | {"marker", "message"}
_BUDGET_KEYS = {"max_passes", "time_limit", "gap_check", "gap_threshold", "test_error"}
_TOP_KEYS = {"name", "version", "description", "datasets", "lams", "seeds", "metrics", "budget", "budgets",
             "default_budget", "methods", "data_home", "verify"}
_DATASET_RE = re.compile(r"^(?P<base>[a-z0-9_-]+)(\[:(?P<first>\d+)\])?$")


def _err(field_name: str, msg: str) -> ValueError:
    return ValueError(f"spec field {field_name!r}: {msg}")


# ============================================================================ datasets (the problem registry)
@dataclass(frozen=True)
class DatasetRef:
    """A dataset of a spec: a registered problem (:mod:`gaplab.core.problems`) with its loader
    options and an optional cut to the first ``first`` training examples.

    Attributes
    ----------
    key : str
        How the spec, the store and the figures name it (``"ocr-small[:20]"``, a table's
        ``label``, or ``"lsp-pose(G=16,n_train=100)"``).
    problem : str
        The registered problem name.
    options : dict
        Every loader option of the problem with its value (defaults filled in; {} for problems
        without options).
    first : int or None
        Keep the first ``first`` training examples (None: all).
    """

    key: str
    problem: str
    options: dict
    first: int | None = None

    def config(self) -> dict:
        """The run-config fields of this dataset."""
        return {"dataset": self.key, "problem": self.problem, "options": dict(self.options), "first": self.first}


def _registered_names() -> str:
    from .problems import problem_names
    return ", ".join(problem_names())


def _problem_spec(name, field_name):
    from .problems import get_problem
    try:
        return get_problem(name)
    except ValueError:
        raise _err(field_name, f"unknown dataset {name!r}; registered problems: {_registered_names()} "
                               f"(optionally with [:N] for the first N training examples)") from None


def _check_first(field_name, first, pspec):
    if first is None:
        return None
    if isinstance(first, bool) or not isinstance(first, int) or first < 1:
        raise _err(field_name, f"the first N training examples needs an integer N >= 1, got {first!r}")
    if pspec.model_factory is None:
        raise _err(field_name, f"problem {pspec.name!r} builds its model directly (no training set to cut); "
                               "use its options instead of [:N]")
    return first


def parse_dataset(entry: Any, field_name: str = "datasets") -> DatasetRef:
    """A dataset entry of a spec as a :class:`DatasetRef`.

    ``"ocr-small"``, ``"ocr-small[:20]"`` (the first 20 training words), or a table
    ``{problem = "lsp-pose", options = {G = 16, n_train = 100}, first = 50, label = "pose16"}``
    (every key but ``problem`` optional; the label defaults to ``"lsp-pose(G=16,n_train=100)"``
    from the options that differ from the problem's defaults). Names are the registered
    problems (:func:`gaplab.core.problems.problem_names`); ValueError names the field.
    """
    if isinstance(entry, str):
        m = _DATASET_RE.match(entry.strip())
        if m is None:
            raise _err(field_name, f"unknown dataset {entry!r}; registered problems: {_registered_names()} "
                                   f"(optionally with [:N] for the first N training examples)")
        pspec = _problem_spec(m["base"], field_name)
        first = _check_first(field_name, int(m["first"]) if m["first"] else None, pspec)
        return DatasetRef(entry.strip(), pspec.name, pspec.parse_options({}), first)
    if not isinstance(entry, dict):
        raise _err(field_name, f"a dataset is a registered problem's name or a table {{problem, options, first, "
                               f"label}}, got {entry!r}")
    unknown = set(entry) - {"problem", "options", "first", "label"}
    if unknown:
        raise _err(field_name, f"unknown key(s) {sorted(unknown)}; expected some of first, label, options, problem")
    name = entry.get("problem")
    if not isinstance(name, str):
        raise _err(f"{field_name}.problem", f"expected a registered problem's name ({_registered_names()}), "
                                            f"got {name!r}")
    pspec = _problem_spec(name.strip(), f"{field_name}.problem")
    opts_raw = entry.get("options", {})
    if not isinstance(opts_raw, dict):
        raise _err(f"{field_name}.options", f"expected a table of loader options, got {opts_raw!r}")
    for k in opts_raw:  # name the option that is wrong
        try:
            pspec.parse_options({k: opts_raw[k]})
        except ValueError as exc:
            raise _err(f"{field_name}.options" + (f".{k}" if k in pspec.options else ""), str(exc)) from None
    options = pspec.parse_options(opts_raw)
    first = _check_first(f"{field_name}.first", entry.get("first"), pspec)
    label = entry.get("label")
    if label is None:
        defaults = pspec.parse_options({})
        changed = [f"{k}={v}" for k, v in options.items() if v != defaults[k]]
        label = pspec.name + (f"({','.join(changed)})" if changed else "") + (f"[:{first}]" if first else "")
    elif not isinstance(label, str) or not label.strip():
        raise _err(f"{field_name}.label", f"expected a non-empty string, got {label!r}")
    return DatasetRef(label.strip(), pspec.name, options, first)


def load_dataset(ref, data_home=None, verify=True):
    """The :class:`~gaplab.core.problems.Problem` of a spec's dataset (a :class:`DatasetRef`,
    a dataset entry or a run config), loaded through the problem registry: its model (cut to
    the first N training examples if asked), test set, default λ and options.

    ``verify=False`` skips the checksum check of the data files (the spec's ``verify = false``).

    Raises FileNotFoundError (with the loader's instructions) when the data is not installed.
    """
    from .problems import Problem, get_problem
    if isinstance(ref, dict) and "problem" in ref and "dataset" in ref:
        ref = DatasetRef(ref["dataset"], ref["problem"], dict(ref.get("options") or {}), ref.get("first"))
    elif not isinstance(ref, DatasetRef):
        ref = parse_dataset(ref)
    pspec = get_problem(ref.problem)
    problem = pspec.load(data_home=data_home, verify=verify, **ref.options)
    if ref.first is not None:
        train = problem.train if problem.train is not None else getattr(problem.model, "data", None)
        if train is None or not hasattr(train, "subset"):
            raise ValueError(f"dataset {ref.key!r}: problem {ref.problem!r} has no training set to cut to "
                             f"the first {ref.first} examples")
        sub = train.subset(np.arange(min(ref.first, problem.n)))
        model = pspec.model_factory(sub)
        problem = Problem(problem.name, model, problem.test, problem.default_lam, problem.info, pspec,
                          problem.options)
    return problem


# ============================================================================ the spec
def _num(field_name, v, *, positive=True, allow_inf=False, integer=False, allow_zero=False, below_one=False):
    try:
        return validate.number(field_name, v, lo=0.0 if positive else None, lo_open=not allow_zero,
                               hi=1.0 if below_one else None, hi_open=True, allow_inf=allow_inf, integer=integer)
    except ValueError as exc:
        raise _err(field_name, str(exc)) from None


def _per_dataset(field_name, value, datasets, check):
    """A value for every dataset, or a table {dataset: value}."""
    if isinstance(value, dict):
        unknown = set(value) - set(datasets)
        if unknown:
            raise _err(field_name, f"keys {sorted(unknown)} are not datasets of this spec ({', '.join(datasets)})")
        missing = [d for d in datasets if d not in value]
        if missing:
            raise _err(field_name, f"no value for dataset(s) {', '.join(missing)}")
        return {d: check(f"{field_name}.{d}", value[d]) for d in datasets}
    return {d: check(field_name, value) for d in datasets}


def _check_lams(field_name, v):
    if not isinstance(v, (list, tuple)) or not v:
        raise _err(field_name, f"expected a non-empty list of λ values, got {v!r}")
    out = []
    for j, lam in enumerate(v):
        if lam in ("1/n", "default"):
            out.append(lam)
            continue
        if isinstance(lam, str):
            raise _err(f"{field_name}[{j}]", f"λ must be a number > 0, '1/n' or 'default' (the problem's own λ), "
                                             f"got {lam!r}")
        out.append(_num(f"{field_name}[{j}]", lam))
    return out


def _check_cache(field_name, v):
    from .config import CacheConfig
    if isinstance(v, bool):
        v = {"enabled": v}
    if not isinstance(v, dict):
        raise _err(field_name, f"expected true/false or a table {{enabled, factor, nu, size}}, got {v!r}")
    unknown = set(v) - {"enabled", "factor", "nu", "size"}
    if unknown:
        raise _err(field_name, f"unknown key(s) {sorted(unknown)}; expected enabled, factor, nu, size")
    try:
        c = CacheConfig(**v)
    except (TypeError, ValueError) as exc:
        raise _err(field_name, str(exc)) from None
    return {"enabled": c.enabled, "factor": c.factor, "nu": c.nu, "size": c.size}


def _check_method(name, m):
    from .config import Sampling, StepKind
    f = f"methods.{name}"
    if not isinstance(m, dict):
        raise _err(f, f"expected a table of settings, got {m!r}")
    kind = m.get("kind", "solve")
    if kind not in RUN_KINDS + TEST_KINDS:
        raise _err(f"{f}.kind", f"unknown run kind {kind!r}; expected one of {', '.join(RUN_KINDS)}")
    allowed = {"solve": _SOLVE_KEYS, "path": _PATH_KEYS, "grid": _GRID_KEYS}.get(kind, _TEST_KEYS)
    unknown = set(m) - allowed
    if unknown:
        raise _err(f, f"unknown key(s) {sorted(unknown)} for kind {kind!r}; expected some of {sorted(allowed)}")
    out = {"kind": kind}
    try:
        out["sampling"] = Sampling.parse(m.get("sampling", "gap")).name.lower()
    except ValueError as exc:
        raise _err(f"{f}.sampling", str(exc)) from None
    try:
        out["step"] = StepKind.parse(m.get("step", "fw")).name.lower()
    except ValueError as exc:
        raise _err(f"{f}.step", str(exc)) from None
    if out["sampling"] in ("weights", "exact_gap"):
        raise _err(f"{f}.sampling", f"sampling {out['sampling']!r} is not available in sweeps")
    out["cache"] = _check_cache(f"{f}.cache", m.get("cache", False))
    out["gap_power"] = _num(f"{f}.gap_power", m.get("gap_power", 1.0))
    if kind in ("solve",) + TEST_KINDS:
        bs = m.get("batch_step", False)
        if not isinstance(bs, bool):
            raise _err(f"{f}.batch_step", f"expected true/false, got {bs!r}")
        out["batch_step"] = bs
    from .regpath import path_defaults
    pd = path_defaults()
    if kind == "path":
        out["eps"] = _num(f"{f}.eps", m.get("eps", pd["eps"]))
        out["kappa"] = _num(f"{f}.kappa", m.get("kappa", pd["kappa"]), below_one=True)
        out["lam_min"] = _num(f"{f}.lam_min", m.get("lam_min", pd["lam_min"]))
        for b in ("heuristic", "true_gaps"):
            v = m.get(b, False)
            if not isinstance(v, bool):
                raise _err(f"{f}.{b}", f"expected true/false, got {v!r}")
            out[b] = v
        out["max_passes_per_breakpoint"] = _num(f"{f}.max_passes_per_breakpoint",
                                                m.get("max_passes_per_breakpoint", pd["max_passes_per_breakpoint"]),
                                                allow_inf=True)
        out["check_factor"] = _num(f"{f}.check_factor", m.get("check_factor", pd["check_factor"]))
    if kind == "grid":
        out["eps"] = _num(f"{f}.eps", m.get("eps", pd["eps"]))
        ws = m.get("warm_start", "primal")
        if ws not in ("none", "primal", "dual"):
            raise _err(f"{f}.warm_start", f"expected 'none', 'primal' or 'dual', got {ws!r}")
        out["warm_start"] = ws
        hi, lo = m.get("grid_hi", 15), m.get("grid_lo", -15)
        for k, v in (("grid_hi", hi), ("grid_lo", lo)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(f"{f}.{k}", f"expected an integer exponent of 2, got {v!r}")
        if not hi > lo:
            raise _err(f"{f}.grid_hi", f"needs grid_hi > grid_lo, got {hi} and {lo}")
        out["grid_hi"], out["grid_lo"] = hi, lo
        out["max_passes_per_point"] = _num(f"{f}.max_passes_per_point", m.get("max_passes_per_point", pd["max_passes_per_breakpoint"]),
                                           allow_inf=True)
        out["check_factor"] = _num(f"{f}.check_factor", m.get("check_factor", pd["check_factor"]))
    if kind in TEST_KINDS:
        out["marker"] = str(m.get("marker", ""))
        out["message"] = str(m.get("message", "test failure"))
    label = m.get("label", name)
    if not isinstance(label, str):
        raise _err(f"{f}.label", f"expected a string, got {label!r}")
    out["label"] = label
    return out


@dataclass(frozen=True)
class SweepSpec:
    """A validated experiment spec (see the module docstring for the format).

    Attributes
    ----------
    name : str
    version : int
    datasets : tuple of str
        The datasets' keys (see :class:`DatasetRef`).
    refs : dict key -> DatasetRef
        The registered problem, loader options and cut of each dataset.
    lams : dict dataset -> list of (float, "1/n" or "default": the problem's own λ)
    seeds : tuple of int
    methods : dict name -> normalized method settings (dict)
    budget : dict with max_passes (dict dataset -> float), time_limit, gap_check, gap_threshold,
        test_error
    budget_name : str
    metrics : tuple of str
    data_home : str or None
    verify : bool
        Check the data files against their checksums (default True; ``verify = false`` in a spec)
    raw : dict — the spec as given (stored in the manifest)
    """

    name: str
    version: int
    datasets: tuple
    refs: dict
    lams: dict
    seeds: tuple
    methods: dict
    budget: dict
    budget_name: str
    metrics: tuple
    data_home: str | None = None
    verify: bool = True
    description: str = ""
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict, *, budget: str | None = None) -> "SweepSpec":
        """Validate a spec dict; ValueError naming the field on bad input."""
        if not isinstance(d, dict):
            raise TypeError(f"a spec is a dict (or a TOML file), got {type(d).__name__}")
        unknown = set(d) - _TOP_KEYS
        if unknown:
            raise _err(sorted(unknown)[0], f"unknown top-level key(s) {sorted(unknown)}; expected some of "
                                           f"{sorted(_TOP_KEYS)}")
        name = d.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _err("name", f"expected a non-empty string, got {name!r}")
        version = d.get("version", 1)
        try:
            version = validate.int_at_least("version", version, 1)
        except ValueError as exc:
            raise _err("version", str(exc)) from None
        ds = d.get("datasets")
        if isinstance(ds, str):
            ds = [ds]
        if not isinstance(ds, (list, tuple)) or not ds:
            raise _err("datasets", f"expected a non-empty list of dataset names, got {ds!r}")
        refs = tuple(parse_dataset(x, f"datasets[{j}]") for j, x in enumerate(ds))
        ds = tuple(r.key for r in refs)
        if len(set(ds)) != len(ds):
            raise _err("datasets", f"duplicate dataset names in {list(ds)} (give a table's label to tell them apart)")
        methods_raw = d.get("methods")
        if not isinstance(methods_raw, dict) or not methods_raw:
            raise _err("methods", f"expected a non-empty table of methods, got {methods_raw!r}")
        methods = {str(k): _check_method(str(k), v) for k, v in methods_raw.items()}
        seen = {}
        for mname, m in methods.items():
            same = _canonical({k: v for k, v in m.items() if k != "label"})
            if same in seen:
                raise _err(f"methods.{mname}", f"has the same settings as methods.{seen[same]}")
            seen[same] = mname
        needs_lam = any(m["kind"] not in ("path", "grid") for m in methods.values())
        lams_raw = d.get("lams")
        if lams_raw is None:  # each problem's own λ (gaplab.core.problems: default_lam)
            lams = {x: (["default"] if needs_lam else []) for x in ds}
        else:
            lams = _per_dataset("lams", lams_raw, ds, _check_lams)
        seeds = d.get("seeds", 1)
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            if seeds < 1:
                raise _err("seeds", f"expected a count >= 1 or a list of seeds, got {seeds!r}")
            seeds = list(range(seeds))
        if (not isinstance(seeds, (list, tuple)) or not seeds
                or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
            raise _err("seeds", f"expected a count or a list of integers >= 0, got {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise _err("seeds", f"duplicate seeds in {list(seeds)}")
        # budget
        if "budgets" in d:
            bs = d["budgets"]
            if not isinstance(bs, dict) or not bs or not all(isinstance(v, dict) for v in bs.values()):
                raise _err("budgets", "expected tables [budgets.NAME] (e.g. laptop, paper)")
            bname = budget or d.get("default_budget") or ("laptop" if "laptop" in bs else next(iter(bs)))
            if bname not in bs:
                raise _err("budgets", f"no budget named {bname!r}; the spec has {', '.join(bs)}")
            b_raw, bfield = bs[bname], f"budgets.{bname}"
        else:
            b_raw, bfield = d.get("budget", {}), "budget"
            if budget not in (None, "default"):
                raise _err("budgets", f"budget {budget!r} asked for, but the spec has a single [budget] table")
            bname = "default"
        if not isinstance(b_raw, dict):
            raise _err(bfield, f"expected a table, got {b_raw!r}")
        unknown = set(b_raw) - _BUDGET_KEYS
        if unknown:
            raise _err(bfield, f"unknown key(s) {sorted(unknown)}; expected some of {sorted(_BUDGET_KEYS)}")
        bud = {
            "max_passes": _per_dataset(f"{bfield}.max_passes", b_raw.get("max_passes", 100.0), ds,
                                       lambda f, v: _num(f, v, allow_inf=True)),
            "time_limit": _num(f"{bfield}.time_limit", b_raw.get("time_limit", math.inf), allow_inf=True),
            "gap_check": _num(f"{bfield}.gap_check", b_raw.get("gap_check", 10), allow_inf=True, integer=True),
            "gap_threshold": _num(f"{bfield}.gap_threshold", b_raw.get("gap_threshold", 0.0), allow_zero=True),
            "test_error": b_raw.get("test_error", False),
        }
        if not isinstance(bud["test_error"], bool):
            raise _err(f"{bfield}.test_error", f"expected true/false, got {bud['test_error']!r}")
        if bud["gap_check"] < 1:
            raise _err(f"{bfield}.gap_check", f"expected >= 1 (or inf), got {bud['gap_check']!r}")
        if (math.isinf(bud["time_limit"]) and bud["gap_threshold"] == 0
                and any(math.isinf(v) for v in bud["max_passes"].values())):
            raise _err(f"{bfield}.max_passes", "set max_passes, time_limit or gap_threshold: the runs would never stop")
        metrics = d.get("metrics", list(METRICS))
        if not isinstance(metrics, (list, tuple)) or any(m not in METRICS for m in metrics):
            bad = [m for m in metrics if m not in METRICS] if isinstance(metrics, (list, tuple)) else metrics
            raise _err("metrics", f"unknown metric(s) {bad!r}; expected some of {', '.join(METRICS)}")
        dh = d.get("data_home")
        if dh is not None and not isinstance(dh, str):
            raise _err("data_home", f"expected a directory path, got {dh!r}")
        verify = d.get("verify", True)
        if not isinstance(verify, bool):
            raise _err("verify", f"expected true or false, got {verify!r}")
        desc = d.get("description", "")
        return cls(name=name.strip(), version=version, datasets=ds, refs=dict(zip(ds, refs)), lams=lams,
                   seeds=tuple(seeds), methods=methods, budget=bud, budget_name=bname, metrics=tuple(metrics),
                   data_home=dh, verify=verify, description=str(desc), raw=json.loads(json.dumps(d, default=str)))

    def runs(self) -> list[dict]:
        """The independent runs (see :func:`expand_runs`)."""
        return expand_runs(self)


def load_spec(spec, *, budget: str | None = None) -> SweepSpec:
    """A :class:`SweepSpec` from a spec object, a dict or a TOML file path."""
    if isinstance(spec, SweepSpec):
        if budget not in (None, spec.budget_name):
            return SweepSpec.from_dict(spec.raw, budget=budget)
        return spec
    if isinstance(spec, dict):
        return SweepSpec.from_dict(spec, budget=budget)
    if isinstance(spec, (str, os.PathLike)):
        import tomllib
        p = Path(spec)
        if not p.is_file():
            raise FileNotFoundError(f"spec file {str(p)!r} does not exist")
        try:
            d = tomllib.loads(p.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"spec file {str(p)!r} is not valid TOML: {exc}") from None
        return SweepSpec.from_dict(d, budget=budget)
    raise TypeError(f"spec must be a SweepSpec, a dict or a TOML file path, got {type(spec).__name__}")


def _canonical(obj) -> str:
    return json.dumps(jsonsafe.encode(obj), sort_keys=True, separators=(",", ":"))


_NOT_KEYED = ("label", "run_id", "data_home", "verify")


def run_id(config: dict) -> str:
    """Hash of a run's config (the store key): sha256 of its canonical JSON, 16 hex digits.
    The method's name is part of it; its display ``label`` and where the data lives
    (``data_home``) and whether its files are checked (``verify``) are not. The dataset fields ``problem``, ``options`` and ``first`` are left
    out when the dataset's name says it all (``"ocr-small"``, ``"ocr-small[:20]"``: a problem
    without options), so stores written before sweeps read the problem registry stay valid."""
    key = {k: v for k, v in config.items() if k not in _NOT_KEYED}
    first = key.get("first")
    implied = key.get("problem", key.get("dataset")) + (f"[:{first}]" if first else "")
    if not key.get("options") and key.get("dataset") == implied:
        for k in ("problem", "options", "first"):
            key.pop(k, None)
    return hashlib.sha256(_canonical(key).encode()).hexdigest()[:16]


def expand_runs(spec) -> list[dict]:
    """The runs of a spec: datasets × λ × methods × seeds for solve runs, datasets × methods ×
    seeds for path/grid runs. Each run is a plain dict (its config) with a ``run_id``."""
    spec = load_spec(spec)
    runs = []
    from .problems import get_problem
    for ds in spec.datasets:
        ref = spec.refs[ds]
        for mname, m in spec.methods.items():
            lams = [None] if m["kind"] in ("path", "grid") else spec.lams[ds]
            # "default": the registered problem's own λ for these options (e.g. horse-small 10)
            lams = [get_problem(ref.problem).lam(**ref.options) if lam == "default" else lam for lam in lams]
            for lam in dict.fromkeys(lams):
                for seed in spec.seeds:
                    cfg = {**ref.config(), "method": mname, **m, "seed": int(seed),
                           "max_passes": spec.budget["max_passes"][ds], "time_limit": spec.budget["time_limit"],
                           "gap_check": spec.budget["gap_check"], "gap_threshold": spec.budget["gap_threshold"],
                           "test_error": spec.budget["test_error"], "data_home": spec.data_home,
                           "verify": spec.verify,
                           "metrics": sorted(spec.metrics)}
                    if lam is not None:
                        cfg["lam"] = lam
                    cfg["run_id"] = run_id(cfg)
                    runs.append(cfg)
    return runs


# ============================================================================ one run (on a worker)
_MODELS: dict = {}


def _problem(cfg):
    """The loaded problem of a run's dataset (registry), kept per worker process (one dataset at a
    time). Configs from before the registry (no ``problem`` field) name it in ``dataset``."""
    ref = (DatasetRef(cfg["dataset"], cfg["problem"], dict(cfg.get("options") or {}), cfg.get("first"))
           if "problem" in cfg else parse_dataset(cfg["dataset"]))
    key = (ref.key, ref.problem, _canonical(ref.options), ref.first, cfg.get("data_home"))
    if key not in _MODELS:
        problem = load_dataset(ref, cfg.get("data_home"), cfg.get("verify", True))
        _MODELS.clear()
        _MODELS[key] = problem
    return _MODELS[key]


_WARM: set = set()


def _small_model(problem):
    """A 3-example instance of the problem's model (the same model class and array types, so numba
    loads the same compiled kernels): its first 3 training examples, else the problem's own
    ``warmup`` instance; None if it has neither."""
    train = getattr(problem.model, "data", None)
    spec = problem.spec
    if train is not None and hasattr(train, "subset") and spec is not None and spec.model_factory is not None:
        return spec.model_factory(train.subset(np.arange(min(3, problem.n))))
    if spec is not None and spec.warmup is not None:
        return spec.warmup()
    return None


def _warm_up(problem, scfg):
    """Run the solver of this config once on 3 examples, so that the first timed run of a worker
    process does not pay for loading numba's compiled kernels (times stay comparable)."""
    key = (type(problem.model).__name__, scfg.step, scfg.cache.enabled, scfg.sampling, scfg.batch_step)
    if key in _WARM:
        return
    from .problems import model_box
    from .solver import Solver
    small = _small_model(problem)
    if small is not None:
        Solver(small, scfg.replace(max_passes=2.0, time_limit=math.inf, gap_check=1),
               **model_box(small)).run(final_gap_check=True)
    _WARM.add(key)


def _warm_up_path(problem, scfg, cfg):
    """As :func:`_warm_up` for path and grid runs (their own kernels): the same method on 3
    examples, at most 5 breakpoints / grid points."""
    key = (type(problem.model).__name__, cfg["kind"], scfg.step, scfg.cache.enabled, scfg.sampling,
           cfg.get("heuristic"), cfg.get("true_gaps"))
    if key in _WARM:
        return
    from .regpath import grid_search, regularization_path
    small = _small_model(problem)
    if small is None:
        pass
    elif cfg["kind"] == "path":
        regularization_path(small, solver_config=scfg, eps=cfg["eps"], kappa=cfg["kappa"], heuristic=cfg["heuristic"],
                            true_gaps=cfg["true_gaps"], max_breakpoints=5)
    else:
        grid_search(small, [4.0, 2.0, 1.0, 0.5, 0.25], eps=cfg["eps"], warm_start=cfg["warm_start"], solver_config=scfg)
    _WARM.add(key)


def _solver_config(cfg, lam, **extra):
    from .config import CacheConfig, SolverConfig
    return SolverConfig(lam=lam, sampling=cfg["sampling"], step=cfg["step"], gap_power=cfg["gap_power"],
                        cache=CacheConfig(**cfg["cache"]), gap_check=cfg["gap_check"], seed=cfg["seed"],
                        **extra)


def _columns(rows: list[dict], names) -> dict:
    return {c: [r.get(c) for r in rows] for c in names}


def execute_run(cfg: dict) -> dict:
    """Run one config (in a worker process) and return its rows and summary.

    Returns
    -------
    dict with ``rows`` (column name -> list: the trace of a solve run, one row per pass and gap
    check; the points of a path/grid run), ``summary`` (final numbers), ``lam`` (the resolved λ),
    ``host``, ``pid``, ``elapsed_s`` (wall seconds of the whole task: loading, warm-up, run) and
    ``cpu_s`` (CPU seconds of the worker process during the solver run or path, warm-up excluded;
    with one thread per worker that is the run's own CPU time plus the worker's small overhead).
    """
    t0 = time.perf_counter()
    kind = cfg["kind"]
    if kind == "_test_raise":
        raise RuntimeError(cfg["message"])
    if kind == "_test_kill_once":
        marker = Path(cfg["marker"])
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
    problem = _problem(cfg)
    model, test = problem.model, problem.test
    test_data = test if cfg.get("test_error") else None
    if kind in ("solve",) + TEST_KINDS:
        from .problems import model_box
        from .solver import Solver
        lam = 1.0 / model.n if cfg["lam"] == "1/n" else float(cfg["lam"])
        scfg = _solver_config(cfg, lam, max_passes=cfg["max_passes"], time_limit=cfg["time_limit"],
                              gap_threshold=cfg["gap_threshold"], batch_step=cfg["batch_step"])
        _warm_up(problem, scfg)
        c0 = time.process_time()
        result = Solver(model, scfg, test_data=test_data, **model_box(model)).run(final_gap_check=True)
        cpu_s = time.process_time() - c0
        keep = [c for c in TRACE_COLUMNS if c not in METRICS or c in cfg.get("metrics", METRICS)]
        rows = [{c: r.get(c) for c in keep} for r in result.trace]
        summary = {"status": result.status.name.lower(), "exact_gap": result.exact_gap, "primal": result.primal,
                   "dual": result.dual, "effective_passes": result.effective_passes,
                   "oracle_calls": result.oracle_calls, "cache_hits": result.cache_hits,
                   "wall_time_s": result.wall_time_s}
        cols = _columns(rows, keep)
    else:
        from .regpath import default_grid, grid_search, regularization_path
        scfg = _solver_config(cfg, 1.0)
        _warm_up_path(problem, scfg, cfg)  # the path and the grid use the model's box (model_box)
        c0 = time.process_time()
        if kind == "path":
            path = regularization_path(model, solver_config=scfg, eps=cfg["eps"], kappa=cfg["kappa"],
                                       lam_min=cfg["lam_min"], heuristic=cfg["heuristic"],
                                       true_gaps=cfg["true_gaps"], time_limit=cfg["time_limit"],
                                       max_passes_per_breakpoint=cfg["max_passes_per_breakpoint"],
                                       check_factor=cfg["check_factor"], test_data=test_data)
        else:
            path = grid_search(model, default_grid(cfg["grid_hi"], cfg["grid_lo"]), eps=cfg["eps"],
                               warm_start=cfg["warm_start"], solver_config=scfg, test_data=test_data,
                               max_passes_per_point=cfg["max_passes_per_point"], time_limit=cfg["time_limit"],
                               check_factor=cfg["check_factor"])
        cpu_s = time.process_time() - c0
        rows = path.rows()
        names = list(rows[0]) if rows else ["index", "lam"]
        cols = _columns(rows, names)
        lam = math.nan
        summary = {"status": path.end_reason or "done", "points": len(path), "total_passes": path.total_passes,
                   "total_time_s": path.total_time_s, "lam_end": path.lam_end}
    return {"rows": cols, "summary": summary, "lam": lam, "host": socket.gethostname(), "pid": os.getpid(),
            "elapsed_s": time.perf_counter() - t0, "cpu_s": cpu_s}


# ============================================================================ the store
def _atomic_write(path: Path, write: Callable[[str], None]):
    """``write(tmp)`` into a temporary file next to ``path``, fsync it, then ``os.replace``: a
    failed or interrupted write leaves the previous file intact and no temporary file
    (:func:`gaplab.core.atomic.atomic_path`)."""
    with atomic_path(path) as tmp:
        write(tmp)


def _manifest_text(manifest: dict) -> str:
    return json.dumps(jsonsafe.encode(manifest), indent=1, allow_nan=False)


class Store:
    """A results store directory: ``manifest.json`` + ``runs/<run_id>.parquet``.

    Parameters
    ----------
    path : str or Path
        The store directory (created by :meth:`create`, or opened if it exists).

    Raises
    ------
    ValueError
        The path is a file, or not a store (no manifest), or its format is unknown.
    """

    MANIFEST = "manifest.json"

    def __init__(self, path):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"store {str(self.path)!r} is a file, not a directory; give a directory for --store")
        mp = self.path / self.MANIFEST
        if not mp.is_file():
            raise ValueError(f"store {str(self.path)!r} has no {self.MANIFEST} (not a gaplab sweep store)")
        try:
            self.manifest = jsonsafe.decode(json.loads(mp.read_text()))
        except json.JSONDecodeError as exc:
            raise ValueError(f"store manifest {str(mp)!r} is not valid JSON: {exc}") from None
        except RecursionError:
            raise ValueError(f"store manifest {str(mp)!r} is nested too deeply to be a gaplab sweep manifest") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"store manifest {str(mp)!r} cannot be read ({type(exc).__name__}: {exc})") from None
        fmt = self.manifest.get("store_format") if isinstance(self.manifest, dict) else None
        if fmt != STORE_FORMAT:
            raise ValueError(f"store {str(self.path)!r}: field 'store_format' is {fmt!r}, this gaplab reads "
                             f"format {STORE_FORMAT}")
        self._check_manifest(mp)

    def _check_manifest(self, mp) -> None:
        """A tampered manifest is refused here, naming the file, the run and the field (instead of
        a KeyError later)."""
        runs = self.manifest.get("runs")
        if not isinstance(runs, dict):
            raise ValueError(f"store manifest {str(mp)!r}: field 'runs' must be a mapping run_id -> entry, "
                             f"got {type(runs).__name__}")
        for rid, e in runs.items():
            if not isinstance(e, dict):
                raise ValueError(f"store manifest {str(mp)!r}: run {rid!r} must be a mapping, got {type(e).__name__}")
            if e.get("status") not in ("done", "failed"):
                raise ValueError(f"store manifest {str(mp)!r}: run {rid!r} has status {e.get('status')!r} "
                                 "(expected 'done' or 'failed')")
            if not isinstance(e.get("config"), dict) or "kind" not in e["config"]:
                raise ValueError(f"store manifest {str(mp)!r}: run {rid!r} lacks its config (field 'config')")
            if e["status"] == "done" and not (isinstance(e.get("file"), str) and e["file"].startswith("runs/")
                                              and ".." not in e["file"]):
                raise ValueError(f"store manifest {str(mp)!r}: finished run {rid!r} lacks its file "
                                 f"(field 'file' = {e.get('file')!r}, expected 'runs/<run_id>.parquet')")

    # -------------------------------------------------------------- creating / checking
    @classmethod
    def open_for(cls, path, spec: SweepSpec) -> "Store":
        """Open the store of ``spec`` at ``path``, creating it if needed.

        Raises ValueError if ``path`` is a file, a non-empty directory that is not a store, or
        the store of another spec (name) or spec version (field ``version``)."""
        p = Path(path)
        if p.exists() and not p.is_dir():
            raise ValueError(f"store {str(p)!r} is a file, not a directory; give a directory for --store")
        if not (p / cls.MANIFEST).exists():
            if p.exists() and any(p.iterdir()):
                raise ValueError(f"store {str(p)!r} is a non-empty directory without {cls.MANIFEST}; "
                                 "give a new or empty directory for --store")
            manifest = {"store_format": STORE_FORMAT, "spec_name": spec.name, "spec_version": spec.version,
                        "spec": spec.raw, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "runs": {}}
            try:  # an unwritable --store is refused here, before any run
                (p / "runs").mkdir(parents=True, exist_ok=True)
                _atomic_write(p / cls.MANIFEST, lambda t: Path(t).write_text(_manifest_text(manifest)))
            except OSError as exc:
                raise ValueError(f"--store {str(p)!r}: cannot create the store there "
                                 f"({exc.strerror or exc}); give a writable directory") from None
        store = cls(p)
        m = store.manifest
        if m.get("spec_name") != spec.name:
            raise ValueError(f"store {str(p)!r} belongs to spec {m.get('spec_name')!r}, not {spec.name!r} "
                             "(field 'name'); use another --store")
        if m.get("spec_version") != spec.version:
            raise ValueError(f"store {str(p)!r} was written by spec {spec.name!r} version {m.get('spec_version')!r}; "
                             f"this spec has version {spec.version} (field 'version'); use another --store")
        return store

    # -------------------------------------------------------------- writing
    def _write_manifest(self):
        _atomic_write(self.path / self.MANIFEST,
                      lambda t: Path(t).write_text(_manifest_text(self.manifest)))

    def record_done(self, cfg: dict, out: dict, attempts: int, errors: list):
        """Write a finished run's Parquet file, then its manifest entry (both atomically)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        rid = cfg["run_id"]
        cols = dict(out["rows"])
        n = len(next(iter(cols.values()))) if cols else 0
        lam_label = "" if cfg.get("lam") is None else str(cfg["lam"])
        meta_cols = {"run_id": [rid] * n, "dataset": [cfg["dataset"]] * n, "method": [cfg["method"]] * n,
                     "label": [cfg["label"]] * n, "run_kind": [cfg["kind"]] * n, "seed": [cfg["seed"]] * n,
                     "lam_label": [lam_label] * n, "lam_value": [float(out["lam"])] * n}
        for k in list(cols):
            if k in meta_cols:
                cols[f"point_{k}"] = cols.pop(k)
        arrays = {**meta_cols, **cols}
        table = pa.table({k: pa.array(v, type=pa.float64() if _all_num(v) and k not in meta_cols else None)
                          for k, v in arrays.items()})
        table = table.replace_schema_metadata({b"gaplab_run": _canonical(cfg).encode()})
        f = self.path / "runs" / f"{rid}.parquet"
        _atomic_write(f, lambda t: pq.write_table(table, t))
        self.manifest["runs"][rid] = {"config": cfg, "status": "done", "attempts": attempts, "errors": errors,
                                      "file": f"runs/{rid}.parquet", "summary": out["summary"],
                                      "host": out.get("host"), "pid": out.get("pid"),
                                      "elapsed_s": out.get("elapsed_s"), "cpu_s": out.get("cpu_s"),
                                      "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write_manifest()

    def record_failed(self, cfg: dict, attempts: int, errors: list):
        """A run that failed every attempt: status "failed" with its error messages."""
        rid = cfg["run_id"]
        self.manifest["runs"][rid] = {"config": cfg, "status": "failed", "attempts": attempts, "errors": errors,
                                      "error": errors[-1]["message"] if errors else "",
                                      "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write_manifest()

    # -------------------------------------------------------------- reading
    def is_done(self, rid: str) -> bool:
        """Finished, with its own Parquet file (see :meth:`check_run_file`)."""
        e = self.manifest["runs"].get(rid)
        return bool(e and e["status"] == "done") and self.check_run_file(rid) is None

    def check_run_file(self, rid: str) -> str | None:
        """What is wrong with the Parquet file of the finished run ``rid`` (None: nothing): it must
        exist, be readable Parquet (its footer: a truncated file is not) and be this run's own
        file: schema metadata ``gaplab_run`` holding the run's config with this run id, and a
        ``run_id`` column. Reads the footer only."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        e = self.manifest["runs"].get(rid)
        if not (e and e["status"] == "done"):
            return "the run is not finished"
        f = self.path / e["file"]
        if not f.is_file():
            return f"its file {e['file']} is missing"
        try:
            schema = pq.read_schema(f)
        except (OSError, pa.ArrowException) as exc:
            return f"its file {e['file']} is not readable Parquet ({type(exc).__name__}: {exc})"
        raw = (schema.metadata or {}).get(b"gaplab_run")
        if raw is None:
            return f"its file {e['file']} is not a gaplab run file (no 'gaplab_run' schema metadata)"
        try:
            cfg = json.loads(raw)
        except (ValueError, RecursionError):
            cfg = None
        if not isinstance(cfg, dict):
            return f"its file {e['file']} has broken 'gaplab_run' metadata"
        if cfg.get("run_id") != rid:
            return f"its file {e['file']} holds run {cfg.get('run_id')!r}, not {rid!r}"
        if "run_id" not in schema.names:
            return f"its file {e['file']} lacks the run_id column"
        return None

    def runs(self):
        """One row per run: run_id, status, attempts, error and the config fields (pandas)."""
        import pandas as pd
        rows = []
        for rid, e in self.manifest["runs"].items():
            c = dict(e["config"])
            c["cache"] = bool(c.get("cache", {}).get("enabled", False)) if isinstance(c.get("cache"), dict) else c.get("cache")
            c["lam_label"] = "" if c.get("lam") is None else str(c.pop("lam"))
            rows.append({"run_id": rid, "status": e["status"], "attempts": e.get("attempts", 1),
                         "error": e.get("error", ""), **{k: v for k, v in c.items() if k != "run_id"}})
        return pd.DataFrame(rows)

    def read_run(self, rid: str):
        """The rows of one finished run (pandas DataFrame)."""
        import pyarrow.parquet as pq
        import pyarrow as pa
        e = self.manifest["runs"].get(rid)
        if e is None or e["status"] != "done":
            raise KeyError(f"run {rid!r} is not a finished run of store {str(self.path)!r}")
        f = self.path / e["file"]
        problem = self.check_run_file(rid)
        if problem is None:
            try:
                df = pq.read_table(f).to_pandas()
            except (OSError, pa.ArrowException) as exc:  # footer intact, data pages not: is_done cannot see it
                problem = (f"its file {e['file']} cannot be read ({type(exc).__name__}: {exc}); remove it and "
                           "run the sweep again to recompute the run")
            else:
                if not (df["run_id"] == rid).all():
                    problem = (f"its file {e['file']} holds rows of other runs; remove it and run the sweep "
                               "again to recompute the run")
        if problem is not None:
            if "run the sweep again" not in problem:
                problem += "; run the sweep again to recompute the run"
            raise ValueError(f"store {str(self.path)!r}, run {rid!r}: {problem}")
        return df

    def traces(self, kinds=("solve",)):
        """Rows of every finished run of the given run kinds, concatenated (pandas DataFrame)."""
        import pandas as pd
        frames = [self.read_run(rid) for rid, e in sorted(self.manifest["runs"].items())
                  if e["status"] == "done" and e["config"]["kind"] in kinds]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def config(self, rid: str) -> dict:
        return dict(self.manifest["runs"][rid]["config"])


def _all_num(v):
    return all((isinstance(x, (int, float)) and not isinstance(x, bool)) or x is None for x in v) and any(
        isinstance(x, float) for x in v)


# ============================================================================ the sweep
@dataclass
class SweepReport:
    """What :func:`run_sweep` did. ``submitted`` counts the tasks given to Dask (retries included)."""

    total: int = 0
    skipped: int = 0
    submitted: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    elapsed_s: float = 0.0
    workers: int = 0
    failures: dict = field(default_factory=dict)
    #: finished runs whose stored file was missing, corrupt or foreign (run id -> what was wrong), recomputed
    bad_files: dict = field(default_factory=dict)
    #: the Dask dashboard's address (a LocalCluster's), or "" when none was started
    dashboard: str = ""


def _error_entry(exc, tb_text=None) -> dict:
    msg = f"{type(exc).__name__}: {exc}"
    if tb_text is None:
        tb_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"message": msg, "traceback": tb_text[-4000:],
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


#: where a LocalCluster's dashboard listens unless told otherwise: this machine only
DASHBOARD_ADDRESS = "127.0.0.1:0"


def _make_cluster(workers: int, dashboard_address: str | None = DASHBOARD_ADDRESS):
    """A LocalCluster of ``workers`` processes with one thread each (numba's gap passes on one
    thread too). A killed worker fails its task at once (allowed-failures 0): the sweep retries.
    Its scheduler, workers and dashboard listen on 127.0.0.1 only; ``dashboard_address``
    ("HOST:PORT", port 0: any free one) exposes the dashboard elsewhere, None starts none."""
    import logging

    import dask
    from distributed import Client, LocalCluster
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=dashboard_address, env={"NUMBA_NUM_THREADS": "1"},
                               silence_logs=logging.CRITICAL)  # errors go to the manifest
        client = Client(cluster)
    return cluster, client


def run_sweep(spec, store, *, workers: int | None = None, scheduler: str | None = None, client=None,
              budget: str | None = None, retries: int = 1, progress: bool | Callable = False,
              dashboard_address: str | None = DASHBOARD_ADDRESS, connect_timeout: float = 30.0) -> SweepReport:
    """Run a spec's unfinished runs and record them in a store.

    Parameters
    ----------
    spec : SweepSpec, dict or path of a TOML file
    store : str or Path
        Store directory (created if missing; must belong to the same spec name and version).
    workers : int, optional
        Worker processes of the LocalCluster (default: CPU count). 0 runs serially in this process.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:port``) instead of a LocalCluster.
    client : distributed.Client, optional
        An existing client (tests, notebooks).
    budget : str, optional
        Which ``[budgets.NAME]`` of the spec (default: the spec's default, else "laptop").
    retries : int
        Extra attempts of a run that raised or whose worker died (default 1).
    progress : bool or callable(report, cfg, status)
        A tqdm bar over runs (True), or a callback after each finished run.
    dashboard_address : str or None
        "HOST:PORT" of the LocalCluster's Dask dashboard (default "127.0.0.1:0": this machine
        only, any free port; "0.0.0.0:8787" exposes it to the network, None: no dashboard).
        Not used with ``scheduler`` or ``client`` (their dashboard is theirs).
    connect_timeout : float
        Seconds to wait for ``scheduler`` (default 30).

    Returns
    -------
    SweepReport

    Raises
    ------
    ValueError
        A bad spec, store or argument (naming it).
    OSError
        The scheduler cannot be reached within ``connect_timeout`` (``TimeoutError``, naming
        its address), or the store cannot be written (e.g. disk full: the runs recorded so far
        are kept, a re-run continues).
    """
    retries = validate.int_at_least("retries", retries, 0)
    if workers is not None:
        workers = validate.int_at_least("workers", workers, 0)
    if dashboard_address is not None and not (isinstance(dashboard_address, str)
                                              and re.fullmatch(r"[^\s:]*:\d{1,5}", dashboard_address)):
        raise ValueError(f"dashboard_address must be 'HOST:PORT' (e.g. '127.0.0.1:8787') or None, "
                         f"got {dashboard_address!r}")
    connect_timeout = validate.positive("connect_timeout (seconds)", connect_timeout)
    spec = load_spec(spec, budget=budget)
    st = Store.open_for(store, spec)
    runs = expand_runs(spec)
    todo, bad = [], {}
    for r in runs:
        e = st.manifest["runs"].get(r["run_id"])
        problem = st.check_run_file(r["run_id"]) if e and e["status"] == "done" else "to do"
        if problem is not None:
            todo.append(r)
            if problem != "to do":
                bad[r["run_id"]] = problem
    rep = SweepReport(total=len(runs), skipped=len(runs) - len(todo), bad_files=bad)
    t0 = time.perf_counter()
    bar = None
    if progress is True:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(runs), initial=rep.skipped, unit="run", desc=f"sweep {spec.name}")
    notify = progress if callable(progress) else None
    attempts: dict[str, int] = {}
    errors: dict[str, list] = {}

    def finished(cfg, status):
        if bar is not None:
            bar.update(1)
            bar.set_postfix(done=rep.done, failed=rep.failed, refresh=False)
        if notify is not None:
            notify(rep, cfg, status)

    def handle_error(cfg, entry) -> bool:
        """Record an attempt's error; True if the run gets another attempt."""
        rid = cfg["run_id"]
        errors.setdefault(rid, []).append(entry)
        if attempts[rid] <= retries:
            rep.retried += 1
            return True
        st.record_failed(cfg, attempts[rid], errors[rid])
        rep.failed += 1
        rep.failures[rid] = entry["message"]
        finished(cfg, "failed")
        return False

    def handle_ok(cfg, out):
        rid = cfg["run_id"]
        st.record_done(cfg, out, attempts[rid], errors.get(rid, []))
        rep.done += 1
        finished(cfg, "done")

    try:
        if not todo:
            return rep
        if workers == 0 and client is None and scheduler is None:
            rep.workers = 0
            for cfg in todo:
                while True:
                    attempts[cfg["run_id"]] = attempts.get(cfg["run_id"], 0) + 1
                    rep.submitted += 1
                    try:
                        out = execute_run(cfg)
                    except Exception as exc:  # recorded, never fatal to the sweep
                        if handle_error(cfg, _error_entry(exc)):
                            continue
                    else:
                        handle_ok(cfg, out)
                    break
            return rep
        _run_dask(todo, st, rep, attempts, workers, scheduler, client, handle_ok, handle_error,
                  dashboard_address, float(connect_timeout))
        return rep
    finally:
        rep.elapsed_s = time.perf_counter() - t0
        if bar is not None:
            bar.close()


def _connect(scheduler: str, timeout: float):
    """A Client of the scheduler at ``scheduler``; an OSError naming it when it does not answer."""
    from distributed import Client
    try:
        return Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError) as exc:  # distributed raises OSError("Timed out trying to connect ...")
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TimeoutError(f"cannot reach the Dask scheduler {scheduler!r} within {timeout:g} s ({reason})") from None


def _run_dask(todo, st, rep, attempts, workers, scheduler, client, handle_ok, handle_error,
              dashboard_address=DASHBOARD_ADDRESS, connect_timeout=30.0):
    from distributed import as_completed
    cluster = own_client = None
    if client is None:
        if scheduler is not None:
            own_client = client = _connect(scheduler, connect_timeout)
        else:
            cluster, own_client = _make_cluster(workers or os.cpu_count() or 1, dashboard_address)
            client = own_client
            rep.dashboard = cluster.dashboard_link if dashboard_address is not None else ""
    try:
        rep.workers = len(client.scheduler_info().get("workers", {}))
        by_key = {}

        def submit(cfg):
            rid = cfg["run_id"]
            attempts[rid] = attempts.get(rid, 0) + 1
            rep.submitted += 1
            fut = client.submit(execute_run, cfg, key=f"gaplab-run-{rid}-{attempts[rid]}-{time.time_ns()}",
                                pure=False)
            by_key[fut.key] = cfg
            return fut

        ac = as_completed([submit(c) for c in todo])
        for fut in ac:
            cfg = by_key.pop(fut.key)
            if fut.status == "finished":
                handle_ok(cfg, fut.result())
                fut.release()
                continue
            try:
                exc = fut.exception()
                tb = fut.traceback()
                tb_text = "".join(traceback.format_tb(tb)) if tb is not None else ""
            except Exception as e2:  # cancelled futures raise here
                exc, tb_text = e2, ""
            fut.release()
            if handle_error(cfg, _error_entry(exc, tb_text)):
                ac.add(submit(cfg))
    finally:
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()
