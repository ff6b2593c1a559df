"""The spec of a sweep: its validation (:class:`SweepSpec`, :func:`load_spec`), its datasets
(:class:`DatasetRef`, loaded through the problem registry) and its expansion into independent,
hashed runs (:func:`expand_runs`, :func:`run_id`).

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
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import jsonsafe, validate

__all__ = ["SweepSpec", "load_spec", "expand_runs", "run_id", "load_dataset", "parse_dataset", "DatasetRef",
           "RUN_KINDS", "TEST_KINDS", "METRICS"]

RUN_KINDS = ("solve", "path", "grid")
TEST_KINDS = ("_test_raise", "_test_kill_once")   # for the test suite: a run that raises / kills its worker
METRICS = ("exact_gap", "heuristic_gap", "primal", "dual", "test_error", "cache_hits")

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
    from ..problems import problem_names
    return ", ".join(problem_names())


def _problem_spec(name, field_name):
    from ..problems import get_problem
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
    from ..problems import Problem, get_problem
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
    from ..config import CacheConfig
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
    from ..config import Sampling, StepKind
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
    from ..regpath import path_defaults
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
        name, version = _check_name_version(d)
        refs = _check_datasets(d.get("datasets"))
        ds = tuple(r.key for r in refs)
        methods = _check_methods(d.get("methods"))
        needs_lam = any(m["kind"] not in ("path", "grid") for m in methods.values())
        lams_raw = d.get("lams")
        if lams_raw is None:  # each problem's own λ (gaplab.core.problems: default_lam)
            lams = {x: (["default"] if needs_lam else []) for x in ds}
        else:
            lams = _per_dataset("lams", lams_raw, ds, _check_lams)
        seeds = _check_seeds(d.get("seeds", 1))
        bname, bud = _check_budget(d, budget, ds)
        metrics = _check_metrics(d.get("metrics", list(METRICS)))
        dh = d.get("data_home")
        if dh is not None and not isinstance(dh, str):
            raise _err("data_home", f"expected a directory path, got {dh!r}")
        verify = d.get("verify", True)
        if not isinstance(verify, bool):
            raise _err("verify", f"expected true or false, got {verify!r}")
        desc = d.get("description", "")
        return cls(name=name, version=version, datasets=ds, refs=dict(zip(ds, refs)), lams=lams,
                   seeds=seeds, methods=methods, budget=bud, budget_name=bname, metrics=metrics,
                   data_home=dh, verify=verify, description=str(desc), raw=json.loads(json.dumps(d, default=str)))

    def runs(self) -> list[dict]:
        """The independent runs (see :func:`expand_runs`)."""
        return expand_runs(self)



def _check_name_version(d: dict) -> tuple[str, int]:
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _err("name", f"expected a non-empty string, got {name!r}")
    try:
        version = validate.int_at_least("version", d.get("version", 1), 1)
    except ValueError as exc:
        raise _err("version", str(exc)) from None
    return name.strip(), version


def _check_datasets(ds) -> tuple:
    """The spec's datasets as :class:`DatasetRef` (unique keys)."""
    if isinstance(ds, str):
        ds = [ds]
    if not isinstance(ds, (list, tuple)) or not ds:
        raise _err("datasets", f"expected a non-empty list of dataset names, got {ds!r}")
    refs = tuple(parse_dataset(x, f"datasets[{j}]") for j, x in enumerate(ds))
    keys = [r.key for r in refs]
    if len(set(keys)) != len(keys):
        raise _err("datasets", f"duplicate dataset names in {keys} (give a table's label to tell them apart)")
    return refs


def _check_methods(methods_raw) -> dict:
    """The spec's methods, normalized (no two with the same settings)."""
    if not isinstance(methods_raw, dict) or not methods_raw:
        raise _err("methods", f"expected a non-empty table of methods, got {methods_raw!r}")
    methods = {str(k): _check_method(str(k), v) for k, v in methods_raw.items()}
    seen = {}
    for mname, m in methods.items():
        same = _canonical({k: v for k, v in m.items() if k != "label"})
        if same in seen:
            raise _err(f"methods.{mname}", f"has the same settings as methods.{seen[same]}")
        seen[same] = mname
    return methods


def _check_seeds(seeds) -> tuple:
    """A count (n -> 0..n-1) or a list of distinct integers >= 0."""
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise _err("seeds", f"expected a count >= 1 or a list of seeds, got {seeds!r}")
        seeds = list(range(seeds))
    if (not isinstance(seeds, (list, tuple)) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
        raise _err("seeds", f"expected a count or a list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise _err("seeds", f"duplicate seeds in {list(seeds)}")
    return tuple(seeds)


def _budget_table(d: dict, budget: str | None) -> tuple[str, dict, str]:
    """(budget name, its raw table, its field name): ``[budgets.NAME]`` or the single ``[budget]``."""
    if "budgets" in d:
        bs = d["budgets"]
        if not isinstance(bs, dict) or not bs or not all(isinstance(v, dict) for v in bs.values()):
            raise _err("budgets", "expected tables [budgets.NAME] (e.g. laptop, paper)")
        bname = budget or d.get("default_budget") or ("laptop" if "laptop" in bs else next(iter(bs)))
        if bname not in bs:
            raise _err("budgets", f"no budget named {bname!r}; the spec has {', '.join(bs)}")
        return bname, bs[bname], f"budgets.{bname}"
    if budget not in (None, "default"):
        raise _err("budgets", f"budget {budget!r} asked for, but the spec has a single [budget] table")
    return "default", d.get("budget", {}), "budget"


def _check_budget(d: dict, budget: str | None, ds: tuple) -> tuple[str, dict]:
    """(budget name, normalized budget): max_passes per dataset, time_limit, gap_check,
    gap_threshold, test_error; refused when nothing would ever stop a run."""
    bname, b_raw, bfield = _budget_table(d, budget)
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
    return bname, bud


def _check_metrics(metrics) -> tuple:
    if not isinstance(metrics, (list, tuple)) or any(m not in METRICS for m in metrics):
        bad = [m for m in metrics if m not in METRICS] if isinstance(metrics, (list, tuple)) else metrics
        raise _err("metrics", f"unknown metric(s) {bad!r}; expected some of {', '.join(METRICS)}")
    return tuple(metrics)


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
    from ..problems import get_problem
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
