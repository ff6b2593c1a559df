"""CLI options generated from the settings schema and the problem registry (used by
``gaplab.cli.train`` and ``gaplab.cli.path``; one place, so that a new :class:`~gaplab.core.SolverConfig`
field or a newly registered problem appears in every command)."""
from __future__ import annotations

import argparse
import math

__all__ = ["check_out_arg", "add_problem_arguments", "add_import_argument", "imports_in_argv", "add_setting_arguments", "config_from_args",
           "problem_options_from_args", "load_problem_from_args", "settings_from_args"]


def check_out_arg(value, flag: str = "--out"):
    """Refuse, before any work, an output option given as an empty string (it would write
    nothing) or naming a path that cannot be written; None (not given) passes."""
    if value is None:
        return None
    from gaplab.core.atomic import check_output_path
    if not str(value).strip():
        raise ValueError(f"{flag} must name a path, got an empty string")
    return check_output_path(value, flag)


def add_problem_arguments(p: argparse.ArgumentParser, default: str = "ocr-small") -> None:
    """``--dataset`` (choices: the registered problems), ``--data-home`` and ``--option``."""
    from gaplab.core.problems import get_problem, problem_names

    names = problem_names()
    lines = [f"{n}: {get_problem(n).description}" for n in names]
    # no argparse choices: an unknown name is refused by get_problem in one line that lists the
    # registered problems and says how to add one
    p.add_argument("--dataset", default=default, metavar="NAME",
                   help="registered problem, one of: " + "; ".join(lines) + f" (default {default})")
    add_import_argument(p)
    p.add_argument("--data-home", default=None,
                   help="directory with the data files of problems that are not bundled (CoNLL-2000 train.txt/test.txt)")
    p.add_argument("--no-verify", dest="verify", action="store_false", default=True,
                   help="do not check the sha256 of the data files (CoNLL-2000) against the known ones, for modified copies")
    p.add_argument("--data-file", default=None, metavar="FILE",
                   help="a CoNLL-style column file to train on (--dataset conll-file): one token a line, "
                        "word [POS] tag, blank lines between sentences, IOB tags for chunk F1")
    p.add_argument("--test-file", default=None, metavar="FILE",
                   help="a column file to test on (--dataset conll-file; same columns as --data-file)")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="an option of the problem's loader (e.g. --option n=50 for toy); repeatable")


def imports_in_argv(argv) -> list:
    """The values of every ``--import MODULE`` / ``--import=MODULE`` in ``argv`` (before ``--``)."""
    out, it = [], iter(argv)
    for a in it:
        if a == "--":
            break
        if a == "--import":
            v = next(it, None)
            if v is None:
                raise ValueError("--import needs a module name or a .py file")
            out.append(v)
        elif a.startswith("--import="):
            out.append(a.split("=", 1)[1])
    return out


def add_import_argument(p: argparse.ArgumentParser) -> None:
    """``--import MODULE`` (repeatable): a module name or a .py file that registers problems;
    :func:`gaplab.cli.entry.main` imports them before it builds the parser, so their problems
    are known to ``--dataset``."""
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import this module (a name on the Python path or a .py file) first: its "
                        "register_problem calls add problems to --dataset; repeatable")


def problem_options_from_args(args) -> dict:
    """``--option NAME=VALUE`` pairs as a dict (values parsed by the problem's option types)."""
    from gaplab.core.problems import get_problem

    spec = get_problem(args.dataset)
    out = {}
    for item in getattr(args, "option", None) or []:
        if "=" not in item:
            raise ValueError(f"--option must be NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return spec.parse_options(out)


def add_setting_arguments(p: argparse.ArgumentParser, groups=("method",), defaults: dict | None = None) -> None:
    """One option per :func:`gaplab.core.config.settings_schema` entry of ``groups``: ``--flag``
    with the field's type and help; booleans as ``--x/--no-x``; enum fields with their names as
    choices; positive fields are checked by the parser. ``defaults`` override the dataclass
    defaults for this command (e.g. ``gaplab train --max-passes`` defaults to 1000)."""
    from gaplab.core.config import settings_schema

    defaults = dict(defaults or {})
    for s in settings_schema(tuple(groups)):
        default = defaults.pop(s.key, s.default)
        kw = {"dest": s.key, "default": default}
        if s.type is bool:
            p.add_argument(s.flag, action=argparse.BooleanOptionalAction, help=s.help, **kw)
            continue
        if s.choices is not None:
            kw["choices"] = list(s.choices)
            kw["type"] = str
        elif s.type is int:
            kw["type"] = int
        else:
            from gaplab.core import validate
            kw["type"] = (validate.arg_type(validate.positive, s.flag, allow_inf=True) if s.positive
                          else validate.arg_type(validate.number, s.flag, allow_inf=True))
        shown = (default if not (isinstance(default, float) and math.isinf(default)) else "none") \
            if default is not None else "the problem's own λ (see --dataset)"
        p.add_argument(s.flag, help=f"{s.help} (default {shown})", **kw)
    if defaults:
        raise ValueError(f"defaults for unknown settings: {', '.join(defaults)}")


def settings_from_args(args, groups=None) -> dict:
    """The schema settings present in ``args`` as a flat dict (``{"sampling": "gap", ...}``)."""
    from gaplab.core.config import settings_schema

    return {s.key: getattr(args, s.key) for s in settings_schema(groups) if hasattr(args, s.key)}


def config_from_args(args, groups=None, **fixed):
    """The :class:`SolverConfig` of the parsed schema options of ``groups`` (default: every
    option present in ``args``); ``fixed`` flat setting values win (``lam=1.0`` for path/grid)."""
    from gaplab.core.config import config_from_settings

    return config_from_settings(settings_from_args(args, groups), **fixed)


def load_problem_from_args(args):
    """The :class:`~gaplab.core.problems.Problem` of ``--dataset``, ``--data-home``, ``--data-file``,
    ``--test-file`` and ``--option``."""
    from gaplab.core.problems import get_problem

    spec = get_problem(args.dataset)
    files = {"data_file": getattr(args, "data_file", None), "test_file": getattr(args, "test_file", None)}
    return spec.load(data_home=getattr(args, "data_home", None), verify=getattr(args, "verify", True),
                     files=files, **problem_options_from_args(args))
