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
    names = args.datasets or None  # --dataset NAME: only these problems' model classes
    specs = [get_problem(name) for name in args.datasets]
    for spec in specs:   # before minutes of compiling: a missing data folder is said at once
        hint = spec.install_hint(args.data_home)
        if hint:
            raise FileNotFoundError(hint)
    plan = warmup_plan(names)
    secs = warmup(names=names)
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
    if not args.classroom:
        for opt, given in (("--allow-heavy", args.allow_heavy), ("--path-root", args.path_root),
                           ("--max-sessions", args.max_sessions is not None),
                           ("--max-sessions-per-client", args.max_sessions_per_client is not None),
                           ("--max-steps", args.max_steps is not None)):
            if given:
                raise ValueError(f"{opt} applies to classroom mode only: add --classroom")
    if args.test_file is not None and args.data_file is None:
        raise ValueError("--test-file needs --data-file FILE (the training file of conll-file)")
    if args.data_file is not None:  # conll-file on the operator's file: offered in the picker
        from gaplab.core.builtin_problems import bind_conll_file
        bind_conll_file(args.data_file, args.test_file)
    return serve(port=args.port, address=args.address, show=args.show, classroom=args.classroom,
                 allow_origins=args.allow_origin, allow_heavy=args.allow_heavy, path_roots=args.path_root,
                 max_sessions=args.max_sessions, max_sessions_per_client=args.max_sessions_per_client,
                 max_steps_per_request=args.max_steps,
                 students_setup={"imports": list(args.imports), "data_file": args.data_file,
                                 "test_file": args.test_file})   # repeated in a students' process


def _count(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {text!r}")
    return v


def _add_app_command(sub) -> None:
    p = sub.add_parser("app", help="serve the Panel app (--classroom: to a class on the network)")
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default=None,
                   help="interface to bind (default 127.0.0.1; with --classroom the machine's network address)")
    p.add_argument("--show", action="store_true", help="open a browser")
    p.add_argument("--classroom", action="store_true",
                   help="serve a class: bind the network address, print the URL students type and limit "
                        "the students' sessions, served by a process of their own at a lower priority; "
                        "the lecturer opens http://127.0.0.1:PORT/ (it shows the students' URL and its QR code)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="HOST[:PORT]",
                   help="also accept pages served under this host name or address (repeatable)")
    p.add_argument("--allow-heavy", action="store_true",
                   help="classroom: students may open conll2000, horse-small and lsp-pose")
    p.add_argument("--path-root", action="append", default=[], metavar="DIR",
                   help="classroom: students may type store paths under DIR (repeatable; default: none)")
    p.add_argument("--max-sessions", type=_count, default=None, metavar="N",
                   help="classroom: student sessions open at once (default 40)")
    p.add_argument("--max-sessions-per-client", type=_count, default=None, metavar="N",
                   help="classroom: sessions per student computer (default 4)")
    p.add_argument("--max-steps", type=_count, default=None, metavar="N",
                   help="classroom: block steps one click or URL of a student may take (default 20,000)")
    p.add_argument("--data-file", default=None, metavar="FILE",
                   help="offer conll-file in the dataset picker, trained on this CoNLL-style column file")
    p.add_argument("--test-file", default=None, metavar="FILE", help="conll-file's test file (with --data-file)")
    from .options import add_import_argument
    add_import_argument(p)
    p.set_defaults(func=cmd_app)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every sub-command. Their modules are imported here, not at import time:
    they import numpy, which :func:`main` imports with Ctrl-C held."""
    from .lesson import add_commands as add_lesson_commands
    from .path import add_commands as add_path_commands
    from .sweep import add_commands as add_sweep_commands
    from .train import add_train_command
    parser = argparse.ArgumentParser(prog="gaplab", description="Block-coordinate Frank-Wolfe for structured SVMs (Osokin et al., ICML 2016)")
    sub = parser.add_subparsers(dest="command", required=True)
    add_train_command(sub)
    p = sub.add_parser("warmup", help="compile (and cache) the numba kernels of every registered problem's "
                                      "model; with --dataset only that problem's, and its data set prepared "
                                      "ahead of a lecture")
    p.add_argument("--dataset", dest="datasets", action="append", default=[], metavar="NAME",
                   help="compile only the model of this registered problem and load it once (repeatable; "
                        "default: every model, no data set), so that what a first load computes is cached: "
                        "horse-small's superpixels and features (minutes, shown with a progress bar)")
    p.add_argument("--data-home", default=None,
                   help="directory with the data files of problems that are not bundled (default: "
                        "$GAPLAB_DATA, then the user cache directory)")
    p.add_argument("--no-verify", dest="verify", action="store_false", default=True,
                   help="do not check the sha256 of the data files against the known ones")
    from .options import add_import_argument
    add_import_argument(p)
    p.set_defaults(func=cmd_warmup)
    _add_app_command(sub)
    add_path_commands(sub)  # gaplab path / gaplab grid
    add_sweep_commands(sub)  # gaplab sweep / gaplab figure
    add_lesson_commands(sub)  # gaplab lesson export
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


def _import_user_modules(argv) -> None:
    """Import the ``--import`` modules before the parser is built (their problems then appear in
    ``--dataset``'s help and are accepted); ValueError / FileNotFoundError in one line."""
    from gaplab.cli.options import imports_in_argv
    from gaplab.core.problems import import_problems
    for target in imports_in_argv(sys.argv[1:] if argv is None else list(argv)):
        import_problems(target)


def _parse_holding_sigint(argv):
    """Build the parser (it imports numpy and the problem registry) and parse ``argv`` with a
    Ctrl-C held until the imports are done: a SIGINT inside a C extension's import (numpy's)
    surfaces as an ImportError traceback instead of a KeyboardInterrupt. The held Ctrl-C is raised
    as KeyboardInterrupt right after. (core.interrupt.held_sigint does the same for the solver,
    but importing gaplab.core imports numpy: the very import this protects.)"""
    import signal
    held = []
    try:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            raise ValueError("SIGINT is ignored (nohup, a background job): it stays so")
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread, or SIGINT ignored: nothing to hold
        _import_user_modules(argv)
        return build_parser().parse_args(argv)
    try:
        _import_user_modules(argv)
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


