"""The ``gaplab`` command: its parser (every sub-command registered here) and :func:`main`,
which turns errors and Ctrl-C into one line on stderr and a non-zero exit."""
from __future__ import annotations

import argparse
import sys

__all__ = ["main", "build_parser"]


def cmd_warmup(args) -> int:
    import time

    from gaplab.core.problems import get_problem, warmup_plan
    from gaplab.core.warmup import warmup
    specs = [get_problem(name) for name in args.dataset]
    for spec in specs:   # before minutes of compiling: a missing data folder is said at once
        hint = spec.install_hint(args.data_home)
        if hint:
            raise FileNotFoundError(hint)
    plan = warmup_plan()
    secs = warmup()
    for job in plan:
        print(f"  {job.model_class} ({job.oracle_tier}): {', '.join(job.problems)}")
    print(f"compiled the numba kernels in {secs:.1f} s (cached for the next start)")
    for spec in specs:   # a first load computes and caches what later loads read (horse: features)
        t0 = time.perf_counter()
        problem = spec.load(data_home=args.data_home, verify=args.verify)
        print(f"{spec.name}: loaded in {time.perf_counter() - t0:.1f} s, n = {problem.n:,} "
              f"(what it computes on a first load is cached for the app and the CLI)", flush=True)
    return 0


def cmd_app(args) -> int:
    from gaplab.app.serve import serve
    return serve(port=args.port, address=args.address, show=args.show)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every sub-command. Their modules are imported here, not at import time:
    they import numpy, which :func:`main` imports with Ctrl-C held."""
    from .path import add_commands as add_path_commands
    from .sweep import add_commands as add_sweep_commands
    from .train import add_train_command
    parser = argparse.ArgumentParser(prog="gaplab", description="Block-coordinate Frank-Wolfe for structured SVMs (Osokin et al., ICML 2016)")
    sub = parser.add_subparsers(dest="command", required=True)
    add_train_command(sub)
    from gaplab.core.problems import problem_names
    p = sub.add_parser("warmup", help="compile (and cache) the numba kernels of every registered problem's "
                                      "model; with --dataset also prepare data sets ahead of a lecture")
    p.add_argument("--dataset", action="append", default=[], choices=problem_names(), metavar="NAME",
                   help="also load this registered problem once (repeatable), so that what a first load "
                        "computes is cached: horse-small's superpixels and features (minutes, shown with "
                        "a progress bar); one of: " + ", ".join(problem_names()))
    p.add_argument("--data-home", default=None,
                   help="directory with the data files of problems that are not bundled (default: "
                        "$GAPLAB_DATA, then the user cache directory)")
    p.add_argument("--no-verify", dest="verify", action="store_false", default=True,
                   help="do not check the sha256 of the data files against the known ones")
    p.set_defaults(func=cmd_warmup)
    p = sub.add_parser("app", help="serve the Panel app")
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--show", action="store_true", help="open a browser")
    p.set_defaults(func=cmd_app)
    add_path_commands(sub)  # gaplab path / gaplab grid
    add_sweep_commands(sub)  # gaplab sweep / gaplab figure
    return parser


def _os_error_text(exc: OSError) -> str:
    """One line naming the cause and the file of an OSError (a full disk, a lost permission)."""
    if exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def _one_line(message) -> str:
    """The error's first line is the cause; a multi-line message's further lines (how to get the
    data, ...) follow indented, so the cause stays one line that a script or a person can read."""
    first, *rest = str(message).strip().splitlines() or [""]
    return "\n".join([first] + ["  " + line for line in rest if line.strip()])


def _parse_holding_sigint(argv):
    """Build the parser (it imports numpy and the problem registry) and parse ``argv`` with a
    Ctrl-C held until the imports are done: a SIGINT inside a C extension's import (numpy's)
    surfaces as an ImportError traceback instead of a KeyboardInterrupt. The held Ctrl-C is raised
    as KeyboardInterrupt right after. (core.interrupt.held_sigint does the same for the solver,
    but importing gaplab.core imports numpy: the very import this protects.)"""
    import signal
    held = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread: nothing to hold
        return build_parser().parse_args(argv)
    try:
        args = build_parser().parse_args(argv)
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt
    return args


def main(argv=None) -> int:
    """Run a command; errors and Ctrl-C give one line on stderr and a non-zero exit: 2 for bad
    input, 1 for a failed system call (a full disk, ...), 130 for Ctrl-C, also while the
    commands are being set up (imports take a moment)."""
    prog = "gaplab"
    try:
        args = _parse_holding_sigint(argv)
        prog = f"gaplab {args.command}"
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. ENOSPC while writing an output: the previous file is intact
        print(f"{prog}: error: {_one_line(_os_error_text(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C outside a run (importing, loading, compiling): one line, no traceback
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


