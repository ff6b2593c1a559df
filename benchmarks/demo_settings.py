"""Which settings of the demo sweep (benchmarks/specs/demo_tiny.toml) show the paper's message?

Runs the demo's methods serially, in this process, on a few settings (dataset, λ, pass budget,
gap-check period) and prints, per setting and λ, the median final exact duality gap over the
seeds of every method and their ranking (smallest gap first), as JSON lines. Short runs: keep
the settings few on a shared machine.

    python benchmarks/demo_settings.py '[{"dataset": "ocr-small[:60]", "lams": [0.1, 0.01],
        "passes": 100, "gap_check": 10, "seeds": 3}]' > benchmarks/results/demo_settings.jsonl
"""
from __future__ import annotations

import json
import statistics
import sys
import time
import tomllib
from pathlib import Path

from gaplab.core.sweep import execute_run, expand_runs, load_spec

SPEC = Path(__file__).with_name("specs") / "demo_tiny.toml"


def measure(setting: dict, base: dict) -> dict:
    spec = dict(base)
    spec["datasets"] = [setting["dataset"]]
    spec["lams"] = setting["lams"]
    spec["seeds"] = setting.get("seeds", 2)
    if "methods" in setting:
        spec["methods"] = {k: v for k, v in base["methods"].items() if k in setting["methods"]}
    spec["budgets"] = {"laptop": {"max_passes": setting["passes"], "gap_check": setting.get("gap_check", 10)}}
    runs = expand_runs(load_spec(spec, budget="laptop"))
    t0 = time.perf_counter()
    finals: dict = {}
    for cfg in runs:
        out = execute_run(cfg)
        finals.setdefault(str(cfg["lam"]), {}).setdefault(cfg["method"], []).append(out["summary"]["exact_gap"])
    med = {lam: {m: statistics.median(v) for m, v in d.items()} for lam, d in finals.items()}
    return {"setting": setting, "runs": len(runs), "seconds": round(time.perf_counter() - t0, 1),
            "median_final_exact_gap": med, "ranking": {lam: sorted(d, key=d.get) for lam, d in med.items()}}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    base = tomllib.loads(SPEC.read_text(encoding="utf-8"))
    for setting in json.loads(argv[1]):
        print(json.dumps(measure(setting, base)), flush=True)


if __name__ == "__main__":
    main(sys.argv)
