"""The problem registry: every training problem gaplab offers, registered once.

A *problem* is a named pair of a data loader and a model: ``ocr-small``, ``ocr-large``,
``conll2000`` (Paper: Sec. 5, App. I), ``toy`` (Paper: App. C), ``horse-small`` (binary
segmentation of the Weizmann horses, App. I) and ``seg-tiny`` (a synthetic segmentation set).
A model's box constraints (``model.bounds()``, e.g. w_P >= 0) reach every Solver built for a
problem through :func:`model_box`. The CLI (``gaplab train/path/
grid --dataset``), the app's dataset picker, ``gaplab warmup``, :class:`gaplab.core.estimator.SSVM`
and the experiment sweeps (:mod:`gaplab.core.sweep`: a spec's ``datasets``) all read this registry,
so a new data set appears everywhere by one call::

    from gaplab.core.problems import register_problem
    from gaplab.core import ChainModel, load_ocr

    def five_words(data_home=None):
        train, test = load_ocr("small")
        return train.subset(range(5), name="ocr-5"), test

    register_problem("ocr-5", five_words, ChainModel, default_lam=0.01,
                     description="the first 5 words of OCR-small (a demo)")

Registrations live in module import order: the built-in ones
(:mod:`gaplab.core.builtin_problems`) run when this module is imported (cheap: loaders import
their data modules only when called).

Plugins. An installed package puts its problems everywhere without a wrapper script by
declaring an entry point in the group ``gaplab.problems`` (:data:`ENTRY_POINT_GROUP`) whose value
is a function that calls :func:`register_problem` (``my_pkg.problems:register``) or a module that
does so when imported (``my_pkg.problems``). They are loaded lazily, the first time the registry
is read (:func:`problem_names`, :func:`get_problem`), never at import; a plugin that fails is
reported (:class:`PluginWarning`, :func:`plugin_errors`) and the others still load. A model in a
local file: :func:`import_problems` (``gaplab train --import my_model.py``).
"""
from __future__ import annotations

import math
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from . import validate

__all__ = ["ProblemSpec", "ProblemOption", "Problem", "register_problem", "unregister_problem",
           "get_problem", "problem_names", "load_problem", "warmup_plan", "WarmupJob", "model_box",
           "ENTRY_POINT_GROUP", "PluginWarning", "load_plugins", "plugin_errors", "import_problems", "HOW_TO_ADD"]

#: The entry-point group an installed package declares its problems in.
ENTRY_POINT_GROUP = "gaplab.problems"
#: How a user adds a problem (the end of the unknown-dataset message).
HOW_TO_ADD = ("to add one, call gaplab.core.problems.register_problem in a module given by --import MODULE "
              f"(a module name or a .py file) or in an installed package's {ENTRY_POINT_GROUP!r} entry point "
              "(docs/guide/adding_a_model.md)")

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class ProblemOption:
    """An integer option of a problem's loader (the toy problem's n and K).

    Attributes
    ----------
    default : int
    bounds : (lo, hi)
        Inclusive range; the app's number box uses it, :meth:`ProblemSpec.parse_options` checks it.
    label : str
        Widget label in the app.
    help : str
    """

    default: int
    bounds: tuple = (1, 10**6)
    label: str = ""
    help: str = ""

    def check(self, problem: str, name: str, value) -> int:
        try:
            v = int(value) if not isinstance(value, str) else int(value.strip())
        except (TypeError, ValueError):
            raise ValueError(f"problem {problem!r}: option {name} must be an integer, got {value!r}") from None
        if isinstance(value, float) and value != v:
            raise ValueError(f"problem {problem!r}: option {name} must be an integer, got {value!r}")
        lo, hi = self.bounds
        if not lo <= v <= hi:
            raise ValueError(f"problem {problem!r}: option {name} must be in [{lo}, {hi}], got {value!r}")
        return v


def _default_evaluate(model, w, test):
    """(test error, {}): the fraction of wrongly labelled tokens (chain) or blocks (multiclass)."""
    if test is None:
        return math.nan, {}
    return float(model.error(w, test)), {}


@dataclass(frozen=True)
class ProblemSpec:
    """A registered problem (see :func:`register_problem` for the meaning of each field)."""

    name: str
    loader: Callable
    model_factory: Callable | None
    default_lam: Any
    description: str
    bundled: bool = True
    check: Callable | None = None
    metric: str = "test error"
    higher_is_better: bool = False
    evaluate: Callable = _default_evaluate
    warmup: Callable | None = None
    options: Mapping = field(default_factory=dict)
    quick: bool = False

    # ------------------------------------------------------------------ options, λ
    def parse_options(self, options: Mapping | None = None) -> dict:
        """Every option of the loader with its value: the defaults updated by ``options`` (strings
        allowed, as from the command line). ValueError names an unknown or invalid option."""
        options = dict(options or {})
        unknown = [k for k in options if k not in self.options]
        if unknown:
            valid = ", ".join(self.options) or "none"
            raise ValueError(f"problem {self.name!r} has no option {', '.join(map(repr, unknown))} "
                             f"(options: {valid})")
        return {k: o.check(self.name, k, options.get(k, o.default)) for k, o in self.options.items()}

    def lam(self, **options) -> float:
        """The default λ of this problem (for the given loader options: the toy problem uses 1/n)."""
        opts = self.parse_options(options)
        lam = self.default_lam(**opts) if callable(self.default_lam) else self.default_lam
        return float(lam)

    # ------------------------------------------------------------------ data
    def installed(self, data_home=None) -> bool:
        """Whether the data can be loaded without a download (always True for bundled data)."""
        if self.check is None:
            return True
        try:
            self.check(data_home)
        except (FileNotFoundError, OSError):
            return False
        return True

    def install_hint(self, data_home=None) -> str:
        """The message of ``check`` (where the loader looked and how to get the data), or ""."""
        if self.check is None:
            return ""
        try:
            self.check(data_home)
        except (FileNotFoundError, OSError) as exc:
            return str(exc)
        return ""

    def load(self, data_home=None, *, verify: bool = True, progress=None, files: Mapping | None = None,
             **options) -> "Problem":
        """Load the data and build the model.

        Parameters
        ----------
        data_home : str or os.PathLike, optional
            Directory of data files for problems that are not bundled (passed to the loader).
        verify : bool
            Check the known checksums of the data files (loaders that read files not bundled
            take ``verify``; False accepts modified copies).
        progress : bool or callable, optional
            Passed on to a loader that takes ``progress`` (the horse loader: True draws tqdm bars,
            a callable ``progress(stage, done, total)`` is told each image done); None: the
            loader's default.
        files : dict of str -> path, optional
            A user's data files (``data_file``, ``test_file``: ``gaplab train --data-file``),
            passed to a loader that takes those keywords (``conll-file``); None values are dropped.
        **options
            Loader options (see :attr:`options`).

        Returns
        -------
        Problem

        Raises
        ------
        FileNotFoundError
            The data is not installed (the message says how to get it).
        """
        opts = self.parse_options(options)
        extra = {}  # loader arguments that are not problem options (not in lam(), not stored)
        files = {k: v for k, v in (files or {}).items() if v is not None}
        if not verify or progress is not None or files:
            import inspect
            takes = inspect.signature(self.loader).parameters
            if not verify and "verify" in takes:
                extra["verify"] = False
            if progress is not None and "progress" in takes:
                extra["progress"] = progress
            for k, v in files.items():
                if k not in takes:
                    raise ValueError(f"problem {self.name!r} reads no --{k.replace('_', '-')} "
                                     f"(got {v!r}); conll-file does")
                extra[k] = v
        out = self.loader(data_home=data_home, **opts, **extra)
        if not isinstance(out, tuple) or len(out) not in (2, 3):
            raise TypeError(f"problem {self.name!r}: the loader must return (train, test) or "
                            f"(train, test, info), got {type(out).__name__}")
        train, test = out[0], out[1]
        info = dict(out[2]) if len(out) == 3 and out[2] is not None else {}
        model = self.model_factory(train) if self.model_factory is not None else train
        from .models.protocol import check_interface
        check_interface(model)
        return Problem(self.name, model, test, self.lam(**opts), info, self, opts)

    def test_metric(self, model, w, test) -> tuple:
        """(value, details): the problem's headline test metric (:attr:`metric`; a fraction in
        [0, 1], NaN without a test set) and extra JSON-ready details (CoNLL: conlleval's counts)."""
        if test is None:
            return math.nan, {}
        value, details = self.evaluate(model, w, test)
        return float(value), dict(details or {})

    def path_metric(self, model, test):
        """The headline test metric as a :class:`~gaplab.core.regpath.PathMetric` for a
        regularization path or grid search to record at every breakpoint (column
        ``test_metric``), or None when the problem's metric is the test error (recorded anyway)
        or there is no test set. CoNLL-2000: chunk F1 (conlleval)."""
        if test is None or self.metric == "test error":
            return None
        from .regpath import PathMetric
        return PathMetric(self.metric, lambda w: self.test_metric(model, w, test)[0], self.higher_is_better)


@dataclass(frozen=True, eq=False)
class Problem:
    """A loaded problem (read-only once built; the app shares it between sessions).

    Attributes
    ----------
    name : str
        The registered name.
    model : StructuredModel
        The training problem (one dual block per training example).
    test : object or None
        Test set for :meth:`ProblemSpec.test_metric` and the solver's test error (None: none).
    default_lam : float
        λ to start from (the app switches to it when the problem is chosen).
    info : dict
        Extra facts from the loader (toy: ``hard_index``, ``n``, ``K``).
    spec : ProblemSpec or None
    options : dict
        The loader options it was built with.
    """

    name: str
    model: Any
    test: Any
    default_lam: float
    info: dict = field(default_factory=dict)
    spec: ProblemSpec | None = None
    options: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.model.n)

    @property
    def train(self):
        return getattr(self.model, "data", None)

    def block_note(self, i: int) -> str:
        """A short note on block i from the loader's info (``info["block_note"](i)``), or ""."""
        fn = self.info.get("block_note")
        return str(fn(int(i))) if callable(fn) else ""


_REGISTRY: dict[str, ProblemSpec] = {}


def _check_loader_signature(name: str, loader: Callable, options: dict) -> None:
    """The loader is called as ``loader(data_home=..., **options)`` (and ``verify=False`` or
    ``progress=...`` when it takes them): it must accept those keywords and need nothing else. Checked when the
    problem is registered, not at its first load. Callables without an inspectable signature
    (some builtins) are not checked."""
    import inspect
    try:
        sig = inspect.signature(loader)
    except (TypeError, ValueError):
        return
    P = inspect.Parameter
    params = sig.parameters
    var_kw = any(p.kind == P.VAR_KEYWORD for p in params.values())

    def takes(k):
        p = params.get(k)
        return (p is not None and p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)) or (p is None and var_kw)

    missing = [k for k in ("data_home", *options) if not takes(k)]
    if missing:
        raise TypeError(f"register_problem({name!r}): the loader must accept the keyword argument(s) "
                        f"{', '.join(missing)} (it is called as loader(data_home=..., **options)); its "
                        f"signature is {getattr(loader, '__name__', 'loader')}{sig}")
    required = [k for k, p in params.items() if p.default is P.empty
                and p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY, P.POSITIONAL_ONLY)
                and (k not in ("data_home", *options) or p.kind == P.POSITIONAL_ONLY)]
    if required:
        raise TypeError(f"register_problem({name!r}): the loader requires the argument(s) {', '.join(required)}, "
                        f"which are neither data_home nor a declared option; give them defaults or declare "
                        f"them in options (signature {getattr(loader, '__name__', 'loader')}{sig})")


def _check_registration(name, loader, model_factory, check, evaluate, warmup, description, options,
                        replace) -> dict:
    """The argument checks of :func:`register_problem` (its Raises); returns the options as a dict."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"problem name must be a lower-case string of letters, digits, '.', '_', '-', got {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"problem {name!r} is already registered; pass replace=True to replace it")
    for arg, fn in (("loader", loader), ("model_factory", model_factory), ("check", check),
                    ("evaluate", evaluate), ("warmup", warmup)):
        if fn is not None and not callable(fn):
            raise TypeError(f"register_problem({name!r}): {arg} must be callable, got {type(fn).__name__}")
    if loader is None:
        raise TypeError(f"register_problem({name!r}): loader must be callable, got None")
    if not isinstance(description, str) or not description.strip():
        raise ValueError(f"register_problem({name!r}): description must be a non-empty string")
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"register_problem({name!r}): options must be a dict of str -> ProblemOption, got "
                        f"{type(options).__name__}")
    options = dict(options or {})
    for k, o in options.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise TypeError(f"register_problem({name!r}): option names must be identifiers (keyword arguments "
                            f"of the loader), got {k!r}")
        if not isinstance(o, ProblemOption):
            raise TypeError(f"register_problem({name!r}): option {k!r} must be a ProblemOption, "
                            f"got {type(o).__name__}")
    return options


def register_problem(name: str, loader: Callable, model_factory: Callable | None = None, *,
                     default_lam, description: str, bundled: bool = True, check: Callable | None = None,
                     metric: str = "test error", higher_is_better: bool = False,
                     evaluate: Callable | None = None, warmup: Callable | None = None,
                     options: Mapping | None = None, quick: bool = False,
                     replace: bool = False) -> ProblemSpec:
    """Register a training problem under ``name`` (CLI, app, warm-up and estimator read it).

    Parameters
    ----------
    name : str
        Lower-case name (letters, digits, ``.``, ``_``, ``-``), e.g. ``"ocr-small"``.
    loader : callable(data_home=None, ``**options``) -> (train, test) or (train, test, info)
        Reads the data. ``test`` may be None. ``info`` (a dict) is kept on the :class:`Problem`;
        an ``info["block_note"]`` callable(i) -> str annotates block i in the app.
        Data other than the bundled OCR must be read through ``data_home``, then ``$GAPLAB_DATA``,
        then the user cache directory, and raise FileNotFoundError saying how to get it.
    model_factory : callable(train) -> StructuredModel, optional
        Builds the model from the training data (``ChainModel``). None: the loader's ``train`` is
        the model already (the toy problem).
    default_lam : float or callable(``**options``) -> float
        λ > 0 to start from.
    description : str
        One line for ``--help`` and the app's tooltip.
    bundled : bool
        The data ships with gaplab (False: it needs files; give ``check``).
    check : callable(data_home) -> None, optional
        Raises FileNotFoundError (saying where it looked and how to install) when the data is
        not installed; must not download. Used by :meth:`ProblemSpec.installed`.
    metric : str
        Name of the headline test metric, e.g. ``"test error"`` or ``"chunk F1"``.
    higher_is_better : bool
        Whether a larger metric is better (F1) or worse (error).
    evaluate : callable(model, w, test) -> (value, details), optional
        Computes the metric on the test set (default: ``model.error(w, test)``, no details).
    warmup : callable() -> StructuredModel, optional
        A tiny instance of the problem's model (a few blocks) on which ``gaplab warmup``
        compiles the model's kernels; None: the problem's model class is not warmed up by it.
    options : dict of str -> ProblemOption, optional
        Integer options of the loader (the app offers a number box for each, the CLI
        ``--option NAME=VALUE``).
    quick : bool
        Loads in milliseconds (the app then loads it in the UI thread).
    replace : bool
        Replace an existing registration of ``name`` (else that is a ValueError).

    Returns
    -------
    ProblemSpec

    Raises
    ------
    ValueError
        Bad name, name already registered (without ``replace=True``), bad ``default_lam``.
    TypeError
        ``loader``, ``model_factory``, ``check``, ``evaluate`` or ``warmup`` is not callable;
        ``options`` is not a dict of ProblemOption; the loader does not accept ``data_home``
        and every declared option as keywords, or requires another argument.
    """
    options = _check_registration(name, loader, model_factory, check, evaluate, warmup, description,
                                  options, replace)
    _check_loader_signature(name, loader, options)
    spec = ProblemSpec(name=name, loader=loader, model_factory=model_factory, default_lam=default_lam,
                       description=description.strip(), bundled=bool(bundled), check=check,
                       metric=str(metric), higher_is_better=bool(higher_is_better),
                       evaluate=evaluate or _default_evaluate, warmup=warmup, options=options,
                       quick=bool(quick))
    lam = spec.lam()  # validates default_lam (at the default options)
    validate.positive(f"register_problem({name!r}): default_lam", lam)
    _REGISTRY[name] = spec
    return spec


def unregister_problem(name: str) -> None:
    """Remove a registration (tests; ValueError listing the registered names if unknown)."""
    get_problem(name)
    del _REGISTRY[name]


def problem_names() -> tuple:
    """The registered names, in registration order (the built-in ones, then the plugins'; see
    :func:`load_plugins`)."""
    load_plugins()
    return tuple(_REGISTRY)


def get_problem(name: str) -> ProblemSpec:
    """The :class:`ProblemSpec` registered as ``name``.

    Raises
    ------
    ValueError
        Unknown name; the message lists the registered problems.
    """
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None and not _PLUGINS["loaded"]:
        load_plugins()
        spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        failed = f" ({len(_PLUGINS['errors'])} plugin(s) failed to load: {_PLUGINS['errors'][0]})" if _PLUGINS["errors"] else ""
        raise ValueError(f"unknown dataset {name!r}; registered problems: {', '.join(_REGISTRY) or 'none'}; "
                         f"{HOW_TO_ADD}{failed}")
    return spec


def load_problem(name: str, data_home=None, **options) -> Problem:
    """``get_problem(name).load(data_home, **options)``."""
    return get_problem(name).load(data_home=data_home, **options)


def model_box(model) -> dict:
    """The box constraints a model needs, as keyword arguments of :class:`~gaplab.core.Solver`:
    ``{"lb": lb, "ub": ub}`` from ``model.bounds()`` (e.g. w_P >= 0 of the segmentation model,
    Paper: App. H), or ``{}`` when the model has none. Every place that builds a Solver for a
    registered problem (``gaplab train/path/grid``, the app, sweeps, warm-up) passes it on."""
    bounds = getattr(model, "bounds", None)
    b = bounds() if callable(bounds) else None
    if b is None:
        return {}
    lb, ub = b
    return {"lb": lb, "ub": ub}


# ----------------------------------------------------------------------------- warm-up
@dataclass(frozen=True)
class WarmupJob:
    """One model class ``gaplab warmup`` compiles, the problems that use it and a tiny instance."""

    model_class: str
    oracle_tier: str
    problems: tuple
    model: Any


def warmup_plan(names=None) -> list:
    """What ``gaplab warmup`` compiles: one :class:`WarmupJob` per distinct (model class, oracle
    tier) among the registered problems that give a ``warmup`` instance (numba compiles per
    model class and array types, which a model class fixes), in registration order. With
    ``names``, those problems only (a quick one without a ``warmup`` instance compiles on its
    own model; ValueError for another one)."""
    jobs: dict = {}
    for n in (problem_names() if names is None else names):
        spec = get_problem(n)
        if spec.warmup is None and (names is None or not spec.quick):
            if names is not None:
                raise ValueError(f"problem {n!r} gives no warmup instance to compile on (register_problem(..., "
                                 "warmup=a function returning a tiny model)) and does not load quickly")
            continue
        model = spec.warmup() if spec.warmup is not None else spec.load().model  # named: a quick problem itself
        key = (type(model).__module__ + "." + type(model).__qualname__, getattr(model, "oracle_tier", "compiled"))
        if key in jobs:
            j = jobs[key]
            jobs[key] = WarmupJob(j.model_class, j.oracle_tier, j.problems + (n,), j.model)
        else:
            jobs[key] = WarmupJob(type(model).__name__, key[1], (n,), model)
    return list(jobs.values())


# ----------------------------------------------------------------------------- plugins
class PluginWarning(UserWarning):
    """A ``gaplab.problems`` entry point failed to load (the others still do)."""


_PLUGINS: dict = {"loaded": False, "errors": []}


def load_plugins() -> list:
    """Load the installed packages' problems (the entry points of :data:`ENTRY_POINT_GROUP`),
    once per process; the registry's readers call it. An entry point's value is a function that
    registers problems (called with no argument) or a module that does so when imported.

    Returns
    -------
    list of str
        One line per entry point that failed (also warned as :class:`PluginWarning`).
    """
    if _PLUGINS["loaded"]:
        return list(_PLUGINS["errors"])
    _PLUGINS["loaded"] = True  # before loading: a plugin that reads the registry must not recurse
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if callable(obj):
                obj()
        except Exception as exc:  # a broken plugin must not take the others (or gaplab) down
            msg = (f"plugin {ep.name!r} ({ep.value}) of the {ENTRY_POINT_GROUP!r} entry points failed: "
                   f"{type(exc).__name__}: {exc}").replace("\n", " ")
            _PLUGINS["errors"].append(msg)
            warnings.warn(msg, PluginWarning, stacklevel=2)
    return list(_PLUGINS["errors"])


def plugin_errors() -> list:
    """The one-line reports of the entry points that failed to load (after :func:`load_plugins`)."""
    return list(_PLUGINS["errors"])


def import_problems(target: str):
    """Import the module that registers a user's problems: a module name (``my_pkg.problems``,
    found on sys.path) or the path of a .py file (its directory is put first on sys.path so it
    can import its neighbours; it is imported as a module named after the file). Returns the module.

    Raises
    ------
    FileNotFoundError
        A .py path that does not exist.
    ValueError
        The import failed (one line naming ``target``, the exception and its message), or a
        different module of the file's name is imported already.
    """
    import importlib
    import importlib.util
    from pathlib import Path
    target = str(target)
    path = Path(target).expanduser()
    is_file = target.endswith(".py") or "/" in target or "\\" in target
    if is_file and not path.is_file():
        raise FileNotFoundError(f"--import {target}: no such file")
    try:
        if not is_file:
            return importlib.import_module(target)
        path = path.resolve()
        name = path.stem
        old = sys.modules.get(name)
        if old is not None:
            if Path(getattr(old, "__file__", "") or "").resolve() == path:
                return old
            raise ValueError(f"--import {target}: a different module named {name!r} is imported already; "
                             "rename the file")
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    except ValueError as exc:
        if str(exc).startswith("--import"):
            raise
        raise ValueError(f"--import {target}: {type(exc).__name__}: {exc}".replace("\n", " ")) from None
    except Exception as exc:
        raise ValueError(f"--import {target}: {type(exc).__name__}: {exc}".replace("\n", " ")) from None


# The built-in problems register themselves with the functions above when this module is imported.
from . import builtin_problems  # noqa: E402,F401
