"""The paper's Fig. 8 (App. K) on horse-small, OCR-small, OCR-large and CoNLL-2000 in one figure,
from the JSON of ``regpath_bench.py`` and ``horse_path.py`` runs (their per-point rows):
cumulative time (top) and cumulative effective passes (bottom) against λ for the ε-approximate
path, the heuristic path and the grid search 2^15 … 2^-15 with keep-primal warm start and
without warm start. A data set whose rows all carry ``cum_cpu_s`` (horse_path.py) is drawn
with process CPU seconds (its title says so); the others with wall seconds.

    python benchmarks/fig8_combine.py benchmarks/results/horse_path.json \\
        benchmarks/results/regpath_bench_bcfw-gap_fig8_ocr.json \\
        benchmarks/results/regpath_bench_bcfw-gap_fig8_conll.json \\
        benchmarks/results/regpath_bench_bcfw-gap_fig8_conll_paths600.json

A method found in several files is taken from the last one (e.g. a rerun with a larger budget).
Writes benchmarks/results/fig8.png and fig8.json (per dataset and method: points, passes,
time, budget, last λ, the λ the path covers down to, end reason, source file).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from gaplab.core.atomic import save_figure, write_text_atomic

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("eps_path", "heuristic_path", "grid_primal", "grid_none")
LABELS = {"eps_path": "ε-approximate path (ε=0.1, κ=0.9)", "heuristic_path": "heuristic path (κ=0.7)",
          "grid_none": "grid 2^15…2^-15, no warm start", "grid_primal": "grid 2^15…2^-15, keep primal"}
STYLE = {"eps_path": dict(color="C3", lw=2), "heuristic_path": dict(color="C1", lw=2, ls="--"),
         "grid_none": dict(color="C0", marker="o", ms=3), "grid_primal": dict(color="C2", marker="s", ms=3)}
DATASETS = ("horse-small", "ocr-small", "ocr-large", "conll2000")  # the paper's Fig. 8 starts with HorseSeg-small
GRID_MIN = 2.0 ** -15


def collect(files):
    out = {}
    for f in files:
        rep = json.loads(Path(f).read_text())
        for ds, entry in rep.get("datasets", {}).items():
            for m in METHODS:
                if m in entry and entry[m].get("rows"):
                    out.setdefault(ds, {})[m] = dict(entry[m], source=str(f))
    return out


def _num(v):
    return float(v) if v is not None and not isinstance(v, str) else float(v) if isinstance(v, str) else math.nan


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=str(RESULTS / "fig8"))
    args = ap.parse_args(argv)
    data = collect(args.files)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sets = [d for d in DATASETS if d in data]
    fig, axes = plt.subplots(2, len(sets), figsize=(5.2 * len(sets), 7.5), squeeze=False)
    summary = {}
    for c, ds in enumerate(sets):
        summary[ds] = {}
        budgets = set()
        entries = [data[ds][m] for m in METHODS if m in data[ds]]
        tcol = "cum_cpu_s" if all("cum_cpu_s" in r for e in entries for r in e["rows"]) else "cum_time_s"
        for m in METHODS:
            e = data[ds].get(m)
            if e is None:
                continue
            rows = e["rows"]
            lam = np.array([_num(r["lam"]) for r in rows])
            for ax, col in zip(axes[:, c], (tcol, "cum_passes")):
                y = np.array([_num(r[col]) for r in rows])
                if m.startswith("grid"):
                    ax.plot(lam, y, label=LABELS[m], **STYLE[m])
                else:  # flat down to what the path covers (0: every λ -> the grid's end)
                    lo = _num(e.get("lam_end"))
                    lo = GRID_MIN if lo == 0 else lo
                    if math.isfinite(lo) and lo < lam[-1]:
                        lam_p, y_p = np.append(lam, lo), np.append(y, y[-1])
                    else:
                        lam_p, y_p = lam, y
                    ax.step(lam_p, y_p, where="post", label=LABELS[m], **STYLE[m])
            b = e.get("budget_s")
            budgets.add(f"{b:.0f} s" if b else "none")
            lam_end = _num(e.get("lam_end"))
            summary[ds][m] = {"points": e["points"], "total_passes": e["total_passes"],
                              "total_time_s": e["total_time_s"], "total_cpu_s": e.get("total_cpu_s"),
                              "time_column": tcol, "budget_s": b, "lam_last": e["lam_last"],
                              "lam_end": e.get("lam_end"), "end": e["end"], "source": e["source"],
                              "reaches_below_grid_min": (bool(lam_end < GRID_MIN) if m.endswith("path")
                                                         and math.isfinite(lam_end) else None)}
        p = summary[ds].get("eps_path")
        note = ""
        if p is not None:
            if p["reaches_below_grid_min"]:
                note = "ε-path covers every λ below 2^-15 (ρ ≤ 0)"
            elif p["end"] == "time_limit":
                note = f"ε-path stopped by the budget at λ = {p['lam_last']:.3g}"
        axes[0, c].set_title(f"{ds} (budget per method: {', '.join(sorted(budgets))}; "
                             f"time: {'process CPU' if tcol == 'cum_cpu_s' else 'wall'} s)"
                             + (f"\n{note}" if note else ""), fontsize=9)
        axes[1, c].set_xlabel("λ (computed from large to small)")
        top = max(_num(e["rows"][0]["lam"]) for e in entries)  # a path's λ_∞ may exceed 2^16 (horse-small)
        for ax in axes[:, c]:
            ax.set_xlim(max(2.0 ** 16, 1.5 * top), 2.0 ** -16)
    axes[0, 0].set_ylabel("cumulative time (s)")
    axes[1, 0].set_ylabel("cumulative effective passes")
    for ax in axes.ravel():
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle("Fig. 8: regularization path vs grid search (BCFW + gap sampling inside all methods)",
                 fontsize=11)
    fig.tight_layout()
    png = save_figure(fig, Path(args.out).with_suffix(".png"), dpi=110)
    js = Path(args.out).with_suffix(".json")
    write_text_atomic(js, json.dumps(summary, indent=1, default=str))
    print(f"wrote {png}\nwrote {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
