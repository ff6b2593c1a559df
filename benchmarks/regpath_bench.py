"""Regularization path vs grid search (Paper: App. K, Fig. 7 and 8; Sec. 5, Fig. 4).

For each data set: the ε-approximate path (ε = 0.1, κ = 0.9), the heuristic path (κ = 0.7), grid
search over 2^15, ..., 2^-15 without warm start, with keep-primal and with keep-dual warm start.
Cumulative time and cumulative effective passes vs λ go to PNG, every number to JSON
(benchmarks/out/); --save-paths also writes every path/grid as npz.

    python benchmarks/regpath_bench.py                       # OCR-small, whole range
    python benchmarks/regpath_bench.py --large --large-budget 300   # + OCR-large, 300 s per method
    python benchmarks/regpath_bench.py --kappa-sweep         # + Fig. 7 (κ) on OCR-small
    python benchmarks/regpath_bench.py --solver bcpfw-cache  # BCPFW + gap sampling + cache
    python benchmarks/regpath_bench.py --solver bcfw-perm --methods eps_path,grid_primal  # other samplers
    # Fig. 8 on OCR-small, OCR-large and CoNLL-2000 with a machine-sized budget:
    python benchmarks/regpath_bench.py --small-budget 90 --large --large-budget 150 --conll \
        --conll-budget 300 --methods eps_path,heuristic_path,grid_none,grid_primal --out benchmarks/results \
        --tag _fig8

On CoNLL (d = 7.4 M) every method streams its points to an on-disk path store (a temporary
directory, removed at the end) instead of keeping W in memory, and the test F1 is not computed.

Timings are wall-clock seconds of each method's own work (test error evaluation excluded), run
one after the other on one core; use --repeats to take the best of several runs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from gaplab.core.atomic import save_figure, write_text_atomic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import path_result_summary  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SOLVERS = {
    "bcfw-gap": dict(step="fw", sampling="gap"),
    "bcpfw-cache": dict(step="pairwise", sampling="gap", cache=dict(enabled=True)),
    # other samplers inside the path and the grid (same solver for both)
    "bcfw-uniform": dict(step="fw", sampling="uniform"),
    "bcfw-perm": dict(step="fw", sampling="permutation"),
    "bcpfw-perm-cache": dict(step="pairwise", sampling="permutation", cache=dict(enabled=True)),
}


def _solver_config(name):
    from gaplab.core import CacheConfig, SolverConfig
    kw = dict(SOLVERS[name])
    if "cache" in kw:
        kw["cache"] = CacheConfig(**kw["cache"])
    return SolverConfig(**kw)


def _run_methods(model, test, name, scfg, *, budget, lam_min, repeats, methods, out_dir, solver_name, save_paths,
                 store_root=None):
    from gaplab.core.regpath import default_grid, grid_search, regularization_path
    grid = default_grid(15, -15)
    results = {}
    best = {}
    for _ in range(repeats):  # interleaved, best of N: the machine is shared
        for method in methods:
            t0 = time.perf_counter()
            st = dict(store=Path(store_root) / method, overwrite=True) if store_root is not None else {}
            if method == "eps_path":
                r = regularization_path(model, solver_config=scfg, eps=0.1, kappa=0.9, lam_min=lam_min,
                                        time_limit=budget, test_data=test, meta={"dataset": name}, **st)
            elif method == "heuristic_path":
                r = regularization_path(model, solver_config=scfg, eps=0.1, kappa=0.7, lam_min=lam_min,
                                        heuristic=True, true_gaps=True, time_limit=budget, test_data=test,
                                        meta={"dataset": name}, **st)
            else:
                ws = {"grid_none": "none", "grid_primal": "primal", "grid_dual": "dual"}[method]
                r = grid_search(model, grid, eps=0.1, warm_start=ws, solver_config=scfg, time_limit=budget,
                                test_data=test, meta={"dataset": name}, **st)
            wall = time.perf_counter() - t0
            if method not in best or r.total_time_s < best[method][0].total_time_s:
                best[method] = (r, wall)
    for method in methods:
        r, wall = best[method]
        if save_paths:
            r.save(out_dir / f"regpath_{name}_{solver_name}_{method}.npz")
        s = r.summary()
        s["wall_s_including_test_error"] = wall
        s["budget_s"] = budget if math.isfinite(budget) else None
        s["store_io"] = r.io_stats if r.store is not None else None
        s.update(path_result_summary(r, method))
        results[method] = (r, s)
        print(f"  {name} {solver_name} {method:15s} points={len(r):4d} passes={r.total_passes:8.1f} "
              f"time={r.total_time_s:7.2f}s lam_last={r.lams[-1]:.3g} end={r.end_reason}", flush=True)
    return results


LABELS = {"eps_path": "ε-approximate path (ε=0.1, κ=0.9)", "heuristic_path": "heuristic path (κ=0.7)",
          "grid_none": "grid search, no warm start", "grid_primal": "grid search, warm start (keep primal)",
          "grid_dual": "grid search, warm start (keep dual)"}
STYLE = {"eps_path": dict(color="C3", lw=2), "heuristic_path": dict(color="C1", lw=2, ls="--"),
         "grid_none": dict(color="C0", marker="o", ms=4), "grid_primal": dict(color="C2", marker="s", ms=4),
         "grid_dual": dict(color="C4", marker="^", ms=4)}


def _by_lambda_range(path, grid, octaves=2):
    """Where the passes go: breakpoints / grid points and their effective passes in each range
    [2^k, 2^(k+octaves)) of λ, largest λ first."""
    lp, pp = np.asarray(path.lams), path.column("passes")
    lg, pg = np.asarray(grid.lams), grid.column("passes")
    top = int(math.ceil(math.log2(max(lp.max(initial=1.0), lg.max(initial=1.0))))) + 1
    bottom = int(math.floor(math.log2(min(lp.min(initial=1.0), lg.min(initial=1.0)))))
    rows = []
    for k in range(top - octaves, bottom - octaves, -octaves):
        lo, hi = 2.0 ** k, 2.0 ** (k + octaves)
        mp, mg = (lp >= lo) & (lp < hi), (lg >= lo) & (lg < hi)
        if mp.any() or mg.any():
            rows.append({"lam_from": hi, "lam_to": lo, "path_breakpoints": int(mp.sum()),
                         "path_passes": float(pp[mp].sum()), "grid_points": int(mg.sum()),
                         "grid_passes": float(pg[mg].sum())})
    return rows


def _plot_comparison(results, title, file):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.5), sharex=True)
    for method, (r, _) in results.items():
        if not len(r):
            continue
        lams = r.lams
        kw = dict(STYLE[method])
        for ax, col in zip(axes, ("cum_time_s", "cum_passes")):
            y = r.column(col)
            if r.kind == "grid":
                ax.plot(lams, y, label=LABELS[method], **kw)
            else:  # flat to the end of what the path covers (λ_end; 0 -> the grid's end)
                lo = max(r.lam_end, 2.0 ** -15) if math.isfinite(r.lam_end) else lams[-1]
                if lo < lams[-1]:
                    lams_p, y_p = np.append(lams, lo), np.append(y, y[-1])
                else:
                    lams_p, y_p = lams, y
                ax.step(lams_p, y_p, where="post", label=LABELS[method], **kw)
    axes[0].set_ylabel("cumulative time (s)")
    axes[1].set_ylabel("cumulative effective passes")
    axes[1].set_xlabel("λ (computed from large to small)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].invert_xaxis()
    axes[0].legend(fontsize=8)
    axes[0].set_title(title)
    fig.tight_layout()
    save_figure(fig, file, dpi=120)
    plt.close(fig)


def _kappa_sweep(model, scfg, lam_min, out_dir, name, solver_name):
    """Fig. 7: ε-path for several κ (cumulative passes and time vs λ) and heuristic path for
    several κ (cumulative time and true gap vs λ)."""
    from gaplab.core.regpath import regularization_path
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    eps_res, heur_res = {}, {}
    for k in (0.3, 0.5, 0.7, 0.9, 0.97):
        r = regularization_path(model, solver_config=scfg, eps=0.1, kappa=k, lam_min=lam_min)
        eps_res[k] = r
        print(f"  κ={k}: ε-path points={len(r)} passes={r.total_passes:.1f} time={r.total_time_s:.2f}s", flush=True)
    for k in (0.5, 0.7, 0.9, 0.97):
        r = regularization_path(model, solver_config=scfg, eps=0.1, kappa=k, lam_min=lam_min, heuristic=True,
                                true_gaps=True)
        heur_res[k] = r
        eg = r.column("exact_gap")
        print(f"  κ={k}: heuristic points={len(r)} passes={r.total_passes:.1f} time={r.total_time_s:.2f}s "
              f"max true gap={np.nanmax(eg):.3f}", flush=True)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
    for k, r in eps_res.items():
        axes[0, 0].step(r.lams, r.column("cum_time_s"), where="post", label=f"κ={k}")
        axes[1, 0].step(r.lams, r.column("cum_passes"), where="post", label=f"κ={k}")
    for k, r in heur_res.items():
        axes[0, 1].step(r.lams, r.column("cum_time_s"), where="post", label=f"κ={k}")
        axes[1, 1].plot(r.lams, r.column("exact_gap"), ".", ms=3, label=f"κ={k}")
    axes[1, 1].axhline(0.1, color="k", lw=1, ls=":", label="ε")
    axes[0, 0].set_title("ε-approximate path (ε = 0.1)")
    axes[0, 1].set_title("heuristic path (ε = 0.1)")
    axes[0, 0].set_ylabel("cumulative time (s)")
    axes[1, 0].set_ylabel("cumulative effective passes")
    axes[0, 1].set_ylabel("cumulative time (s)")
    axes[1, 1].set_ylabel("true duality gap at the breakpoint")
    for ax in axes.ravel():
        ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in (axes[0, 0], axes[1, 0], axes[0, 1]):
        ax.set_yscale("log")
    axes[0, 0].invert_xaxis()
    for ax in axes[1]:
        ax.set_xlabel("λ")
    fig.suptitle(f"{name}, {solver_name}: effect of κ (Paper: Fig. 7)")
    fig.tight_layout()
    png = out_dir / f"regpath_kappa_{name}_{solver_name}.png"
    save_figure(fig, png, dpi=120)
    plt.close(fig)
    return png, {
        "eps_path": {str(k): r.summary() for k, r in eps_res.items()},
        "heuristic_path": {str(k): dict(r.summary(), true_gap_max=float(np.nanmax(r.column("exact_gap"))))
                           for k, r in heur_res.items()},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solver", default="bcfw-gap", choices=sorted(SOLVERS))
    ap.add_argument("--no-small", action="store_true", help="skip OCR-small")
    ap.add_argument("--large", action="store_true", help="also run OCR-large (with --large-budget)")
    ap.add_argument("--large-budget", type=float, default=300.0, help="seconds per method on OCR-large")
    ap.add_argument("--small-budget", type=float, default=math.inf, help="seconds per method on OCR-small")
    ap.add_argument("--kappa-sweep", action="store_true", help="Fig. 7: κ sweep on OCR-small")
    ap.add_argument("--conll", action="store_true", help="also run CoNLL-2000 (with --conll-budget; path stores)")
    ap.add_argument("--conll-budget", type=float, default=300.0, help="seconds per method on CoNLL-2000")
    ap.add_argument("--data-home", default=None, help="CoNLL-2000 directory (default $GAPLAB_DATA)")
    ap.add_argument("--tag", default="", help="suffix of the JSON and PNG names (e.g. _fig8)")
    ap.add_argument("--repeats", type=int, default=1, help="best-of-N timing on OCR-small")
    ap.add_argument("--methods", default="eps_path,heuristic_path,grid_none,grid_primal,grid_dual")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--save-paths", action="store_true", help="also save every path/grid as npz (MBs each)")
    args = ap.parse_args(argv)

    from gaplab.core import ChainModel, load_ocr
    from gaplab.core.jsonsafe import encode as _json_safe

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    scfg = _solver_config(args.solver)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    lam_min = 2.0 ** -15
    report = {"solver": args.solver, "solver_config": str(scfg), "eps": 0.1, "grid": "2^15 .. 2^-15 (31 values)",
              "lam_min": lam_min, "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                              "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
              "datasets": {}}
    figures = []
    sets = ([] if args.no_small else [("ocr-small", args.small_budget, args.repeats)])
    if args.large:
        sets.append(("ocr-large", args.large_budget, 1))
    if args.conll:
        sets.append(("conll2000", args.conll_budget, 1))
    for name, budget, reps in sets:
        store_tmp = None
        if name == "conll2000":
            import tempfile
            from gaplab.core.datasets.conll import load_conll2000
            train, _test = load_conll2000(data_home=args.data_home)
            test = None  # test F1 of every point would double the wall time
            store_tmp = tempfile.mkdtemp(prefix="gaplab-fig8-")
        else:
            train, test = load_ocr(name)
        model = ChainModel(train)
        print(f"{name}: n={model.n}, d={model.d}, budget per method {budget} s", flush=True)
        try:
            res = _run_methods(model, test, name, scfg, budget=budget, lam_min=lam_min, repeats=reps,
                               methods=methods, out_dir=out_dir, solver_name=args.solver, save_paths=args.save_paths,
                               store_root=store_tmp)
        finally:
            if store_tmp is not None:
                import shutil
                shutil.rmtree(store_tmp, ignore_errors=True)
        png = out_dir / f"regpath_{name}_{args.solver}{args.tag}.png"
        _plot_comparison(res, f"{name} ({args.solver}): regularization path vs grid search"
                         + ("" if math.isinf(budget) else f" (budget {budget:.0f} s per method)"), png)
        figures.append(str(png))
        entry = {m: s for m, (_, s) in res.items()}
        if "eps_path" in res and "grid_primal" in res:
            p, g = res["eps_path"][0], res["grid_primal"][0]
            entry["path_vs_warm_grid"] = {
                "passes_ratio": p.total_passes / g.total_passes, "time_ratio": p.total_time_s / g.total_time_s,
                "path_passes": p.total_passes, "grid_passes": g.total_passes,
                "path_time_s": p.total_time_s, "grid_time_s": g.total_time_s,
                "path_covers_down_to": p.lam_end, "grid_reaches": float(g.lams[-1]),
                "path_reaches_below_grid_min": bool(p.lam_end < 2.0 ** -15),
                "path_end": p.end_reason, "grid_end": g.end_reason,
                "passes_by_lambda_range": _by_lambda_range(p, g)}
            print(f"  path / warm-started grid: passes ×{p.total_passes / g.total_passes:.2f}, "
                  f"time ×{p.total_time_s / g.total_time_s:.2f}", flush=True)
        report["datasets"][name] = entry
    if args.kappa_sweep:
        train, _ = load_ocr("ocr-small")
        png, sweep = _kappa_sweep(ChainModel(train), scfg, lam_min, out_dir, "ocr-small", args.solver)
        figures.append(str(png))
        report["kappa_sweep_ocr-small"] = sweep
    report["figures"] = figures
    js = out_dir / f"regpath_bench_{args.solver}{args.tag}.json"
    if js.exists():  # keep the other data sets of an earlier run
        old = json.loads(js.read_text())
        for k, v in old.get("datasets", {}).items():
            report["datasets"].setdefault(k, v)
        if "kappa_sweep_ocr-small" in old and "kappa_sweep_ocr-small" not in report:
            report["kappa_sweep_ocr-small"] = old["kappa_sweep_ocr-small"]
        report["figures"] = sorted(set(report["figures"]) | set(old.get("figures", [])))
    write_text_atomic(js, json.dumps(_json_safe(report), indent=1, default=str))
    print(f"wrote {js}")
    for f in figures:
        print(f"wrote {f}")


if __name__ == "__main__":
    main()
