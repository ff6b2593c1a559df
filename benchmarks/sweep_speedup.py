"""Speed-up of ``gaplab sweep`` with 1 vs 2 LocalCluster workers (and in-process serial) on a
small sweep: the 8 combinations of benchmarks/specs/ocr_small.toml at λ = 0.01, 2 seeds,
60 passes on OCR-small (16 runs). Each configuration writes a fresh store; the wall time
includes starting the cluster. Configurations are interleaved over ``--repeats`` rounds.

Besides the wall time, every round records what tells a clean number from a loaded machine:

- ``run_cpu_s``: the sum of the runs' own CPU seconds (``cpu_s`` of each run in the store's
  manifest: CPU time of the worker process during the solver run, warm-up excluded) and
  ``run_solver_s``: the sum of the runs' solver wall seconds. On idle cores the two agree; when
  the cores are shared, solver seconds exceed CPU seconds (the runs wait for a core).
- ``load1``: the 1-minute load average sampled every 0.5 s during the round (start, mean, max,
  end). This sweep itself adds about 1 (one worker) or 2 (two workers) to it.
- ``machine_busy_cpu_s``: CPU seconds all processes of the machine used during the round
  (/proc/stat, Linux), and ``others_cpu_s`` = that minus ``run_cpu_s`` (other jobs plus the
  cluster's own overhead: scheduler, nanny, start-up and warm-up).

On a quiet machine (load1 at the start well under 1) the 2-vs-1-worker speed-up should approach
the ratio of the rounds' walls with run_cpu_s about equal; rerun there for the README's number:

    python benchmarks/sweep_speedup.py --repeats 3      # JSON to benchmarks/out/sweep_speedup.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_json  # noqa: E402

SPEC = Path(__file__).resolve().parent / "specs" / "ocr_small.toml"


def small_spec(passes, seeds):
    d = tomllib.loads(SPEC.read_text())
    d.update(name="speedup", lams=[0.01], seeds=seeds)
    d.pop("budgets")
    d["budget"] = {"max_passes": passes, "gap_check": 10}
    return d


def machine_busy_cpu_s() -> float | None:
    """CPU seconds (all cores, all processes) the machine has been busy since boot (/proc/stat:
    every state but idle and iowait), or None where /proc/stat is missing."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    ticks = [int(x) for x in fields[1:]]
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]   # user nice system idle iowait irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


class LoadSampler(threading.Thread):
    """The 1-minute load average every ``every`` seconds until stopped."""

    def __init__(self, every=0.5):
        super().__init__(daemon=True)
        self.every, self.samples, self._stop_event = every, [], threading.Event()

    def run(self):
        while not self._stop_event.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop_event.wait(self.every)

    def stop(self):
        self._stop_event.set()
        self.join()
        self.samples.append(os.getloadavg()[0])
        s = self.samples
        return {"start": s[0], "mean": statistics.fmean(s), "max": max(s), "end": s[-1]}


def one_round(spec, workers):
    from gaplab.core.sweep import Store, run_sweep
    d = Path(tempfile.mkdtemp(prefix="gaplab-speedup-"))
    try:
        sampler = LoadSampler()
        busy0 = machine_busy_cpu_s()
        sampler.start()
        t0 = time.perf_counter()
        rep = run_sweep(spec, d / "store", workers=workers)
        wall = time.perf_counter() - t0
        load = sampler.stop()
        busy1 = machine_busy_cpu_s()
        assert rep.done == rep.total and rep.failed == 0
        entries = Store(d / "store").manifest["runs"].values()
        cpu = sum(e["cpu_s"] for e in entries)
        solver = sum(e["summary"]["wall_time_s"] for e in entries)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    busy = None if busy0 is None or busy1 is None else busy1 - busy0
    return {"wall_s": wall, "runs": rep.total, "run_cpu_s": cpu, "run_solver_s": solver,
            "run_cpu_per_wall": cpu / wall, "load1": load, "machine_busy_cpu_s": busy,
            "others_cpu_s": None if busy is None else busy - cpu}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--passes", type=float, default=60)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--no-serial", action="store_true", help="only 1 and 2 workers")
    ap.add_argument("--out", default="sweep_speedup.json", help="file name under benchmarks/out/")
    args = ap.parse_args(argv)
    spec = small_spec(args.passes, args.seeds)
    configs = [("serial (in process)", 0), ("1 worker", 1), ("2 workers", 2)]
    if args.no_serial:
        configs = configs[1:]
    rounds = {label: [] for label, _ in configs}
    for r in range(args.repeats):
        for label, workers in (configs if r % 2 == 0 else configs[::-1]):  # alternate the order
            x = one_round(spec, workers)
            rounds[label].append(x)
            busy = "" if x["machine_busy_cpu_s"] is None else f", machine busy {x['machine_busy_cpu_s']:6.1f} CPU-s"
            print(f"{label:>20}: wall {x['wall_s']:6.1f} s, runs' CPU {x['run_cpu_s']:6.1f} s "
                  f"(solver {x['run_solver_s']:6.1f} s){busy}, load1 {x['load1']['start']:.2f} -> "
                  f"mean {x['load1']['mean']:.2f}, max {x['load1']['max']:.2f} ({x['runs']} runs)",
                  file=sys.stderr, flush=True)
    wall = {k: [x["wall_s"] for x in v] for k, v in rounds.items()}
    best = {k: min(v) for k, v in wall.items()}
    median = {k: statistics.median(v) for k, v in wall.items()}
    out = {"spec": "ocr_small.toml methods, lam 0.01", "runs": rounds["1 worker"][0]["runs"], "passes": args.passes,
           "seeds": args.seeds, "cpu_count": os.cpu_count(), "machine": platform.platform(),
           "rounds": rounds, "wall_s": wall, "best_wall_s": best, "median_wall_s": median,
           "median_run_cpu_s": {k: statistics.median(x["run_cpu_s"] for x in v) for k, v in rounds.items()},
           "median_load1_mean": {k: statistics.median(x["load1"]["mean"] for x in v) for k, v in rounds.items()},
           "speedup_2_vs_1_workers_best": best["1 worker"] / best["2 workers"],
           "speedup_2_vs_1_workers_median": median["1 worker"] / median["2 workers"]}
    path = write_json(args.out, out)
    print(json.dumps({k: v for k, v in out.items() if k != "rounds"}, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
