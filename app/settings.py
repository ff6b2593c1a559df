"""The app's ``param`` parameters, generated from the settings schema
(:func:`gaplab.core.config.settings_schema`) and the problem registry
(:mod:`gaplab.core.problems`), so that a new solver setting or a newly registered problem
appears in the sidebar without editing the app. No Panel import.
"""
from __future__ import annotations

import param

from gaplab.core.config import settings_schema
from gaplab.core.problems import get_problem, problem_names

__all__ = ["app_settings", "solver_parameters", "dataset_parameter", "option_parameter_name",
           "option_parameters", "sync_registry", "installed_problems", "missing_problems"]


def app_settings(groups=("lam", "method", "budget")) -> tuple:
    """The schema settings the app offers (those with an app name), in schema order."""
    return tuple(s for s in settings_schema(groups) if s.app is not None)


def _parameter(s, default=None):
    default = s.default if default is None else default
    kw = dict(label=s.label, doc=s.doc or s.help)
    if s.presets is not None:
        return param.Selector(default=default, objects=dict(s.presets), **kw)
    if s.choices is not None:
        return param.Selector(default=default, objects=list(s.choices), **kw)
    if s.type is bool:
        return param.Boolean(default=bool(default), **kw)
    if s.ui_step is not None:
        kw["step"] = s.ui_step
    if s.type is int:
        return param.Integer(default=int(default), bounds=s.ui_bounds, **kw)
    return param.Number(default=float(default), bounds=s.ui_bounds, **kw)


def solver_parameters() -> dict:
    """``{app name: param.Parameter}`` for every app setting (λ, method settings, pass budget)."""
    return {s.app: _parameter(s) for s in app_settings()}


def installed_problems() -> list:
    """The registered problems whose data loads without a download (the picker offers these)."""
    return [n for n in problem_names() if get_problem(n).installed()]


def missing_problems() -> dict:
    """``{name: install hint}`` of the registered problems whose data is not installed."""
    return {n: get_problem(n).install_hint() for n in problem_names() if not get_problem(n).installed()}


def _dataset_doc(names=None) -> str:
    names = installed_problems() if names is None else names
    return "Training problem: " + "; ".join(f"{n}: {get_problem(n).description}" for n in names)


def dataset_parameter(default: str = "ocr-small") -> param.Selector:
    """The dataset picker: the registered problems whose data is installed (a problem without
    its files is not offered: choosing it could only fail)."""
    names = installed_problems()
    return param.Selector(default=default, objects=names, label="Dataset", doc=_dataset_doc(names))


def option_parameter_name(problem: str, option: str) -> str:
    """Name of the app parameter of a loader option: ``toy`` / ``n`` -> ``toy_n``."""
    return f"{problem}_{option}".replace("-", "_").replace(".", "_")


def option_parameters() -> dict:
    """``{parameter name: (problem, option, param.Integer)}`` for every registered problem's
    loader options (hidden: the session shows them while their problem is chosen)."""
    out = {}
    for n in problem_names():
        for k, o in get_problem(n).options.items():
            p = param.Integer(default=int(o.default), bounds=tuple(o.bounds), label=o.label or f"{n} {k}",
                              doc=o.help or None, precedence=-1)
            out[option_parameter_name(n, k)] = (n, k, p)
    return out


def sync_registry(cls) -> None:
    """Bring a Parameterized class up to date with the registry: the dataset picker lists every
    registered problem and every loader option has its parameter (problems registered after the
    class was made included). Idempotent; call before making an instance."""
    names = installed_problems()
    if list(cls.param.dataset.objects) != names:
        cls.param.dataset.objects = names
        cls.param.dataset.doc = _dataset_doc(names)
    for pname, (_n, _k, p) in option_parameters().items():
        if pname not in cls.param:
            cls.param.add_parameter(pname, p)

