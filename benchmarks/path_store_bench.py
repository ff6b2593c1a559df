"""The ε-approximate regularization path on CoNLL-2000 streamed to an on-disk path store:
peak RSS, store size, I/O time against wall and solver time, and lazy reads.

    GAPLAB_DATA=DIR python benchmarks/path_store_bench.py [--eps 0.1] [--time-limit S]

The whole path runs (to its end: ρ <= 0 or λ_min) unless --time-limit is given; test F1 is not
computed (as ``gaplab path --no-test-error``). Writes benchmarks/results/path_store_conll.json
(--out to change). The store goes to a temporary directory (removed unless --keep-store DIR).

Numbers:
* peak_rss_gb: the process's peak resident set (``ru_maxrss``), model and data included;
  rss_samples: RSS every 0.5 s (psutil) with the breakpoint count at that time;
* store_bytes: size of the store directory at the end;
* io_time_s: time spent in the store writes (encoding, writing, fsync, manifest), measured
  around each write in the path's thread; wall_time_s: the path's wall time (regularization_path
  call, after the model is loaded and the kernels compiled); solver_time_s: Σ of the solver's
  own time at the breakpoints.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from gaplab.core.atomic import write_text_atomic

RESULTS = Path(__file__).resolve().parent / "results"


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--time-limit", type=float, default=math.inf)
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--out", default=str(RESULTS / "path_store_conll.json"))
    ap.add_argument("--keep-store", default=None, help="write the store here and keep it")
    ap.add_argument("--store-compress", action="store_true", help="deflate the weights' values too")
    args = ap.parse_args(argv)

    from gaplab.core import ChainModel, SolverConfig
    from gaplab.core.datasets.conll import load_conll2000
    from gaplab.core.regpath.store import store_size_bytes
    from gaplab.core.regpath import PathConfig, RegPath, regularization_path

    t0 = time.perf_counter()
    train, test = load_conll2000(data_home=args.data_home)
    model = ChainModel(train)
    load_s = time.perf_counter() - t0
    rss_after_load = psutil.Process().memory_info().rss
    # compile the kernels on a two-sentence model (not timed, not in the path's RSS growth)
    tiny = ChainModel(train.subset(range(2)))
    regularization_path(tiny, PathConfig(eps=1.0, max_breakpoints=2))
    del tiny

    store = Path(args.keep_store) if args.keep_store else Path(tempfile.mkdtemp(prefix="gaplab-store-")) / "conll"
    count = [0]
    samples = []
    done = threading.Event()
    proc = psutil.Process()

    def sample():
        t_s = time.perf_counter()
        while not done.wait(0.5):
            samples.append((round(time.perf_counter() - t_s, 2), proc.memory_info().rss, count[0]))

    th = threading.Thread(target=sample, daemon=True)
    th.start()

    def cb(p):
        count[0] += 1
        print(f"{p.index:4d} λ={p.lam:10.4g} passes={p.passes:6.1f} time={p.time_s:7.2f}s gap={p.gap:.3g} "
              f"rss={proc.memory_info().rss / 2**30:.2f} GB {p.end}", flush=True)

    cfg = PathConfig(eps=args.eps, kappa=0.9, time_limit=args.time_limit)
    scfg = SolverConfig(sampling="gap")
    t1 = time.perf_counter()
    path = regularization_path(model, cfg, scfg, callback=cb, meta={"dataset": "conll2000"}, store=store,
                               overwrite=True, store_compress=args.store_compress)
    wall = time.perf_counter() - t1
    done.set()
    th.join()
    io = path.io_stats
    size = store_size_bytes(store)

    # lazy reads: open, the metadata, w_at at random λ (one breakpoint file each)
    t2 = time.perf_counter()
    opened = RegPath.open(store, model=model)
    open_s = time.perf_counter() - t2
    rng = np.random.default_rng(0)
    lo = opened.lam_end if opened.lam_end > 0 else opened.lams[-1] / 10
    lams = np.exp(rng.uniform(math.log(lo), math.log(opened.lams[0]), 10))
    t3 = time.perf_counter()
    for lam in lams:
        opened.w_at(float(lam))
    w_at_s = (time.perf_counter() - t3) / len(lams)
    files = [f["nnz"] for f in opened._files]
    solver_time = float(np.nansum(opened.column("solver_time_s")))
    out = {
        "what": "ε-approximate regularization path on CoNLL-2000 streamed to a path store",
        "dataset": "conll2000", "n": int(model.n), "d": int(model.d), "eps": args.eps, "kappa": 0.9,
        "solver": "BCFW + gap sampling (SolverConfig(sampling='gap'))",
        "store_compress": bool(args.store_compress), "load_avg_at_end": os.getloadavg(),
        "time_limit_s": args.time_limit if math.isfinite(args.time_limit) else None,
        "breakpoints": len(path), "end": path.end_reason, "lam_first": float(path.lams[0]),
        "lam_last": float(path.lams[-1]), "total_passes": path.total_passes,
        "load_time_s": load_s, "wall_time_s": wall, "path_time_s": path.total_time_s, "solver_time_s": solver_time,
        "io_time_s": io["io_time_s"], "io_fraction_of_wall": io["io_time_s"] / wall,
        "store_bytes": size, "store_gb": size / 1e9, "bytes_written": io["bytes_written"],
        "dense_w_bytes_per_breakpoint": 8 * int(model.d),
        "nnz_min": int(min(files)), "nnz_max": int(max(files)), "nnz_mean": float(np.mean(files)),
        "peak_rss_bytes": _peak_rss_bytes(), "peak_rss_gb": _peak_rss_bytes() / 2**30,
        "rss_after_load_gb": rss_after_load / 2**30,
        "rss_samples": [{"t_s": t, "rss_gb": r / 2**30, "breakpoints": c} for t, r, c in samples[::4]],
        "open_s": open_s, "w_at_mean_s": w_at_s,
        "targets": {"peak_rss_gb<=2": _peak_rss_bytes() / 2**30 <= 2.0, "store_gb<=1.5": size / 1e9 <= 1.5,
                    "io<=10%_of_wall": io["io_time_s"] / wall <= 0.10},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out, json.dumps(out, indent=1, default=float))
    print(json.dumps({k: v for k, v in out.items() if k != "rss_samples"}, indent=1, default=float))
    if not args.keep_store:
        shutil.rmtree(store.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
