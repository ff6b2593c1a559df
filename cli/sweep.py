"""``gaplab sweep`` and ``gaplab figure``: experiment sweeps on Dask and their figures (Paper:
Sec. 5, App. J/K). Registered by ``gaplab.cli.build_parser``.

    gaplab sweep benchmarks/specs/ocr_small.toml --store out/ocr_small            # LocalCluster
    gaplab sweep SPEC --store DIR --budget paper --scheduler tcp://host:8786     # a real cluster
    gaplab sweep SPEC --store DIR --dry-run                                       # list the runs
    gaplab figure out/ocr_small --out fig.png          # or .svg (matplotlib) / .html (bokeh)

``sweep`` shows a progress bar over runs and ends with a summary (done, skipped, failed with
their errors); re-running the same command skips finished runs and re-runs failed ones.
"""
from __future__ import annotations

import sys

__all__ = ["add_commands", "cmd_sweep", "cmd_figure"]


def cmd_sweep(args) -> int:
    from gaplab.core.sweep import Store, expand_runs, load_spec, run_sweep
    spec = load_spec(args.spec, budget=args.budget)
    runs = expand_runs(spec)
    if args.dry_run:
        done = set()
        try:
            st = Store(args.store)
            done = {rid for rid in st.manifest["runs"] if st.is_done(rid)}
        except ValueError:
            pass
        todo = [r for r in runs if r["run_id"] not in done]
        print(f"gaplab sweep: spec {spec.name!r} v{spec.version}, budget {spec.budget_name!r}: {len(runs)} runs, "
              f"{len(runs) - len(todo)} done, {len(todo)} to run")
        for r in todo:
            lam = r.get("lam", "")
            print(f"  {r['run_id']}  {r['dataset']:<16} λ={lam!s:<8} {r['method']:<22} seed={r['seed']}")
        return 0
    show = not args.quiet and (sys.stderr.isatty() or args.progress)
    dashboard = None if args.dashboard_address.lower() == "none" else args.dashboard_address
    from gaplab.core.storelock import StoreLockedError
    from gaplab.core.sweep.store import lock_store

    def waiting(holder):
        pid = holder.get("pid")
        print(f"gaplab sweep: waiting for {'pid ' + str(pid) if pid else 'another process'} to finish writing "
              f"{args.store}", file=sys.stderr, flush=True)
    try:
        with lock_store(args.store, wait=args.wait, on_wait=waiting):  # one writer per store
            rep = run_sweep(spec, args.store, workers=args.workers, scheduler=args.scheduler,
                            retries=args.retries, progress=show, dashboard_address=dashboard,
                            connect_timeout=args.connect_timeout, imports=args.imports)
    except StoreLockedError as exc:
        print(f"gaplab sweep: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # scheduler out of reach, disk full: one line; the runs recorded so far are kept
        if exc.errno is None:  # the scheduler did not answer (nothing was run)
            print(f"gaplab sweep: error: {exc}", file=sys.stderr)
            return 1
        cause = exc.strerror or str(exc)
        where = f" {exc.filename}" if exc.filename else f" the store {args.store}"
        print(f"gaplab sweep: error: cannot write{where}: {cause}; the runs recorded in {args.store} are kept "
              "(free space, then run the same command to continue)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: every finished run is already in the store (atomically)
        try:
            st = Store(args.store)
            done = sum(st.is_done(r["run_id"]) for r in runs)
            kept = f"; {done} of {len(runs)} runs are done in {args.store} (run the same command to continue)"
        except (ValueError, OSError):
            kept = ""
        print(f"gaplab sweep: interrupted{kept}", file=sys.stderr)
        return 130
    if not args.quiet:
        print(f"gaplab sweep: spec {spec.name!r} v{spec.version}, budget {spec.budget_name!r} -> {args.store}")
        print(f"  runs {rep.total}: {rep.skipped} already done, {rep.done} done now, {rep.failed} failed "
              f"({rep.submitted} tasks, {rep.retried} retries) on {rep.workers} worker(s) in {rep.elapsed_s:.1f} s")
        for rid, msg in rep.bad_files.items():
            print(f"  recomputed {rid}: {msg}")
        for rid, msg in rep.failures.items():
            print(f"  failed {rid}: {msg}")
    return 1 if rep.failed else 0


def cmd_figure(args) -> int:
    from gaplab import plots
    plots.check_figure_path(args.out)  # an unwritable --out is refused before the figure is drawn
    kw = {}
    if args.dataset:
        kw["datasets"] = args.dataset
    if args.method:
        kw["methods"] = args.method
    if args.lam:
        if args.kind not in ("auto", "comparison", "convergence"):
            raise ValueError("--lam selects panels of the convergence figures only")
        kw["lams"] = [v if v == "1/n" else float(v) for v in args.lam]
    if args.kind == "convergence":
        kw["x"] = args.x
    fig = plots.figure(args.store, kind=args.kind, **kw)
    out = plots.save(fig, args.out)
    if not args.quiet:
        print(f"gaplab figure: wrote {out}")
    return 0


def add_commands(sub) -> None:
    from gaplab.core import validate
    from gaplab.core.validate import arg_type
    p = sub.add_parser("sweep", help="run an experiment spec (TOML) on Dask into a resumable store")
    p.add_argument("spec", help="the spec file (TOML; see benchmarks/specs/)")
    p.add_argument("--store", required=True, help="store directory (created; re-running resumes)")
    p.add_argument("--budget", default=None, help="which [budgets.NAME] of the spec (default: laptop)")
    p.add_argument("--workers", type=arg_type(validate.int_at_least, "--workers", 0, parse=int), default=None,
                   help="worker processes of the local cluster (default: CPU count; 0: serial, in this process)")
    p.add_argument("--scheduler", default=None,
                   help="address of a running Dask scheduler (tcp://host:port, or tls://host:port with "
                        "distributed's TLS settings; see the README)")
    p.add_argument("--connect-timeout", type=arg_type(validate.positive, "--connect-timeout"), default=30.0, metavar="SECONDS",
                   help="how long to wait for --scheduler (default 30)")
    p.add_argument("--dashboard-address", default="127.0.0.1:0", metavar="HOST:PORT",
                   help="where the local cluster's Dask dashboard listens (default 127.0.0.1:0: this machine "
                        "only, any free port; 0.0.0.0:8787 exposes it to the network; none: no dashboard)")
    p.add_argument("--retries", type=arg_type(validate.int_at_least, "--retries", 0, parse=int), default=1, help="extra attempts of a failed run (default 1)")
    p.add_argument("--dry-run", action="store_true", help="list the runs still to do and exit")
    p.add_argument("--wait", action="store_true",
                   help="if another gaplab process writes to --store, wait for it to finish (default: stop with "
                        "an error naming its pid)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")
    from .options import add_import_argument
    add_import_argument(p)  # imported here and in every worker process (run_sweep's imports)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("figure", help="the comparison figures of a sweep store (PNG/SVG/HTML)")
    p.add_argument("store", help="store directory written by gaplab sweep")
    p.add_argument("--out", required=True, help="output file: .png or .svg (matplotlib) or .html (bokeh)")
    p.add_argument("--kind", default="auto", choices=["auto", "comparison", "convergence", "kappa", "path-grid"])
    p.add_argument("--x", default="passes", choices=["passes", "time"], help="x axis of --kind convergence")
    p.add_argument("--dataset", action="append", help="only this dataset (repeatable)")
    p.add_argument("--lam", action="append", help="only this λ (repeatable)")
    p.add_argument("--method", action="append", help="only this method (repeatable)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_figure)
