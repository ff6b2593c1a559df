"""Picking a λ on the app's own CoNLL path: the time to show w(λ)'s numbers (nnz, test error,
chunk F1) read from the path lab's on-disk store (``PathLab.pick(λ)``), against loading the path's
dual point into the session's solver by replaying the breakpoints since the nearest solver
checkpoint (``PathLab.pick(λ, load=True)``; on CoNLL few solver copies fit the lab's 256 MB
checkpoint budget, so a late λ replays most of the path).

    GAPLAB_DATA=DIR python benchmarks/path_pick_bench.py [--sentences N]

``--sentences N`` (default 0: all 8,936) uses the first N training sentences (the full test set);
``--budget-copies C`` then sets the lab's checkpoint budget to C solver copies, as many as fit
the real 256 MB budget on the full data set, so that the replays are
as long as they are on the full path. The path is the tab's default ε-path (ε = 0.1,
λ_min = 1e-4, at most 200 passes per breakpoint), traced by the app's PathLab in a Session.

Numbers (seconds, medians over the picks; written to benchmarks/results/path_pick_conll*.json):
* pick_w_at_s: from ``PathLab.pick(λ)`` to the published w_at(λ) numbers (read from the store
  + test error + chunk F1); read_s: the store read alone;
* replay_load_s: from ``PathLab.pick(λ, load=True)`` to the
  session back to idle with the loaded solver (replay + warm start + a counted exact gap pass).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def _register_subset(n_sent: int) -> str:
    from gaplab.core.datasets.conll import _locate, make_conll_datasets, parse_conll
    from gaplab.core.builtin_problems import _chain_model, _conll_evaluate
    from gaplab.core.problems import register_problem

    def loader(data_home=None):
        d = _locate(data_home, download=False)
        train = parse_conll(d / "train.txt")[:n_sent]
        test = parse_conll(d / "test.txt")
        return make_conll_datasets(train, test)

    name = f"conll-first{n_sent}"
    register_problem(name, loader, _chain_model, default_lam=0.01, description=f"CoNLL-2000, first {n_sent}",
                     bundled=False, metric="chunk F1", higher_is_better=True, evaluate=_conll_evaluate,
                     replace=True)
    return name


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=0)
    ap.add_argument("--budget-copies", type=float, default=1.0)
    ap.add_argument("--picks", type=int, default=3)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    from gaplab.app import pathlab_worker as pl
    from gaplab.app.session import Session

    dataset = _register_subset(args.sentences) if args.sentences else "conll2000"
    t0 = time.perf_counter()
    s = Session(dataset=dataset)
    assert s.wait_idle(1800) and s.status == "idle", s.messages()
    load_s = time.perf_counter() - t0
    solver_bytes = int(s.solver.memory_bytes())
    if args.sentences:
        pl.CHECKPOINT_BUDGET_BYTES = int(args.budget_copies * solver_bytes)
    lab = s.path
    lab.param.update(eps=args.eps)
    t0 = time.perf_counter()
    assert lab.start()
    while not lab.wait(5):
        print(f"  path: {lab.snapshot.n_points} breakpoints, {time.perf_counter() - t0:.0f} s", flush=True)
    trace_s = time.perf_counter() - t0
    snap = lab.snapshot
    lams = np.asarray(snap.cols["lam"])
    J = len(lams)
    ck = snap.checkpoints
    print(f"{dataset}: {J} breakpoints in {trace_s:.1f} s, checkpoints {ck}, solver copy "
          f"{solver_bytes / 2**20:.1f} MB, end {snap.end}", flush=True)
    # late λ: inside the last pieces, away from the checkpoints
    targets = [float(np.sqrt(lams[j] * lams[j + 1])) for j in range(J - 2, max(J - 2 - args.picks, 0), -1)
               if j not in ck]
    fast, reads, slow, rows = [], [], [], []
    for lam in targets:
        t1 = time.perf_counter()
        assert lab.pick(lam)
        while lab.snapshot.w_info.get("lam") != lam:
            time.sleep(0.002)
        dt = time.perf_counter() - t1
        wi = lab.snapshot.w_info
        fast.append(dt)
        reads.append(wi["read_s"])
        pend = lab.snapshot.pending_load
        t1 = time.perf_counter()
        assert lab.pick(lam, load=True)
        time.sleep(0.05)
        assert s.wait_idle(3600)
        dl = time.perf_counter() - t1
        slow.append(dl)
        rows.append({"lam": lam, "piece": wi["piece"], "pick_w_at_s": dt, "read_s": wi["read_s"],
                     "replay_load_s": dl, "replayed": pend.get("replay"), "est_s": pend.get("est_s"),
                     "chunk_f1": wi["test_metric"], "test_error": wi["test_error"], "nnz": wi["nnz"],
                     "solver_w_equals_w_at": bool(np.array_equal(s.solver.w, lab.w_at(lam)))})
        print(json.dumps(rows[-1]), flush=True)
    out = {
        "dataset": dataset, "n": s.problem.n, "d": int(s.problem.model.d), "eps": args.eps, "breakpoints": J,
        "end": snap.end, "trace_s": trace_s, "load_s": load_s, "solver_copy_mb": solver_bytes / 2**20,
        "checkpoint_budget_mb": pl.CHECKPOINT_BUDGET_BYTES / 2**20, "checkpoints": list(ck),
        "median_pick_w_at_s": statistics.median(fast) if fast else None,
        "median_read_s": statistics.median(reads) if reads else None,
        "median_replay_load_s": statistics.median(slow) if slow else None,
        "picks": rows, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": platform.platform()},
    }
    s.close()
    RESULTS.mkdir(exist_ok=True)
    dest = Path(args.out) if args.out else RESULTS / (f"path_pick_conll_first{args.sentences}.json" if args.sentences
                                                      else "path_pick_conll.json")
    from gaplab.core.atomic import write_text_atomic
    write_text_atomic(dest, json.dumps(out, indent=1))
    print(f"wrote {dest}: pick (w_at) {out['median_pick_w_at_s']:.3f} s vs replay+load "
          f"{out['median_replay_load_s']:.1f} s (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
