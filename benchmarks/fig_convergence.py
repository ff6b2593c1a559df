"""Convergence figures: duality gap vs effective passes and vs time.

--preset sampling      BCFW uniform vs gap sampling on OCR-small (λ = 0.01) and
                       OCR-large (λ = 0.001).
--preset combinations  (the paper's Fig. 3, 5, 6) the 8 combinations
                       uniform/gap × FW/pairwise × cache/no cache, median and min–max band over
                       seeds, OCR-small λ ∈ {0.1, 0.01, 0.001} and OCR-large λ = 0.001.
--preset conll         the 8 combinations on CoNLL-2000 at λ ∈ {0.01, 1/n, 0.0001},
                       3 seeds (data from --data-home or $GAPLAB_DATA).
--preset horse         the 8 combinations on horse-small (graph-cut oracle, w_P >= 0)
                       at λ ∈ {100, 10, 1}, 1 seed, 30 passes (data from $GAPLAB_DATA).
--preset pose          the 8 combinations on LSP pose (G = 32, the first 100 training
                       poses, λ = 0.1, the model's box), 1 seed (joints.mat from --data-home or
                       $GAPLAB_DATA). --pose-n / --pose-G set the training poses and the grid
                       (e.g. --pose-n 1000: all of LSP's training poses; the outputs are then
                       named convergence_pose_n1000_G32.*).

The same experiments as sweep specs (run on Dask into a resumable store, drawn by gaplab.plots):
benchmarks/specs/convergence_{sampling,combinations,conll}.toml, e.g.

    gaplab sweep benchmarks/specs/convergence_combinations.toml --store out/combinations
    gaplab figure out/combinations --out convergence_combinations.png

This script stays for its JSON comparisons (time to a common gap, gap ratios at equal time).
Writes PNG and JSON to benchmarks/out/. The exact gap is measured at the gap checks (every
--gap-check passes, counted as passes as in the paper).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import band, gap_curves, out_dir, write_json  # noqa: E402
from gaplab.core.atomic import save_figure  # noqa: E402

STYLE = {  # (colour, linestyle) as in the paper's figures: colour = method, dashes = cache
    ("uniform", "fw"): "tab:blue", ("gap", "fw"): "tab:red",
    ("uniform", "pairwise"): "tab:green", ("gap", "pairwise"): "tab:purple",
}


def label(sampling, step, cache):
    name = {"fw": "BCFW", "pairwise": "BCPFW"}[step]
    return f"{name} {sampling}{' + cache' if cache else ''}"


_MODELS = {}
POSE_OPTS = {"G": 32, "n_train": 100}   # preset pose: set from --pose-G / --pose-n


def load_model(dataset, data_home=None):
    from gaplab.core import ChainModel, load_ocr
    if dataset not in _MODELS:
        if dataset in ("horse-small", "lsp-pose"):  # issues 17 and 18 (lsp-pose: G = 32, first 100 poses)
            from gaplab.core.problems import load_problem
            _MODELS.clear()
            opts = dict(POSE_OPTS) if dataset == "lsp-pose" else {}
            _MODELS[dataset] = load_problem(dataset, data_home, **opts).model
            return _MODELS[dataset]
        if dataset == "conll2000":
            from gaplab.core.datasets.conll import load_conll2000
            train, _ = load_conll2000(data_home=data_home)
        else:
            train, _ = load_ocr(dataset)
        _MODELS.clear()
        _MODELS[dataset] = ChainModel(train)
    return _MODELS[dataset]


def run_setting(dataset, lam, methods, seeds, passes, gap_check, data_home=None):
    from gaplab.core import Solver
    from gaplab.core.problems import model_box
    model = load_model(dataset, data_home)
    if lam == "1/n":
        lam = 1.0 / model.n
    out = {}
    for (sampling, step, cache) in methods:
        traces, summary = [], []
        for seed in seeds:
            s = Solver(model, lam=lam, sampling=sampling, step=step, cache={"enabled": cache},
                       gap_check=gap_check, max_passes=passes, seed=seed, **model_box(model))
            r = s.run(final_gap_check=True)
            traces.append(r.trace)
            summary.append({"seed": seed, "exact_gap": r.exact_gap, "primal": r.primal, "dual": r.dual,
                            "effective_passes": r.effective_passes, "wall_time_s": r.wall_time_s,
                            "cache_hits": r.cache_hits})
        out[label(sampling, step, cache)] = {"traces": traces, "runs": summary,
                                            "key": (sampling, step, cache)}
    return out


def plot(ax_pass, ax_time, results, title):
    for name, res in results.items():
        sampling, step, cache = res["key"]
        colour = STYLE[(sampling, step)]
        ls = "--" if cache else "-"
        for ax, xkey in ((ax_pass, "effective_passes"), (ax_time, "wall_time_s")):
            curves = gap_curves(res["traces"], xkey)
            hi = max((c[-1, 0] for c in curves if len(c)), default=1.0)
            lo = min((c[0, 0] for c in curves if len(c)), default=0.0)
            grid = np.linspace(lo, hi, 200)
            b = band(curves, grid)
            if b is None:
                continue
            med, mn, mx = b
            ax.plot(grid, med, color=colour, ls=ls, lw=1.6, label=name)
            if len(curves) > 1:
                ax.fill_between(grid, mn, mx, color=colour, alpha=0.15, lw=0)
    for ax, xl in ((ax_pass, "effective passes"), (ax_time, "time (s)")):
        ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.grid(True, which="both", alpha=0.3)
    ax_pass.set_ylabel("duality gap")
    ax_pass.set_title(title, fontsize=10)
    ax_time.set_title(title, fontsize=10)


def _first_reach(curve, level):
    """x of the first gap-check point with exact gap <= level (NaN if never)."""
    hit = np.nonzero(curve[:, 1] <= level)[0] if len(curve) else []
    return float(curve[hit[0], 0]) if len(hit) else float("nan")


def _median_on(curves, grid):
    b = band(curves, grid)
    return None if b is None else b[0]


def comparisons(results):
    """Final median gaps, and two questions: was gap sampling ever slower than
    uniform sampling, did the cache ever cost time?

    ``reference_gap`` is the largest median final gap over the methods (a level every method
    reaches); ``median_time_to_reference_gap_s`` / ``median_passes_to_reference_gap`` are the
    medians over seeds of the first gap check at or below it. Each pair (gap vs uniform with the
    same step and cache; cache vs no cache with the same sampler and step) gets the ratio of
    those times (< 1: the first method is faster) and ``worst_gap_ratio_at_equal_time``, the
    largest ratio of the two median gap curves on a common time grid (> 1: the first method is
    behind somewhere)."""
    rows = {}
    finals = {}
    for name, res in results.items():
        gaps = [r["exact_gap"] for r in res["runs"]]
        finals[name] = float(np.median(gaps))
        rows[name] = {"median_final_gap": finals[name],
                      "median_time_s": float(np.median([r["wall_time_s"] for r in res["runs"]])),
                      "median_effective_passes": float(np.median([r["effective_passes"] for r in res["runs"]]))}
    ref = max(finals.values())
    for name, res in results.items():
        for xkey, col in (("wall_time_s", "median_time_to_reference_gap_s"),
                          ("effective_passes", "median_passes_to_reference_gap")):
            rows[name][col] = float(np.nanmedian([_first_reach(c, ref) for c in gap_curves(res["traces"], xkey)]))
    by_key = {res["key"]: name for name, res in results.items()}
    pairs = {}
    for (sampling, step, cache), name in by_key.items():
        other = None
        if sampling == "gap":
            other, what = by_key.get(("uniform", step, cache)), "gap_vs_uniform"
        if other is not None:
            pairs[f"{what}: {name} vs {other}"] = _pair(results, name, other, rows)
        if cache:
            other = by_key.get((sampling, step, False))
            if other is not None:
                pairs[f"cache_vs_none: {name} vs {other}"] = _pair(results, name, other, rows)
    return {"reference_gap": ref, "methods": rows, "pairs": pairs}


def _pair(results, a, b, rows):
    ca = gap_curves(results[a]["traces"], "wall_time_s")
    cb = gap_curves(results[b]["traces"], "wall_time_s")
    lo = max(min((c[0, 0] for c in ca if len(c)), default=np.inf), min((c[0, 0] for c in cb if len(c)), default=np.inf))
    hi = min(max((c[-1, 0] for c in ca if len(c)), default=0.0), max((c[-1, 0] for c in cb if len(c)), default=0.0))
    worst = float("nan")
    if hi > lo:
        grid = np.linspace(lo, hi, 200)
        ma, mb = _median_on(ca, grid), _median_on(cb, grid)
        if ma is not None and mb is not None:
            with np.errstate(all="ignore"):
                worst = float(np.nanmax(ma / mb))
    ta = rows[a]["median_time_to_reference_gap_s"]
    tb = rows[b]["median_time_to_reference_gap_s"]
    return {"time_to_reference_gap_ratio": ta / tb if tb > 0 else float("nan"),
            "worst_gap_ratio_at_equal_time": worst}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=["sampling", "combinations", "conll", "horse", "pose"], default="sampling")
    ap.add_argument("--data-home", default=None, help="CoNLL-2000 directory (preset conll)")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--passes-small", type=float, default=None)
    ap.add_argument("--passes-large", type=float, default=None)
    ap.add_argument("--gap-check", type=float, default=10)
    ap.add_argument("--pose-n", type=int, default=100, help="preset pose: training poses (<= 1000)")
    ap.add_argument("--pose-G", type=int, default=32, help="preset pose: grid side G")
    args = ap.parse_args(argv)
    POSE_OPTS.update(G=args.pose_G, n_train=args.pose_n)
    tag = args.preset
    if args.preset == "pose" and (args.pose_n, args.pose_G) != (100, 32):
        tag = f"pose_n{args.pose_n}_G{args.pose_G}"
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if args.preset == "sampling":
        methods = [("uniform", "fw", False), ("gap", "fw", False)]
        settings = [("small", 0.01, args.passes_small or 200), ("large", 0.001, args.passes_large or 100)]
        seeds = range(args.seeds or 1)
    elif args.preset == "combinations":
        methods = [(s, st, c) for st in ("fw", "pairwise") for s in ("uniform", "gap") for c in (False, True)]
        settings = [("small", 0.1, args.passes_small or 100), ("small", 0.01, args.passes_small or 100),
                    ("small", 0.001, args.passes_small or 100), ("large", 0.001, args.passes_large or 40)]
        seeds = range(args.seeds or 5)
    elif args.preset == "horse":
        methods = [(s, st, c) for st in ("fw", "pairwise") for s in ("uniform", "gap") for c in (False, True)]
        settings = [("horse-small", lam, args.passes_large or 30) for lam in (100.0, 10.0, 1.0)]
    elif args.preset == "pose":
        methods = [(s, st, c) for st in ("fw", "pairwise") for s in ("uniform", "gap") for c in (False, True)]
        settings = [("lsp-pose", 0.1, args.passes_small or 40)]
        seeds = range(args.seeds or 1)
    else:
        methods = [(s, st, c) for st in ("fw", "pairwise") for s in ("uniform", "gap") for c in (False, True)]
        settings = [("conll2000", 0.01, args.passes_large or 20), ("conll2000", "1/n", args.passes_large or 20),
                    ("conll2000", 0.0001, args.passes_large or 20)]
        seeds = range(args.seeds or 3)
    fig, axes = plt.subplots(2, len(settings), figsize=(4.2 * len(settings), 7.5), squeeze=False)
    summary = {"preset": args.preset, "seeds": list(seeds), "gap_check": args.gap_check, "settings": []}
    for col, (ds, lam, passes) in enumerate(settings):
        res = run_setting(ds, lam, methods, seeds, passes, args.gap_check, args.data_home)
        dname = {"conll2000": "CoNLL-2000", "horse-small": "horse-small",
                 "lsp-pose": f"LSP pose (G = {POSE_OPTS['G']}, n = {POSE_OPTS['n_train']})"}.get(ds, f"OCR-{ds}")
        plot(axes[0, col], axes[1, col], res, f"{dname}, λ = {lam}")
        summary["settings"].append({"dataset": dname, "lam": lam, "pass_budget": passes,
                                    "comparison": comparisons(res),
                                    "traces": {k: [[{kk: r[kk] for kk in ("kind", "effective_passes", "wall_time_s",
                                                                          "exact_gap", "heuristic_gap", "dual", "primal")}
                                                    for r in tr] for tr in v["traces"]] for k, v in res.items()}})
        print(f"done {dname} λ={lam}", file=sys.stderr)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("gaplab: duality gap (exact, at gap checks) — median and min–max over seeds"
                 if len(seeds) > 1 else "gaplab: duality gap (exact, at gap checks)", fontsize=11)
    fig.tight_layout()
    png = out_dir() / f"convergence_{tag}.png"
    save_figure(fig, png, dpi=110)
    path = write_json(f"convergence_{tag}.json", summary)
    brief = [{"dataset": s["dataset"], "lam": s["lam"], **s["comparison"]} for s in summary["settings"]]
    print(json.dumps(brief, indent=1))
    print(f"wrote {png} and {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
