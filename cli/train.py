"""``gaplab train``: one Solver run on a registered problem, with a progress bar, a summary
table and the result as JSON (``--out``); the options shared with ``gaplab path`` and ``gaplab
grid`` (the problem and the method's settings)."""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

__all__ = ["add_solver_arguments", "solver_config_from_args", "add_train_command", "cmd_train"]


def add_solver_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by train / path / grid: the registered problems (--dataset) and the
    "method" settings of SolverConfig (generated: gaplab.cli.options)."""
    from gaplab.cli.options import add_problem_arguments, add_setting_arguments
    add_problem_arguments(p)
    add_setting_arguments(p, ("method",))


def solver_config_from_args(args, **extra):
    from gaplab.cli.options import config_from_args
    return config_from_args(args, groups=("method",), lam=extra.pop("lam", getattr(args, "lam", 0.01)), **extra)


def cmd_train(args) -> int:
    """``gaplab train``: build the Solver, run it under a progress bar, report and write the result.
    Exit 2 with one line on stderr when the run ends ``oracle_not_exact`` (a negative exact gap:
    the summary and ``--out`` are still written, the gap certifies nothing)."""
    problem, solver, load_s = _train_solver(args)
    if problem.info.get("not_iob"):  # conll-file: tags that are not IOB have no chunks
        print(f"gaplab train: note: {problem.info['not_iob']}", file=sys.stderr)
    result, interrupted = _run_with_progress(args, solver)
    if interrupted:
        return _train_interrupted(args, solver, result, problem.model)
    out = _train_output(args, problem, result, load_s)
    if not args.quiet:
        _print_summary(args, problem, result, out)
    if args.out:
        _write_json(args.out, out)
        if not args.quiet:
            print(f"  wrote {args.out}")
    if result.not_exact is not None:  # a negative exact gap: the max oracle is not exact (core.certify)
        print(f"gaplab train: error: {result.not_exact['message']}", file=sys.stderr)
        return 2
    return 0


def _train_solver(args):
    """(problem, Solver, seconds to load and build them) of the command's arguments; bad input
    (an empty or unwritable --out, a run that nothing would stop) is refused before any work."""
    from gaplab.cli.options import check_out_arg, load_problem_from_args
    from gaplab.core import Solver
    from gaplab.core.config import check_run_ends
    from gaplab.core.problems import model_box

    # its progress callback never stops the run, so Solver.run's own check does not apply
    check_out_arg(args.out, "--out")
    check_run_ends(args.max_passes, args.time_limit, args.gap_threshold, args.gap_check)
    t0 = time.perf_counter()
    problem = load_problem_from_args(args)
    model, test = problem.model, problem.test
    if args.lam is None:  # the problem's default λ (OCR, CoNLL: 0.01; toy: 1/n; horse-small: 10)
        args.lam = problem.default_lam
    cfg = solver_config_from_args(args, lam=args.lam, gap_threshold=args.gap_threshold,
                                  max_passes=args.max_passes, time_limit=args.time_limit)
    solver = Solver(model, cfg, test_data=test if args.test_every_check else None, **model_box(model))
    return problem, solver, time.perf_counter() - t0


def _run_with_progress(args, solver):
    """(result, interrupted): the run under a tqdm bar in effective passes (gaps as postfix,
    "compiling" while numba compiles); on Ctrl-C the result so far."""
    from tqdm import tqdm

    from gaplab.core.interrupt import Interrupted
    from gaplab.core.solver import watch_compiles
    bar = tqdm(total=round(args.max_passes, 2) if math.isfinite(args.max_passes) else None, unit="pass", disable=args.quiet or not sys.stderr.isatty() and not args.progress,
               bar_format="{l_bar}{bar}| {n:.1f}/{total} passes [{elapsed}] {postfix}")

    note = _CompileNote(solver, quiet=args.quiet)

    def on_compile(active):  # numba compiles (or loads) the kernels on first use: say so
        bar.set_description_str("compiling" if active else "", refresh=True)
        note.event(active)

    def callback(s, rec):
        bar.n = min(rec["effective_passes"], bar.total) if bar.total is not None else rec["effective_passes"]
        post = {"heur_gap": f"{rec['heuristic_gap']:.2e}"}
        if rec["kind"] == "gap_check":
            post["gap"] = f"{rec['exact_gap']:.2e}"
        bar.set_postfix(post, refresh=False)
        bar.refresh()
        return False

    try:
        with watch_compiles(on_compile):
            result = solver.run(callback=callback)
        interrupted = False
    except Interrupted as exc:  # Ctrl-C: keep the result so far
        result, interrupted = exc.partial, True
    bar.close()
    note.done(result.compile_time_s)
    return result, interrupted


class _CompileNote:
    """Say on stderr that numba is compiling the model kind's kernels when a compile is still
    going after :attr:`AFTER_S` seconds (the first run of a model kind: a minute or more; later
    runs load numba's cache), and how long it took at the end."""

    AFTER_S = 5.0

    def __init__(self, solver, quiet: bool):
        from gaplab.core import kernels as kr
        self.what = f"model kind {kr.model_kind_name(solver.model.arrays)!r} ({type(solver.model).__name__})"
        self.quiet, self.active, self.said, self.timer = quiet, False, False, None

    def event(self, active: bool) -> None:
        self.active = active
        if active and self.timer is None and not self.quiet:
            import threading
            self.timer = threading.Timer(self.AFTER_S, self._say)
            self.timer.daemon = True
            self.timer.start()

    def _say(self) -> None:
        if self.active:
            self.said = True
            print(f"\ngaplab train: compiling the solver's numba kernels for the {self.what}: the first run of a "
                  "model kind compiles for a minute or more (later runs load the cache; `gaplab warmup --dataset "
                  "NAME` compiles ahead)", file=sys.stderr, flush=True)

    def done(self, compile_s: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if (self.said or compile_s >= self.AFTER_S) and not self.quiet:
            print(f"gaplab train: numba compiled the kernels for the {self.what} in {compile_s:.1f} s "
                  "(not counted in the solver time; cached for later runs)", file=sys.stderr)


def _train_output(args, problem, result, load_s) -> dict:
    """The result as the JSON of ``--out``: the Solver's result, the problem, the settings, the
    train/test errors (and the problem's own test metric, e.g. CoNLL's chunk F1)."""
    from gaplab.cli.options import settings_from_args
    spec, model, test = problem.spec, problem.model, problem.test
    train_err = model.error(result.w)
    test_err = model.error(result.w, test) if test is not None else math.nan
    out = result.to_dict()
    out.update({
        "dataset": args.dataset, "lam": args.lam, "n": model.n, "d": model.d,
        "options": problem.options, "config": settings_from_args(args),
        "train_error": train_err, "test_error": test_err, "load_time_s": load_s,
    })
    if spec.metric != "test error" and test is not None:  # e.g. CoNLL: chunk F1 (conlleval)
        value, details = spec.test_metric(model, result.w, test)
        out["test_metric"] = {"name": details.pop("metric", spec.metric), "value": value}
        out.update(details)
    elif spec.metric != "test error" and problem.info.get("metric_on_train"):  # conll-file without --test-file
        value, details = spec.test_metric(model, result.w, model.data)
        out["train_metric"] = {"name": details.pop("metric", spec.metric), "value": value}
        out.update(details)
    return out


def _print_summary(args, problem, result, out) -> None:
    """The summary table on stdout."""
    test = problem.test
    train_err, test_err = out["train_error"], out["test_error"]
    rows = [("status", result.status.name.lower()), ("primal", f"{result.primal:.8f}"),
            ("dual", f"{result.dual:.8f}"), ("exact duality gap", f"{result.exact_gap:.3e}"),
            ("heuristic gap (stale)", f"{result.heuristic_gap:.3e}"),
            ("effective passes", f"{result.effective_passes:.1f}" + _passes_note(result, args.max_passes)),
            ("oracle calls", result.oracle_calls),
            ("cache hits", result.cache_hits), ("solver time (s)", f"{result.wall_time_s:.2f}"),
            ("numba compile (s)", f"{result.compile_time_s:.2f}"),
            ("train error", f"{train_err:.4f}"),
            ("test error", f"{test_err:.4f}" if test is not None else "n/a (no test set)")]
    for where in ("test", "train"):
        if f"{where}_metric" in out:
            m = out[f"{where}_metric"]
            rows.append((f"{where} {m['name']}", f"{100 * m['value']:.2f}"))
            if m["name"] != "token accuracy" and "token_accuracy" in out:  # conll-file reports both
                rows.append((f"{where} token accuracy", f"{100 * out['token_accuracy']:.2f}"))
    width = max(len(r[0]) for r in rows)
    print(f"gaplab train: {args.dataset}, lam={args.lam}, {args.sampling} sampling, {args.step} steps"
          f"{', cache' if args.cache else ''}")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")


def _write_json(path, obj) -> None:
    """JSON (inf/-inf/NaN as "inf"/"-inf"/"nan": :mod:`gaplab.core.jsonsafe`) written atomically: a failed write leaves the old file intact."""
    from gaplab.core.atomic import write_text_atomic
    from gaplab.core.jsonsafe import encode
    text = json.dumps(encode(obj), indent=1, allow_nan=False)
    try:
        write_text_atomic(path, text)
    except OSError as exc:  # a full disk, a lost permission: name the file and the cause (main prints it)
        raise OSError(exc.errno, f"cannot write {path}: {exc.strerror or exc}") from exc


def _passes_note(result, max_passes) -> str:
    """Say why a run reports more effective passes than its budget (the final exact gap pass)."""
    over = result.effective_passes - max_passes
    if over > 1e-9 and result.trace and result.trace[-1]["kind"] == "gap_check":
        return f" (budget {max_passes:g} + the final exact gap pass)"
    return ""


def _train_interrupted(args, solver, result, model) -> int:
    """Ctrl-C during ``gaplab train``: write the result so far (status "interrupted", the last
    exact gap and whether it is the current iterate's, the trace) and exit 130 with one line."""
    out = result.to_dict()
    out.update({"dataset": args.dataset, "lam": args.lam, "n": model.n, "d": model.d,
                "exact_gap_is_current": solver.fresh_exact_gap is not None,
                "config": {"sampling": args.sampling, "step": args.step, "cache": args.cache,
                           "seed": args.seed, "gap_threshold": args.gap_threshold, "max_passes": args.max_passes}})
    where = ""
    if args.out:
        _write_json(args.out, out)
        where = f"; wrote the result so far to {args.out}"
    print(f"gaplab train: interrupted after {result.effective_passes:.1f} effective passes{where}", file=sys.stderr)
    return 130


def add_train_command(sub) -> None:
    """Register ``gaplab train`` on the sub-command parsers ``sub``."""
    from gaplab.cli.options import add_setting_arguments
    p = sub.add_parser("train", help="train an SSVM and report the duality gap")
    add_solver_arguments(p)
    add_setting_arguments(p, ("lam", "budget"), defaults={"lam": None, "gap_threshold": 1e-3, "max_passes": 1000})
    p.add_argument("--test-every-check", action="store_true", help="evaluate test error at every gap check")
    p.add_argument("--out", default=None, help="write the result as JSON here")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")
    p.set_defaults(func=cmd_train)
