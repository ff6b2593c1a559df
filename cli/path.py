"""``gaplab path`` and ``gaplab grid``: the regularization path (Paper: Sec. 4, Alg. 6-7, App. K)
and grid search over λ from the command line. Registered by ``gaplab.cli.build_parser``.

    gaplab path --dataset ocr-small --eps 0.1 --kappa 0.9 --lam-min 3e-5 --out path.npz
    gaplab path --dataset ocr-small --heuristic            # κ = 0.7 by default then
    gaplab grid --dataset ocr-small --warm-start primal --out grid.npz   # 2^15 .. 2^-15
    gaplab path --dataset conll2000 --store conll_path/   # each breakpoint written as certified

Both print one table row per breakpoint / grid point as it is computed, under a progress bar
(in log λ), then a summary; ``--out`` saves the path with ``RegPath.save`` (npz, no pickle),
``--store DIR`` streams every breakpoint to an on-disk path store as soon as it is certified
(bounded memory: large d such as CoNLL; read it back with ``RegPath.open(DIR)``), and ``--json``
writes the summary and the rows.
"""
from __future__ import annotations

import math
import errno
import sys
import time

import numpy as np

from gaplab.cli.train import add_solver_arguments, solver_config_from_args

__all__ = ["add_commands", "cmd_path", "cmd_grid"]

HEADER = ("    j", "  lambda", "   rho", " passes", " cum.passes", " time(s)", " cum.time(s)", "     gap",
          " test err", "  status")


def _fmt_row(p) -> str:
    rho = "" if math.isnan(p.rho) else f"{p.rho:.4f}"
    te = "" if math.isnan(p.test_error) else f"{p.test_error:.4f}"
    status = p.status + (f" [end: {p.end}]" if p.end else "")
    return (f"{p.index:5d} {p.lam:8.3g} {rho:>6} {p.passes:7.1f} {p.cum_passes:11.1f} {p.time_s:8.3f} "
            f"{p.cum_time_s:12.2f} {p.gap:8.2e} {te:>9}  {status}")


def _header() -> str:
    return " ".join(h.strip().rjust(len(h)) for h in HEADER)


def _lams(text):
    """--lams: comma-separated numbers (2^k allowed); ValueError naming the bad one (one line)."""
    if text is None:
        return None
    vals = []
    for t in text.split(","):
        if not t.strip():
            continue
        try:
            vals.append(float(eval_pow(t)))
        except ValueError:
            raise ValueError(f"--lams: expected comma-separated numbers (2^k allowed), got {t.strip()!r}") from None
        except OverflowError:
            raise ValueError(f"--lams: λ = {t.strip()} is too large for a float (the solver takes λ in "
                             "[1e-100, 1e100])") from None
    return vals


#: one breakpoint's w from this size on (d >= 2^20: CoNLL-2000's d is in the millions) makes a
#: path stream to a path store unless --store or --in-memory says otherwise: tens of breakpoints
#: would otherwise take gigabytes of memory
LARGE_W_BYTES = 8 * 2 ** 20


def _default_store(args) -> str:
    """The path store a large path streams to when no --store is given: next to --out
    (``p.npz`` -> ``p.store``), else ``<dataset>_path.store`` in the working directory."""
    from pathlib import Path
    if args.out:
        out = Path(args.out)
        return str(out.with_name((out.name[:-4] if out.name.endswith(".npz") else out.name) + ".store"))
    return f"{args.dataset}_{'grid' if args.command == 'grid' else 'path'}.store"


def _stream_large(args, d: int) -> None:
    """A path / grid whose breakpoints would not fit in memory streams to a path store by default
    (said up front, before any work); --in-memory keeps the old behaviour."""
    if args.store or getattr(args, "in_memory", False) or 8 * d < LARGE_W_BYTES:
        return
    store = _default_store(args)
    out, args.store, args.out = args.out, store, None
    _check_outputs(args)
    if not args.quiet:
        instead = " instead of keeping them in memory" + (f" and writing {out}" if out else "")
        print(f"gaplab {args.command}: d = {d:,}: every point's w takes {8 * d / 2**20:.0f} MB, so the points stream "
              f"to the path store {store}/{instead} (RegPath.open and --resume read it; --store DIR to choose "
              "the directory, --in-memory to keep them in memory)", flush=True)


def _check_outputs(args) -> None:
    """Refuse empty or unwritable --out / --store / --json before any work (exit 2 through the
    ValueError)."""
    from gaplab.cli.options import check_out_arg
    from gaplab.core.atomic import check_output_path, npz_path
    for flag in ("out", "store", "json"):  # "" would write nothing and still exit 0
        if getattr(args, flag, None) is not None and not str(getattr(args, flag)).strip():
            check_out_arg(getattr(args, flag), f"--{flag}")
    if args.out:
        check_output_path(npz_path(args.out), "--out")
    store = getattr(args, "store", None)
    if store:
        from pathlib import Path
        sp = Path(store)
        if sp.exists() and not sp.is_dir():
            raise ValueError(f"--store {store!r} exists and is not a directory")
        _check_store_dir(store)
        if getattr(args, "lock_stack", None) is not None:
            _lock_store(args, args.lock_stack, store)  # before reading it: another writer may be filling it
        if (sp / "manifest.json").exists() and not getattr(args, "overwrite", False) \
                and not getattr(args, "resume", None):
            raise ValueError(f"--store {store!r} already holds a path; give another directory or --overwrite")
    if args.json:
        check_output_path(args.json, "--json")


def _check_store_dir(store) -> None:
    """--store must be a directory gaplab can write in (or one it can create): a ValueError
    naming the store otherwise (exit 2, before any work)."""
    import os
    import tempfile
    from pathlib import Path
    sp = Path(store)
    where = sp if sp.is_dir() else next((p for p in sp.parents if p.is_dir()), Path("."))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gaplab-", suffix=".check", dir=where)
    except OSError as exc:
        what = "write in it" if where == sp else f"create it in {str(where)!r}"
        raise ValueError(f"--store {store!r}: cannot {what} ({exc.strerror or exc}); give a writable "
                         "directory") from None
    os.close(fd)
    os.unlink(tmp)


def _lock_store(args, stack, store) -> None:
    """Take the writer lock of the path store ``store`` now (before loading data) and hold it in
    ``stack`` until the command ends: a second writer stops at once with one line naming the
    holder's pid (exit 1), or waits with --wait."""
    if not store:
        return
    from pathlib import Path

    from gaplab.core.storelock import store_lock
    if not Path(store).is_dir() and getattr(args, "resume", None):
        return  # a single-file path: no store to lock

    def waiting(holder):
        pid = holder.get("pid")
        print(f"gaplab {args.command}: waiting for {'pid ' + str(pid) if pid else 'another process'} to finish "
              f"writing {store}", file=sys.stderr, flush=True)
    stack.enter_context(store_lock(store, what="path store", wait=args.wait, on_wait=waiting))


def _write_outputs(args, result, summary) -> list:
    """Save the path (with its solver state when resumable) and the JSON; the files written."""
    from gaplab.cli.train import _write_json
    written = []
    if args.out:
        written.append(str(result.save(args.out)))
    if args.json:
        _write_json(args.json, {"summary": summary, "meta": result.meta, "rows": result.rows()})
        written.append(str(args.json))
    return written


def _interrupted(args, what: str, exc) -> int:
    """Ctrl-C during a path / grid: write the finished points, one line, exit 130."""
    result = exc.partial
    written = _write_outputs(args, result, result.summary()) if result is not None else []
    hint = ""
    if result is not None and result.store is not None:
        written.insert(0, f"{result.store}/ ({len(result)} points)")
        if what == "path" and "resume_state" in _manifest_keys(result.store):
            hint = f"; continue with: gaplab path --resume {result.store}"
    elif written and args.out and getattr(result, "resume_solver", None) is not None:
        hint = f"; continue with: gaplab path --resume {written[0]}"
    print(f"gaplab {what}: interrupted after {len(result) if result is not None else 0} points"
          + (f"; wrote {', '.join(written)}" if written else "") + hint, file=sys.stderr)
    return 130


#: errno values of a full disk or quota
_NO_SPACE = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT") if hasattr(errno, n))


def _write_failed(args, what: str, exc: OSError, store) -> int:
    """A file could not be written (disk full, quota, I/O error): one line naming the cause and
    what the store (if any) keeps, exit 1. Every output is written atomically, so older files
    are intact and nothing is half-written."""
    cause = exc.strerror if isinstance(exc.strerror, str) else (str(exc) or type(exc).__name__)
    target = f" {exc.filename}" if exc.filename else ""
    kept = ""
    if store is not None:
        from gaplab.core.regpath import PathStoreError
        from gaplab.core.regpath import RegPath
        try:
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                saved = RegPath.open(store)
            kept = f"; {store} keeps {len(saved)} certified points"
            if what == "path" and "resume_state" in saved.meta:
                kept += f" (free space, then continue with: gaplab path --resume {store})"
            elif what == "path" and exc.errno in _NO_SPACE and not (len(saved) and saved.rows()[-1]["end"]):
                # the disk had no room even for the solver state (larger than a breakpoint)
                kept += " but not the solver state (no room for it), so --resume cannot continue it: free space and run the path again"
        except (OSError, PathStoreError):
            pass
    print(f"gaplab {what}: error: cannot write{target}: {cause}{kept}", file=sys.stderr)
    return 1


def _manifest_keys(store) -> set:
    from gaplab.core.regpath.store import read_manifest
    try:
        return set(read_manifest(store))
    except (OSError, ValueError):
        return set()


def eval_pow(token: str) -> float:
    """'0.5', '2^-3' or '2**-3' -> float."""
    t = token.strip().replace("**", "^")
    if "^" in t:
        base, exp = t.split("^", 1)
        return float(base) ** float(exp)
    return float(t)


def _common(p):
    from gaplab.core import validate
    from gaplab.core.regpath import path_defaults
    from gaplab.core.validate import arg_type

    d = path_defaults()
    p.add_argument("--eps", type=arg_type(validate.positive, "--eps"), default=d["eps"],
                   help=f"ε: target duality gap (default {d['eps']:g})")
    p.add_argument("--time-limit", type=arg_type(validate.positive, "--time-limit", allow_inf=True),
                   default=d["time_limit"], help="budget in seconds (default none)")
    p.add_argument("--check-every", type=arg_type(validate.positive, "--check-every"), default=d["check_every"],
                   help=f"passes between looks at the stale gap sum (default {d['check_every']:g})")
    p.add_argument("--check-factor", type=arg_type(validate.positive, "--check-factor"), default=d["check_factor"],
                   help="run the exact gap pass once the stale gap sum is <= this factor times the target "
                        f"(default {d['check_factor']:g}, the authors' choice; 1: at the target)")
    p.add_argument("--no-test-error", dest="test_error", action="store_false", default=True,
                   help="skip the test error of each point")
    p.add_argument("--out", default=None, help="save the path/grid here (.npz, no pickle)")
    p.add_argument("--store", default=None, metavar="DIR",
                   help="stream every point to this path-store directory as soon as it is computed "
                        "(one compressed file per breakpoint + a JSON manifest; bounded memory)")
    p.add_argument("--overwrite", action="store_true", help="replace a path already in --store")
    p.add_argument("--wait", action="store_true",
                   help="if another gaplab process writes to the store, wait for it to finish (default: stop "
                        "with an error naming its pid)")
    p.add_argument("--store-compress", action="store_true",
                   help="also deflate the weights' values in --store (about half the size on CoNLL, slower writes)")
    p.add_argument("--in-memory", action="store_true",
                   help="keep every point's w in memory and write --out even when w is large (by default a path "
                        "whose w takes >= 8 MB, e.g. CoNLL-2000, streams to a path store: --out's name with .store)")
    p.add_argument("--json", default=None, help="write the summary and the rows as JSON here")
    p.add_argument("--every", type=arg_type(validate.int_at_least, "--every", 1, parse=int), default=1, help="print every N-th row (default 1)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")


def add_commands(sub) -> None:
    from gaplab.core import validate
    from gaplab.core.regpath import HEURISTIC_KAPPA, path_defaults
    from gaplab.core.validate import arg_type

    d = path_defaults()
    p = sub.add_parser("path", help="ε-approximate (or heuristic) regularization path (Alg. 6-7)")
    add_solver_arguments(p)
    _common(p)
    p.add_argument("--kappa", type=arg_type(validate.positive, "--kappa"), default=None,
                   help=f"κ in (0,1): solve to κε at each breakpoint (default {d['kappa']:g}; {HEURISTIC_KAPPA:g} with "
                        "--heuristic)")
    p.add_argument("--lam-min", type=arg_type(validate.positive, "--lam-min"), default=d["lam_min"],
                   help=f"smallest λ to cover (default {d['lam_min']:g})")
    p.add_argument("--heuristic", action="store_true", help="stop the solver on stale gaps (heuristic path)")
    p.add_argument("--true-gaps", action="store_true",
                   help="also compute exact gaps where the algorithm does not need them (untimed)")
    p.add_argument("--breakpoint-batch-step", action="store_true",
                   help="free batch FW step at each new breakpoint (oracle answers of the last gap pass)")
    p.add_argument("--max-passes-per-breakpoint",
                   type=arg_type(validate.positive, "--max-passes-per-breakpoint", allow_inf=True),
                   default=d["max_passes_per_breakpoint"])
    p.add_argument("--checkpoint-every", type=arg_type(validate.int_at_least, "--checkpoint-every", 0, parse=int), default=0, metavar="N",
                   help="save the path so far with its solver state to --out every N breakpoints "
                        "(resumable with --resume; default 0: only on Ctrl-C)")
    p.add_argument("--resume", default=None, metavar="FILE",
                   help="continue the interrupted or checkpointed path in FILE (its saved settings are used; "
                        "the result goes to --out, default FILE)")
    p.set_defaults(func=cmd_path)

    p = sub.add_parser("grid", help="grid search over λ with or without warm start")
    add_solver_arguments(p)
    _common(p)
    p.add_argument("--lams", default=None,
                   help="decreasing comma-separated λ values (2^k allowed); default 2^15,...,2^-15")
    p.add_argument("--warm-start", default="primal", choices=["none", "primal", "dual"],
                   help="none | primal (keep w, rescale α: Prop. 1) | dual (keep α) (default primal)")
    p.add_argument("--max-passes-per-point",
                   type=arg_type(validate.positive, "--max-passes-per-point", allow_inf=True),
                   default=d["max_passes_per_breakpoint"])
    p.add_argument("--batch-step-warm", action="store_true",
                   help="free batch FW step after each keep-primal warm start")
    p.set_defaults(func=cmd_grid)


class _Printer:
    """Rows through tqdm.write under a bar in log λ (or plain prints without a bar)."""

    def __init__(self, args, lam_lo):
        self.args = args
        self.lam_lo = lam_lo
        self.bar = None
        self.lam0 = None
        self.count = 0

    def __call__(self, point):
        args = self.args
        if args.quiet:
            return False
        if self.lam0 is None:
            from tqdm import tqdm
            self.lam0 = point.lam
            total = max(math.log2(self.lam0 / self.lam_lo), 1e-9) if self.lam_lo > 0 else 1.0
            enabled = args.progress or sys.stderr.isatty()
            self.bar = tqdm(total=round(total, 2), unit="log2 λ", disable=not enabled,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total} log2(λ) [{elapsed}] {postfix}")
            self._write(_header())
        if self.count % max(args.every, 1) == 0 or point.end:
            self._write(_fmt_row(point))
        self.count += 1
        if self.bar is not None:
            self.bar.n = min(max(math.log2(self.lam0 / point.lam), 0.0), self.bar.total)
            self.bar.set_postfix({"passes": f"{point.cum_passes:.0f}", "gap": f"{point.gap:.2e}"}, refresh=False)
            self.bar.refresh()
        return False

    def _write(self, text):
        if self.bar is not None and not self.bar.disable:
            self.bar.write(text)
        else:
            print(text, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _finish(args, result, what: str, extra: dict) -> int:
    summary = result.summary()
    summary.update(extra)
    te = result.column("test_error") if len(result) else []
    if len(result) and any(math.isfinite(v) for v in te):
        b = result.best("test_error")
        summary["best_test_error"] = {"lam": b.lam, "test_error": b.test_error, "index": b.index}
    tm = result.column("test_metric") if len(result) else []
    info = result.meta.get("test_metric")
    if isinstance(info, dict) and any(math.isfinite(v) for v in tm):
        vals = np.asarray(tm, dtype=np.float64)
        j = int(np.nanargmax(vals) if info.get("higher_is_better", True) else np.nanargmin(vals))
        summary["best_test_metric"] = {"name": info.get("name", "test metric"), "lam": float(result.lams[j]),
                                       "value": float(vals[j]), "index": j}
    if not args.quiet:
        print(f"{what}: {summary['points']} points, λ {summary['lam_first']:.4g} -> {summary['lam_last']:.4g}"
              if len(result) else f"{what}: no point computed")
        if result.kind != "grid":
            print(f"  end of path: {result.end_reason}; w_at(λ) covers λ >= {result.lam_end:.4g}")
        else:
            print(f"  end of grid search: {result.end_reason}; certified points: {summary['certified']}")
        print(f"  total effective passes {result.total_passes:.1f}, total time {result.total_time_s:.2f} s")
        if "best_test_error" in summary:
            b = summary["best_test_error"]
            print(f"  best test error {b['test_error']:.4f} at λ = {b['lam']:.4g}")
        if "best_test_metric" in summary:
            b = summary["best_test_metric"]
            print(f"  best test {b['name']} {100 * b['value']:.2f} at λ = {b['lam']:.4g}")
    if result.store is not None and not args.quiet:
        io = result.io_stats
        print(f"  streamed {len(result)} points to the path store {result.store}/ "
              f"({io['bytes_written'] / 2**20:.1f} MB written in {io['io_time_s']:.2f} s)")
    for f in _write_outputs(args, result, summary):
        if not args.quiet:
            print(f"  wrote {f}")
    bad = [p for p in result.rows() if p["status"] == "oracle_not_exact"] if len(result) else []
    if bad:  # a negative exact gap: the max oracle is not exact, those points certify nothing
        print(f"{what}: error: the max oracle is not exact: {len(bad)} point(s) have an exact duality gap below 0 "
              f"(first at λ = {bad[0]['lam']:.4g}, gap {bad[0]['gap']:.3g}), not certified; check the oracle "
              "with check_model", file=sys.stderr)
        return 2
    return 0


def _load_model(args):
    """(model of the training set, test set, seconds spent loading, the problem's headline test
    metric to record per breakpoint or None, the loader options) for --dataset (registry)."""
    from gaplab.cli.options import load_problem_from_args

    t0 = time.perf_counter()
    problem = load_problem_from_args(args)
    metric = problem.spec.path_metric(problem.model, problem.test) if args.test_error else None
    return problem.model, problem.test, time.perf_counter() - t0, metric, dict(problem.options)


def _holding_store_lock(cmd):
    """``cmd(args)`` with an ExitStack (``args.lock_stack``) that holds the store's writer lock
    (taken by :func:`_check_outputs`) until the command ends."""
    import contextlib
    import functools

    @functools.wraps(cmd)
    def run(args) -> int:
        with contextlib.ExitStack() as stack:
            args.lock_stack = stack
            return cmd(args)
    return run


@_holding_store_lock
def cmd_path(args) -> int:
    from gaplab.core.regpath import HEURISTIC_KAPPA, PathConfig, path_defaults, regularization_path

    if args.checkpoint_every and not (args.out or args.store or args.resume):
        raise ValueError("--checkpoint-every needs --out or --store (where the checkpoints go)")
    if args.resume:
        return _resume(args)
    _check_outputs(args)
    kappa = args.kappa if args.kappa is not None else (HEURISTIC_KAPPA if args.heuristic
                                                       else path_defaults()["kappa"])
    cfg = PathConfig(eps=args.eps, kappa=kappa, lam_min=args.lam_min, heuristic=args.heuristic,
                     max_passes_per_breakpoint=args.max_passes_per_breakpoint, time_limit=args.time_limit,
                     true_gaps=args.true_gaps, check_every=args.check_every, check_factor=args.check_factor,
                     batch_step=args.breakpoint_batch_step)
    scfg = solver_config_from_args(args, lam=1.0)
    model, test, load_s, metric, options = _load_model(args)
    _stream_large(args, int(model.d))
    if not args.quiet:
        kind = "heuristic" if cfg.heuristic else "ε-approximate"
        print(f"gaplab path: {args.dataset} (n={model.n}, d={model.d}), {kind} path, ε={cfg.eps}, κ={cfg.kappa}, "
              f"λ_min={cfg.lam_min:.3g}; solver {args.sampling} sampling, {args.step} steps"
              f"{', cache' if args.cache else ''}")
    printer = _Printer(args, cfg.lam_min)
    return _run_and_finish(args, "path", printer, lambda: regularization_path(
        model, cfg, scfg, test_data=test if args.test_error else None, callback=printer,
        meta={"dataset": args.dataset, "options": options}, checkpoint_every=args.checkpoint_every,
        checkpoint_file=args.out if args.checkpoint_every else None, store=args.store, overwrite=args.overwrite,
        store_compress=args.store_compress, test_metric=metric), {"dataset": args.dataset, "load_time_s": load_s},
        args.store)


def _run_and_finish(args, what: str, printer, run, summary: dict, store) -> int:
    """Run the path or grid (``run()``), close the progress display whatever happens, then write
    the outputs: Ctrl-C saves what was computed (exit 130), a failed write names the file
    (``store``: the path store written to, or None)."""
    from gaplab.core.interrupt import Interrupted
    from gaplab.core.storelock import StoreLockedError

    try:
        result = run()
    except StoreLockedError:
        raise  # one line from main (exit 1)
    except Interrupted as exc:
        printer.close()
        return _interrupted(args, what, exc)
    except OSError as exc:
        printer.close()
        return _write_failed(args, what, exc, store)
    finally:
        printer.close()
    try:
        return _finish(args, result, f"gaplab {what}", summary)
    except OSError as exc:
        return _write_failed(args, what, exc, store)


def _resume(args) -> int:
    """``gaplab path --resume FILE``: continue a saved path with the settings saved in FILE."""
    from gaplab.core.problems import get_problem, problem_names
    from gaplab.core.regpath import RegPath, resume_path

    import warnings

    from gaplab.core.regpath.store import PathStoreWarning
    _lock_store(args, args.lock_stack, args.resume)  # before reading: another writer may be continuing it
    with warnings.catch_warnings(record=True) as caught:  # a damaged store: its valid prefix, said in one line
        warnings.simplefilter("always", PathStoreWarning)
        saved = RegPath.open(args.resume)  # a clear PathFileError / PathStoreError (exit 2), before any work
    for w in caught:
        if issubclass(w.category, PathStoreWarning):
            print(f"gaplab path: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    dataset = saved.meta.get("dataset")
    if dataset not in problem_names():
        raise ValueError(f"{args.resume}: unknown dataset {dataset!r} in the path file; registered problems: "
                         f"{', '.join(problem_names())}")
    streamed = saved.store is not None
    if not args.out and not streamed:
        args.out = args.resume
    args.store = None  # a store is continued in place
    _check_outputs(args)
    options = saved.meta.get("options") or {}  # the loader options of the saved path (--option)
    if not isinstance(options, dict):
        raise ValueError(f"{args.resume}: the path file's loader options must be a mapping, got {options!r}")
    try:
        get_problem(dataset).parse_options(options)
    except (ValueError, TypeError) as exc:  # a tampered or foreign file: name it, before loading any data
        raise ValueError(f"{args.resume}: the path file's loader options: {exc}") from None
    problem = get_problem(dataset).load(data_home=args.data_home, verify=args.verify, **options)
    model, test = problem.model, problem.test
    metric = problem.spec.path_metric(model, test) if args.test_error else None
    if not args.quiet:
        print(f"gaplab path: resuming {args.resume} ({len(saved)} breakpoints, λ down to {saved.lams[-1]:.4g}) "
              f"on {dataset}")
    lam_min = float(saved.meta.get("path_config", {}).get("lam_min", args.lam_min))
    printer = _Printer(args, lam_min)

    def run():
        with warnings.catch_warnings():  # said above
            warnings.simplefilter("ignore", PathStoreWarning)
            return resume_path(args.resume, model, test_data=test if args.test_error else None, callback=printer,
                               test_metric=metric, checkpoint_every=args.checkpoint_every,
                               checkpoint_file=(args.out or args.resume) if args.checkpoint_every else None)

    return _run_and_finish(args, "path", printer, run, {"dataset": dataset, "resumed_from": str(args.resume)},
                           store=args.resume if streamed else None)


@_holding_store_lock
def cmd_grid(args) -> int:
    from gaplab.core.regpath.grid import _check_grid, grid_search

    _check_outputs(args)
    lams = _check_grid(_lams(args.lams))
    scfg = solver_config_from_args(args, lam=1.0)
    model, test, load_s, metric, options = _load_model(args)
    _stream_large(args, int(model.d))
    if not args.quiet:
        print(f"gaplab grid: {args.dataset} (n={model.n}, d={model.d}), {lams.size} values of λ "
              f"{lams[0]:.4g} -> {lams[-1]:.4g}, ε={args.eps}, warm start: {args.warm_start}; solver "
              f"{args.sampling} sampling, {args.step} steps{', cache' if args.cache else ''}")
    printer = _Printer(args, float(lams[-1]))
    return _run_and_finish(args, "grid", printer, lambda: grid_search(
        model, lams, eps=args.eps, warm_start=args.warm_start, solver_config=scfg,
        test_data=test if args.test_error else None, max_passes_per_point=args.max_passes_per_point,
        time_limit=args.time_limit, check_every=args.check_every, check_factor=args.check_factor,
        batch_step=args.batch_step_warm, callback=printer, meta={"dataset": args.dataset, "options": options},
        store=args.store, overwrite=args.overwrite, store_compress=args.store_compress, test_metric=metric),
        {"dataset": args.dataset, "load_time_s": load_s, "warm_start": args.warm_start}, args.store)
