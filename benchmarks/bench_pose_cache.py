"""The cost dial (Paper: Sec. 3.3, App. I): where the oracle cache starts to pay off
in wall time as the max oracle gets dearer.

For each grid side G (the oracle costs O(26·T·G³) with its direct transform, G <= 72, and
O(26·T·G²) with the envelope above), in a fresh interpreter (so its peak RSS is its own):
load LSP (the first ``--n`` training poses, T = 4 types), build PoseModel with its box
(quadratic deformation weights >= 0, Paper: App. H) and run, at the same λ and seed, BCFW
and BCPFW with gap sampling, each without and with the oracle cache, until the exact duality
gap is <= ``--gap`` (or ``--max-passes``). Reported per run: the solver's wall time
to that gap and the solver process's CPU time to it (one numba thread, so the CPU time is that
of the work alone on a shared machine; exact gap checks every ``--gap-check`` passes, counted in
the time: gap sampling needs them), oracle calls, cache hits, passes, and per G the median oracle time and the
process's peak RSS. At one G (``--eval-G``) the trained model's test error (the task loss:
joints' normalised squared error, capped at 1, averaged; and the mean joint distance in
units of the torso size s) on the first ``--n-test`` test poses is compared with a
unary-only baseline trained the same way with every deformation weight fixed at 0 (box
lb = ub = 0 there), and with the untrained "score maps only" rule (w_U = 1, all else 0: every
part at its own map's maximum).

Run from the repository root:
    python benchmarks/bench_pose_cache.py [--G 16 32 64] [--n 100] [--gap 0.1]
Writes benchmarks/results/bench_pose_cache.json and .png. Needs joints.mat ($GAPLAB_DATA,
--data-home, or the user cache).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import clean, run_child  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
KEY = "cpu_to_gap_s"  # plotted: CPU time of the (single-threaded) solver process, robust on a shared machine

CHILD = r"""
import json, time, numpy as np
from gaplab.core import Solver
from gaplab.core.datasets.lsp import load_lsp
from gaplab.core.models.pose import PoseModel, pose_scores, pose_oracle
G, n, lam, target, gc, max_passes, data_home = {G}, {n}, {lam}, {gap}, {gap_check}, {max_passes}, {data_home!r}
evaluate, n_test, steps = {evaluate}, {n_test}, {steps!r}
tr, te = load_lsp(G, n_types=4, seed=0, data_home=data_home, n_train=n)
model = PoseModel(tr)
lb, ub = model.bounds()
M = model.arrays
# warm the compiled kernels on a 2-image copy (compile time is not solver time)
small = PoseModel(tr.subset(np.arange(2)))
for step in ("fw", "pairwise"):
    for cache in (False, True):
        Solver(small, lam=lam, lb=small.bounds()[0], ub=small.bounds()[1], step=step, sampling="gap",
               cache={{"enabled": cache}}, gap_check=1, max_passes=2).run()
# oracle cost at a trained-like w
h = np.empty(model.d + 1); y = np.empty(2 * M.N, np.int64)
sf, si = model.scratch()
rng = np.random.default_rng(0)
w = np.abs(rng.normal(0, 0.3, size=model.d)); w[:M.N] = 1.0
pose_scores(M, 0, w, h); pose_oracle(M, 0, h, y, sf, si)
ts = []
for i in range(min(n, 20)):
    pose_scores(M, i, w, h)
    t0 = time.process_time(); pose_oracle(M, i, h, y, sf, si); ts.append(time.process_time() - t0)
out = dict(G=G, n=n, d=model.d, lam=lam, target_gap=target, oracle_ms=1e3 * float(np.median(ts)), runs=[])
results = {{}}
for step, name in (("fw", "BCFW"), ("pairwise", "BCPFW")):
    if step not in steps:
        continue
    for cache in (False, True):
        s = Solver(model, lam=lam, lb=lb, ub=ub, step=step, sampling="gap", cache={{"enabled": cache}},
                   gap_check=gc, gap_threshold=target, max_passes=max_passes, seed=0)
        cpu = {{}}
        c0 = time.process_time()
        def cb(solver, rec):
            if rec["kind"] == "gap_check":
                cpu[rec["iteration"]] = time.process_time() - c0
            return False
        r = s.run(callback=cb)
        tr_ = [dict(passes=x["effective_passes"], t=x["wall_time_s"], cpu=cpu.get(x["iteration"]), gap=x["exact_gap"],
                    primal=x["primal"], oracle=x["oracle_calls"], hits=x["cache_hits"], steps=x["iteration"])
               for x in r.trace if x["kind"] == "gap_check"]
        hit = [x for x in tr_ if x["gap"] <= target]
        out["runs"].append(dict(method=name + (" + cache" if cache else ""), step=step, cache=cache,
                                status=r.status.name.lower(), reached=bool(hit),
                                time_to_gap_s=hit[0]["t"] if hit else None,
                                cpu_to_gap_s=hit[0]["cpu"] if hit else None,
                                steps_to_gap=hit[0]["steps"] if hit else None,
                                passes_to_gap=hit[0]["passes"] if hit else None,
                                oracle_calls_to_gap=hit[0]["oracle"] if hit else None,
                                final_gap=r.exact_gap, primal=r.primal, dual=r.dual, wall_time_s=r.wall_time_s,
                                oracle_calls=r.oracle_calls, cache_hits=r.cache_hits,
                                effective_passes=r.effective_passes, trace=tr_,
                                min_quadratic_weight=float(r.w[model.quadratic_index()].min())))
        results[name + str(cache)] = r.w
if evaluate:
    test = te.subset(np.arange(n_test))
    w = results["BCPFWTrue"]
    # unary-only baseline: deformation weights fixed at 0 (lb = ub = 0), trained the same way
    dlb, dub = lb.copy(), ub.copy()
    dfo = int(M.def_off[M.parent >= 0].min())
    dlb[dfo:] = 0.0; dub[dfo:] = 0.0
    s0 = Solver(model, lam=lam, lb=dlb, ub=dub, step="pairwise", sampling="gap", cache={{"enabled": True}},
                gap_check=gc, gap_threshold=target, max_passes=max_passes, seed=0)
    r0 = s0.run()
    def joint_err(wv):
        Y = model.predict(wv, test)
        from gaplab.core.models.pose import build_pose_arrays
        Mt = build_pose_arrays(test, model.deform_unit)
        c = Y[:, 0:2 * 14:2]
        g = Mt.gt.reshape(test.n, -1)[:, 0:2 * 14:2]
        dist = np.sqrt((c % G - g % G) ** 2 + (c // G - g // G) ** 2) / np.sqrt(Mt.scale2)[:, None]
        return float(model.error(wv, test)), float(dist.mean()), float((dist <= 0.5).mean())
    full = joint_err(w); base = joint_err(r0.w)
    wu = np.zeros(model.d); wu[:M.N] = 1.0  # untrained: each part at its score map's maximum
    raw = joint_err(wu)
    out["eval"] = dict(n_test=n_test, trained=dict(zip(("test_loss", "mean_joint_dist_over_s", "pck_0.5s"), full)),
                       unary_only=dict(zip(("test_loss", "mean_joint_dist_over_s", "pck_0.5s"), base),
                                       final_gap=r0.exact_gap, status=r0.status.name.lower()),
                       score_maps_only=dict(zip(("test_loss", "mean_joint_dist_over_s", "pck_0.5s"), raw)),
                       train_loss=float(model.error(w)), train_loss_unary_only=float(model.error(r0.w)))
print(json.dumps(out))
"""


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    seen = set()
    Gs = [r["G"] for r in res]
    ms = [r["oracle_ms"] for r in res]
    for meth, style in (("BCFW", "o-"), ("BCFW + cache", "o--"), ("BCPFW", "s-"), ("BCPFW + cache", "s--")):
        t = []
        for r in res:
            run = next((x for x in r["runs"] if x["method"] == meth), None)
            t.append(run[KEY] if run is not None and run["reached"] else float("nan"))
        axes[0].plot(ms, t, style, label=meth)
        if meth == "BCFW":
            for g, m, tt in zip(Gs, ms, t):
                axes[0].annotate(f"G={g}", (m, tt), fontsize=8, xytext=(3, -10), textcoords="offset points")
    axes[0].set_xscale("log")
    if any(x["reached"] for r in res for x in r["runs"]):
        axes[0].set_yscale("log")
    axes[0].set_xlabel("max-oracle time per call (ms), set by the grid side G")
    axes[0].set_ylabel(f"CPU time to duality gap ≤ {res[0]['target_gap']} (s, 1 thread)")
    axes[0].set_title(f"LSP pose, n = {res[0]['n']}, λ = {res[0]['lam']}")
    axes[0].legend(fontsize=8)
    for r in res:
        for step in ("BCFW", "BCPFW"):
            a = next((x for x in r["runs"] if x["method"] == step), None)
            b = next((x for x in r["runs"] if x["method"] == step + " + cache"), None)
            if a is not None and b is not None and a["reached"] and b["reached"]:
                axes[1].plot(r["oracle_ms"], a[KEY] / b[KEY],
                             "o" if step == "BCFW" else "s", color="C0" if step == "BCFW" else "C2",
                             label=step if step not in seen else None)
                seen.add(step)
    axes[1].axhline(1.0, color="gray", lw=0.8)
    axes[1].set_ylim(bottom=0)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("max-oracle time per call (ms)")
    axes[1].set_ylabel("speed-up of the cache (time without / with)")
    axes[1].set_title("> 1: the cache pays off (CPU time to the gap)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    from gaplab.core.atomic import save_figure
    save_figure(fig, path, dpi=110)  # atomic: a failed write keeps the old PNG


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--G", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--gap", type=float, default=0.1)
    ap.add_argument("--gap-check", type=int, default=4)
    ap.add_argument("--steps", nargs="+", default=["fw", "pairwise"], choices=["fw", "pairwise"])
    ap.add_argument("--append", action="store_true", help="add to (replace by G in) an existing --out")
    ap.add_argument("--max-passes", type=float, default=60)
    ap.add_argument("--eval-G", type=int, default=32)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--out", default=str(RESULTS / "bench_pose_cache.json"))
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNG of an existing --out")
    a = ap.parse_args(argv)
    if a.plot_only:
        plot(json.loads(Path(a.out).read_text())["results"], Path(a.out).with_suffix(".png"))
        return
    from gaplab.core.atomic import check_output_path
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    check_output_path(a.out, "--out")  # before the runs: an unwritable --out would lose them
    res = []
    t0 = time.perf_counter()
    for G in a.G:
        r = run_child(CHILD.format(G=G, n=a.n, lam=a.lam, gap=a.gap, gap_check=a.gap_check, max_passes=a.max_passes,
                                   data_home=a.data_home, evaluate=G == a.eval_G, n_test=a.n_test, steps=a.steps),
                      env_extra={"NUMBA_NUM_THREADS": "1"})
        res.append(r)
        short = {x["method"]: (x["cpu_to_gap_s"], x["time_to_gap_s"], x["oracle_calls_to_gap"], x["steps_to_gap"],
                               x["cache_hits"]) for x in r["runs"]}
        print(f"G={G}: oracle {r['oracle_ms']:.2f} ms, peak RSS {r['peak_rss_mb']:.0f} MB, "
              f"(CPU s to gap, wall s to gap, oracle calls to gap, steps to gap, hits): {short}", flush=True)
        if "eval" in r:
            print("  eval:", json.dumps(r["eval"]), flush=True)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if a.append and out.exists():
        old = json.loads(out.read_text())["results"]
        res = sorted([r for r in old if r["G"] not in {x["G"] for x in res}] + res, key=lambda r: r["G"])
    meta = dict(script="benchmarks/bench_pose_cache.py", args=vars(a), total_s=time.perf_counter() - t0,
                note="shared 2-core machine (other jobs running): CPU times of the solver process with "
                     "NUMBA_NUM_THREADS=1 are the robust measure; both include the exact gap passes every "
                     "--gap-check passes (gap sampling needs them)")
    from gaplab.core.atomic import write_text_atomic
    write_text_atomic(out, json.dumps(clean(dict(meta=meta, results=res)), indent=1))
    plot(res, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')} in {meta['total_s']:.0f} s")


if __name__ == "__main__":
    main()
