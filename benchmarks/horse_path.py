"""The paper's Fig. 4 / Fig. 8 on horse-small (Paper: Sec. 5 Fig. 4, App. K Fig. 8): the
ε-approximate regularization path (ε = 0.1, κ = 0.9), the heuristic path (κ = 0.7) and grid search
over 2^15 … 2^-15 with the keep-primal warm start (Proposition 1) and without warm start;
cumulative effective passes, seconds and CPU seconds to reach each λ. The box w_P >= 0 (App. H)
comes from the model's bounds(); the path supports it because its finite bounds are 0
(see gaplab.core.regpath.check_path_box).

    GAPLAB_DATA=DIR NUMBA_NUM_THREADS=1 nice python benchmarks/horse_path.py \\
        --budgets eps_path=900,heuristic_path=600,grid_primal=1200,grid_none=600

Methods run one after the other in this one process; each has its own time budget (seconds of its
own wall time, the regpath time_limit). Besides the regpath's wall times (``cum_time_s``), every
point gets ``cum_cpu_s``: process CPU seconds (time.process_time, all threads) of the method's work,
without the diagnostics the regpath also leaves out of its time (test error, the heuristic path's
uncounted true gaps; measured by wrapping ``gaplab.core.regpath.run._diagnostics`` in this script). On
a machine shared with other jobs the CPU times are the ones to compare.

Writes benchmarks/results/horse_path.json (after every method; ``datasets["horse-small"]`` has the
layout of regpath_bench.py's JSON, so benchmarks/fig8_combine.py reads it) and horse_path.png.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

from gaplab.core.atomic import save_figure, write_text_atomic
from gaplab.core.problems import load_problem
from gaplab.core import regpath as rp
from gaplab.core.jsonsafe import encode as _json_safe
from gaplab.core.regpath import run as rp_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import path_result_summary  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
METHODS = ("grid_primal", "eps_path", "heuristic_path", "grid_none")
SOLVERS = {"bcfw-gap": dict(step="fw", sampling="gap"), "bcpfw-gap": dict(step="pairwise", sampling="gap")}
LABELS = {"eps_path": "ε-approximate path (ε=0.1, κ=0.9)", "heuristic_path": "heuristic path (κ=0.7)",
          "grid_none": "grid 2^15…2^-15, no warm start", "grid_primal": "grid 2^15…2^-15, keep primal"}
STYLE = {"eps_path": dict(color="C3", lw=2), "heuristic_path": dict(color="C1", lw=2, ls="--"),
         "grid_none": dict(color="C0", marker="o", ms=3), "grid_primal": dict(color="C2", marker="s", ms=3)}
GRID_MIN = 2.0 ** -15


class _CpuMeter:
    """Process CPU seconds of a method, minus those spent in the regpath's diagnostics."""

    def __init__(self):
        self.excluded = 0.0
        self.start = time.process_time()
        self.cum = []
        self._orig = rp_run._diagnostics

    def __enter__(self):
        def timed(*a, **k):
            c0 = time.process_time()
            try:
                return self._orig(*a, **k)
            finally:
                self.excluded += time.process_time() - c0
        rp_run._diagnostics = timed
        self.start = time.process_time()
        return self

    def __exit__(self, *exc):
        rp_run._diagnostics = self._orig
        return False

    def callback(self, point):
        self.cum.append(time.process_time() - self.start - self.excluded)
        return None


def run_method(method, model, test, scfg, budget, lam_min):
    grid = rp.default_grid(15, -15)
    with _CpuMeter() as cpu:
        t0 = time.perf_counter()
        if method == "eps_path":
            r = rp.regularization_path(model, solver_config=scfg, eps=0.1, kappa=0.9, lam_min=lam_min,
                                       time_limit=budget, test_data=test, callback=cpu.callback)
        elif method == "heuristic_path":
            r = rp.regularization_path(model, solver_config=scfg, eps=0.1, kappa=0.7, lam_min=lam_min,
                                       heuristic=True, true_gaps=True, time_limit=budget, test_data=test,
                                       callback=cpu.callback)
        else:
            ws = {"grid_none": "none", "grid_primal": "primal"}[method]
            r = rp.grid_search(model, grid, eps=0.1, warm_start=ws, solver_config=scfg, time_limit=budget,
                               test_data=test, callback=cpu.callback)
        wall = time.perf_counter() - t0
    s = r.summary()
    s["wall_s_including_test_error"] = wall
    s["budget_s"] = budget
    s["total_cpu_s"] = cpu.cum[-1] if cpu.cum else 0.0
    s["diagnostics_cpu_s"] = cpu.excluded
    s.update(path_result_summary(r, method, cum_cpu_s=cpu.cum))
    return r, s


def compare(entry):
    """Path vs keep-primal grid: totals, and the path's cost down to the grid's last λ."""
    p, g = entry.get("eps_path"), entry.get("grid_primal")
    if p is None or g is None:
        return None
    g_last = g["rows"][-1]
    lam_g = g_last["lam"]
    upto = [r for r in p["rows"] if r["lam"] >= lam_g]
    out = {"path_passes": p["total_passes"], "grid_passes": g["total_passes"],
           "path_time_s": p["total_time_s"], "grid_time_s": g["total_time_s"],
           "path_cpu_s": p["total_cpu_s"], "grid_cpu_s": g["total_cpu_s"],
           "path_last_lam": p["lam_last"], "path_covers_down_to": p["lam_end"], "path_end": p["end"],
           "grid_last_lam": lam_g, "grid_end": g["end"],
           # covered: the last breakpoint, or every λ below it when the path ended with ρ <= 0 (λ_end = 0)
           "path_reaches_below_grid_min": bool(p["lam_last"] < GRID_MIN or (p["lam_end"] is not None
                                                                            and p["lam_end"] < GRID_MIN)),
           "path_last_breakpoint_below_grid_last": bool(p["lam_last"] < lam_g)}
    if upto and p["lam_last"] <= lam_g:
        r = upto[-1]
        out["path_to_grid_last_lam"] = {"lam": r["lam"], "cum_passes": r["cum_passes"],
                                        "cum_time_s": r["cum_time_s"], "cum_cpu_s": r["cum_cpu_s"]}
    # the grid's cost down to the grid point just above the path's last breakpoint
    above = [r for r in g["rows"] if r["lam"] >= p["lam_last"]]
    if above:
        r = above[-1]
        out["grid_to_path_last_breakpoint"] = {"lam": r["lam"], "cum_passes": r["cum_passes"],
                                               "cum_time_s": r["cum_time_s"], "cum_cpu_s": r["cum_cpu_s"]}
    return out


def plot(entry, file, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for m in METHODS:
        e = entry.get(m)
        if e is None or not e["rows"]:
            continue
        lam = np.array([r["lam"] for r in e["rows"]])
        for ax, col in zip(axes, ("cum_cpu_s", "cum_time_s", "cum_passes")):
            y = np.array([r[col] for r in e["rows"]], dtype=float)
            if m.startswith("grid"):
                ax.plot(lam, y, label=LABELS[m], **STYLE[m])
            else:  # flat down to what the path covers (λ_end; 0: every smaller λ -> the grid's end)
                lo = e.get("lam_end")
                lo = GRID_MIN / 2 if lo == 0 else (lo if isinstance(lo, (int, float)) else math.nan)
                lp = np.append(lam, lo) if math.isfinite(lo) and lo < lam[-1] else lam
                ax.step(lp, np.append(y, y[-1])[:lp.size], where="post", label=LABELS[m], **STYLE[m])
    for ax, yl in zip(axes, ("cumulative CPU time (s)", "cumulative wall time (s)", "cumulative effective passes")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(2.0 ** 20, 2.0 ** -16)
        ax.axvline(GRID_MIN, color="k", lw=0.8, ls=":")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xlabel("λ (computed from large to small)")
        ax.set_ylabel(yl)
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, file, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solver", default="bcfw-gap", choices=sorted(SOLVERS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--budgets", default="eps_path=900,heuristic_path=600,grid_primal=1200,grid_none=600",
                    help="method=seconds,... (wall seconds of the method's own work; regpath time_limit)")
    ap.add_argument("--lam-min", type=float, default=GRID_MIN)
    ap.add_argument("--out", default=str(OUT / "horse_path"))
    ap.add_argument("--problem", default="horse-small", help="a registered segmentation problem (seg-tiny: smoke run)")
    ap.add_argument("--replot", action="store_true",
                    help="only recompute path_vs_warm_grid and redraw the PNG from the JSON of --out")
    args = ap.parse_args(argv)
    if args.replot:
        js = Path(args.out).with_suffix(".json")
        rep = json.loads(js.read_text())
        for ds, entry in rep["datasets"].items():
            cmp_ = compare(entry)
            if cmp_ is not None:
                entry["path_vs_warm_grid"] = cmp_
            plot(entry, Path(args.out).with_suffix(".png"),
                 f"{ds} ({rep['solver']}, n = {rep['n']}): regularization path vs grid search (Paper: Fig. 4, "
                 f"Fig. 8); budgets {rep['budgets_s']}")
        write_text_atomic(js, json.dumps(rep, indent=1, default=str))
        return 0
    budgets = {k: float(v) for k, v in (kv.split("=") for kv in args.budgets.split(",") if kv)}
    methods = [m for m in args.methods.split(",") if m]
    bad = [m for m in methods if m not in METHODS or m not in budgets]
    if bad:
        raise SystemExit(f"--methods: unknown or without a budget: {bad} (methods {METHODS}, budgets {budgets})")
    p = load_problem(args.problem)
    model, test = p.model, p.test
    from gaplab.core import SolverConfig
    scfg = SolverConfig(**SOLVERS[args.solver])
    js, png = Path(args.out).with_suffix(".json"), Path(args.out).with_suffix(".png")
    report = {"solver": args.solver, "solver_config": str(scfg), "eps": 0.1, "grid": "2^15 .. 2^-15 (31 values)",
              "lam_min": args.lam_min, "budgets_s": budgets,
              "timing": "cum_time_s: wall s of the method's work (regpath); cum_cpu_s: process CPU s of the same "
                        "work (diagnostics excluded); one process, run with nice, NUMBA_NUM_THREADS="
                        + os.environ.get("NUMBA_NUM_THREADS", "unset"),
              "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
              "n": int(model.n), "d": int(model.d), "datasets": {args.problem: {}}}
    entry = report["datasets"][args.problem]
    t0 = time.perf_counter()  # compile the numba kernels first: not part of any method's time
    rp.grid_search(model, [2.0 ** 15, 2.0 ** 14], eps=0.1, solver_config=scfg, test_data=test, time_limit=5.0)
    rp.grid_search(model, [2.0 ** 15], eps=0.1, warm_start="none", solver_config=scfg, time_limit=5.0)
    rp.regularization_path(model, solver_config=scfg, eps=0.1, kappa=0.7, heuristic=True, true_gaps=True,
                           time_limit=2.0, test_data=test)
    report["warmup_s"] = time.perf_counter() - t0
    for m in methods:
        la0 = os.getloadavg()
        r, s = run_method(m, model, test, scfg, budgets[m], args.lam_min)
        s["load_avg_before_after"] = [la0, os.getloadavg()]
        entry[m] = s
        print(f"{args.problem} {m:15s} points={s['points']:4d} passes={s['total_passes']:9.1f} "
              f"time={s['total_time_s']:8.1f}s cpu={s['total_cpu_s']:8.1f}s lam_last={s['lam_last']:.3g} "
              f"end={s['end']}", flush=True)
        cmp_ = compare(entry)
        if cmp_ is not None:
            entry["path_vs_warm_grid"] = cmp_
        report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        write_text_atomic(js, json.dumps(_json_safe(report), indent=1, default=str))
        plot(entry, png, f"{args.problem} ({args.solver}, n = {model.n}): regularization path vs grid search "
                         f"(Paper: Fig. 4, Fig. 8); budgets {budgets}")
    print(f"wrote {js}\nwrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
