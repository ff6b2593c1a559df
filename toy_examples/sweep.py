"""Sweep of the App. C toy problem over n, K and ε: oracle calls of every sampler to reach a
duality gap <= ε, and the speed-up of gap sampling against the prediction min(n, K, 1/(nε)).

Run ``python -m gaplab.toy_examples.sweep`` (the full grid n ∈ {10, 50, 200}, K ∈ {10, 100,
1000}, ε ∈ {1e-3, 1e-4, 1e-5, 1e-6}, 3 seeds takes about 90 s on one core; ``--quick``
runs a small grid in a few seconds). Writes ``sweep.json``, ``sweep_table.md`` and
``sweep.png`` in ``--out-dir``.

Paper: App. C ("Adaptive and non-uniform sampling": speed-up min{n, K, 1/(nε)}).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ._common import (DEFAULT_OUT_DIR, check_int, check_positive, gap_check_label, new_figure,
                      out_path, parse_gap_check, save_outputs)
from .hard_easy import SAMPLERS, compare_samplers, make_hard_easy
from gaplab.core.atomic import save_figure, write_text_atomic

__all__ = ["DEFAULT_NS", "DEFAULT_KS", "DEFAULT_EPSS", "run_sweep", "format_table", "plot_sweep", "main"]

DEFAULT_NS = (10, 50, 200)
DEFAULT_KS = (10, 100, 1000)
DEFAULT_EPSS = (1e-3, 1e-4, 1e-5, 1e-6)
#: Budget of the Lipschitz sampler per run (it needs ≈ 2K(n−1)·t calls; most cells exceed it).
CLI_LIPSCHITZ_MAX_CALLS = 20_000  # the command line default (< 30 s)
LIPSCHITZ_MAX_CALLS = 100_000


def _aggregate(runs: list[dict], name: str) -> dict:
    """Mean over seeds; a sampler censored in any seed is reported as a lower bound."""
    calls = [r[name]["oracle_calls"] for r in runs]
    if any(c is None for c in calls):
        lower = min(r[name]["censored_at"] for r in runs if r[name]["oracle_calls"] is None)
        return {"oracle_calls": None, "lower_bound": lower, "per_seed": calls}
    out = {"oracle_calls": float(np.mean(calls)), "lower_bound": None, "per_seed": calls}
    if name == "exact_gap":
        out["sampler_oracle_calls"] = float(np.mean([r[name]["sampler_oracle_calls"] for r in runs]))
    return out


def run_sweep(ns=DEFAULT_NS, Ks=DEFAULT_KS, epss=DEFAULT_EPSS, seeds=(0, 1, 2), gap_check: float = 10, *,
              samplers=SAMPLERS, lipschitz_max_calls: int = LIPSCHITZ_MAX_CALLS, progress=None) -> dict:
    """Measure oracle calls to reach gap <= ε of each sampler on the App. C problem for every
    (n, K, ε) of a grid, averaged over seeds.

    Paper: App. C (speed-up of gap sampling ≈ min{n, K, 1/(nε)}).

    Parameters
    ----------
    ns, Ks, epss : sequences
        Grid of problem sizes (n >= 2, K >= 1) and targets (ε > 0).
    seeds : sequence of int
        Solver seeds; each cell reports the mean over seeds.
    gap_check : float
        Gap-pass frequency of the stale gap sampler (passes; inf: never).
    samplers : sequence of str
        Subset of :data:`gaplab.toy_examples.hard_easy.SAMPLERS`.
    lipschitz_max_calls : int
        Budget of each Lipschitz run (the others get the default budget of
        :func:`~gaplab.toy_examples.hard_easy.compare_samplers`, which they never hit).
    progress : callable(str), optional
        Called with a line per finished cell.

    Returns
    -------
    dict
        ``rows`` (one per cell: n, K, eps, hard_steps_needed, predicted_speedup (min(n, K,
        1/(nε))), expected calls, per-sampler aggregates, measured_speedup (uniform/gap),
        gap_constant_c), ``settings`` and ``wall_time_s``.
    """
    ns = [check_int("n", n, 2) for n in ns]
    Ks = [check_int("K", K, 1) for K in Ks]
    epss = [check_positive("eps", e) for e in epss]
    seeds = [check_int("seed", s, 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    gc = parse_gap_check(gap_check)
    t0 = time.perf_counter()
    rows = []
    for n in ns:
        for K in Ks:
            problem = make_hard_easy(n, K)
            for eps in epss:
                tc = time.perf_counter()
                runs = [compare_samplers(n, K, eps, s, gc, samplers=samplers, problem=problem,
                                         max_calls={"lipschitz": lipschitz_max_calls}, keep_curves=False)
                        for s in seeds]
                pred = runs[0]["prediction"]
                row = {"n": n, "K": K, "eps": eps, "hard_steps_needed": pred["hard_steps_needed"],
                       "predicted_speedup": pred["speedup_min_n_K_1_over_n_eps"],
                       "expected_speedup_uniform_over_gap": pred["speedup_uniform_over_gap"],
                       "expected_calls": pred["expected_calls"]}
                for name in samplers:
                    row[name] = _aggregate(runs, name)
                uni = row.get("uniform", {}).get("oracle_calls")
                gap = row.get("gap", {}).get("oracle_calls")
                row["measured_speedup"] = uni / gap if uni and gap else None
                t = pred["hard_steps_needed"]
                row["gap_constant_c"] = (gap - n) / t if gap is not None and t > 0 else None
                row["wall_time_s"] = time.perf_counter() - tc
                rows.append(row)
                if progress is not None:
                    progress(f"n={n:<4} K={K:<5} eps={eps:<7g} t={t:<5} uniform={_fmt(row, 'uniform'):>9} "
                             f"gap={_fmt(row, 'gap'):>7} speed-up={_num(row['measured_speedup'])} "
                             f"(min(n,K,1/(n eps))={row['predicted_speedup']:.3g})  {row['wall_time_s']:.1f}s")
    return {"rows": rows,
            "settings": {"ns": ns, "Ks": Ks, "epss": epss, "seeds": seeds, "gap_check": gap_check_label(gc),
                         "samplers": list(samplers), "lipschitz_max_calls": lipschitz_max_calls},
            "wall_time_s": time.perf_counter() - t0}


def _num(x, fmt=".3g"):
    return "—" if x is None else format(x, fmt)


def _fmt(row, name):
    r = row.get(name)
    if r is None:
        return "—"
    if r["oracle_calls"] is None:
        return f">{r['lower_bound']:,}"
    return f"{r['oracle_calls']:,.0f}"


def format_table(sweep: dict) -> str:
    """Markdown table of a :func:`run_sweep` result (mean oracle calls over seeds; ``>x``: the
    budget x was hit)."""
    names = sweep["settings"]["samplers"]
    head = ["n", "K", "ε", "t"] + names + ["uniform/gap", "min(n,K,1/(nε))", "n·t/(n+t)", "c"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in sweep["rows"]:
        cells = [str(r["n"]), str(r["K"]), f"{r['eps']:g}", str(r["hard_steps_needed"])]
        cells += [_fmt(r, s) for s in names]
        cells += [_num(r["measured_speedup"]), f"{r['predicted_speedup']:.3g}",
                  _num(r["expected_speedup_uniform_over_gap"]), _num(r["gap_constant_c"], ".2f")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_sweep(sweep: dict, path=None):
    """Figure of a sweep: measured speed-up uniform/gap against min(n, K, 1/(nε)) (left) and
    measured against expected oracle calls for every sampler (right).

    Paper: App. C.

    Returns
    -------
    matplotlib.figure.Figure
    """
    rows = sweep["rows"]
    fig, axes = new_figure(1, 2, figsize=(11.5, 4.6))
    ax, bx = axes[0]
    ns = sorted({r["n"] for r in rows})
    Ks = sorted({r["K"] for r in rows})
    markers = dict(zip(Ks, "osD^v<>"))
    colors = {n: f"C{j}" for j, n in enumerate(ns)}
    allv = []
    for r in rows:
        if r["measured_speedup"] is None:
            continue
        x, y = r["predicted_speedup"], r["measured_speedup"]
        allv += [x, y]
        ax.scatter(x, y, color=colors[r["n"]], marker=markers[r["K"]], s=36, alpha=0.85,
                   edgecolor="k", linewidth=0.4)
    if allv:
        lo, hi = min(allv) / 1.5, max(allv) * 1.5
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="measured = min(n, K, 1/(nε))")
        ax.plot([lo, hi], [lo / 2, hi / 2], "k:", lw=0.8, label="half of it")
    for n in ns:
        ax.scatter([], [], color=colors[n], marker="o", label=f"n = {n}")
    for K in Ks:
        ax.scatter([], [], color="w", edgecolor="k", marker=markers[K], label=f"K = {K}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("App. C prediction min(n, K, 1/(nε))")
    ax.set_ylabel("measured speed-up: uniform calls / gap calls")
    ax.set_title(f"Gap sampling (gap_check={sweep['settings']['gap_check']}) vs uniform")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    ax.grid(True, which="major", alpha=0.3)

    names = sweep["settings"]["samplers"]
    scol = {"uniform": "C0", "curvature": "C1", "lipschitz": "C2", "gap": "C3", "exact_gap": "C4"}
    smark = {"uniform": "o", "curvature": "x", "lipschitz": "^", "gap": "s", "exact_gap": "D"}
    vals = []
    for name in names:
        xs, ys, xc, yc = [], [], [], []
        for r in rows:
            e = r["expected_calls"][name]
            a = r[name]
            if a["oracle_calls"] is not None:
                xs.append(e)
                ys.append(a["oracle_calls"])
            else:
                xc.append(e)
                yc.append(a["lower_bound"])
        vals += xs + ys + xc + yc
        bx.scatter(xs, ys, color=scol[name], marker=smark[name], s=28, alpha=0.8, label=name.replace("_", " "))
        if xc:
            bx.scatter(xc, yc, color=scol[name], marker=r"$\uparrow$", s=60, alpha=0.6,
                       label=f"{name} budget hit (lower bound)")
    if vals:
        lo, hi = max(min(vals) / 2, 0.5), max(vals) * 2
        bx.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("expected oracle calls (App. C analysis)")
    bx.set_ylabel("measured oracle calls to gap ≤ ε (mean over seeds)")
    bx.set_title("All samplers, all (n, K, ε)")
    bx.legend(fontsize=7, loc="upper left")
    bx.grid(True, which="major", alpha=0.3)
    if path is not None:
        save_figure(fig, path, dpi=110)
    return fig


def _floats(text):
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    """CLI: ``python -m gaplab.toy_examples.sweep [--quick] [--ns 10,50,200] [--Ks ...] [--eps ...]
    [--seeds 0,1,2] [--gap-check 10] [--out-dir DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m gaplab.toy_examples.sweep",
                                 description="App. C toy problem over a grid of n, K and eps.")
    ap.add_argument("--ns", default=",".join(map(str, DEFAULT_NS)))
    ap.add_argument("--Ks", default=",".join(map(str, DEFAULT_KS)))
    ap.add_argument("--eps", default=",".join(f"{e:g}" for e in DEFAULT_EPSS))
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (the full table: 0,1,2)")
    ap.add_argument("--gap-check", default="10")
    ap.add_argument("--lipschitz-max-calls", type=int, default=CLI_LIPSCHITZ_MAX_CALLS,
                    help="oracle-call budget of the Lipschitz sampler; beyond it the count is a lower "
                         f"bound (default {CLI_LIPSCHITZ_MAX_CALLS}, keeping the command under 30 s; "
                         f"the full table used {LIPSCHITZ_MAX_CALLS})")
    ap.add_argument("--quick", action="store_true", help="small grid (n in {10, 50}, K in {10, 100}, "
                                                          "eps in {1e-3, 1e-4}, one seed)")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    args = ap.parse_args(argv)
    try:
        if args.quick:
            ns, Ks, epss, seeds = [10, 50], [10, 100], [1e-3, 1e-4], [0]
        else:
            ns, Ks, epss, seeds = _ints(args.ns), _ints(args.Ks), _floats(args.eps), _ints(args.seeds)
        sweep = run_sweep(ns, Ks, epss, seeds, parse_gap_check(args.gap_check),
                          lipschitz_max_calls=args.lipschitz_max_calls, progress=print)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = format_table(sweep)
    print(table)
    sweep["table_markdown"] = table
    write_text_atomic(out_path(args.out_dir, "sweep_table.md"), table + "\n")
    save_outputs(sweep, plot_sweep, args.out_dir, "sweep")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
