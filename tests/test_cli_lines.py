"""Results that report numba's compile time apart from the solver's (issue 26, item 12)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from gaplab.core import Solver
from gaplab.core import kernels as kr
from gaplab.core.problems import load_problem

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)


# ============================================================ compile time apart
def _fake_compile(monkeypatch, name, seconds):
    """Make the first call of kernels.<name> hold numba's compiler lock for ``seconds`` (as a
    compile on a cold cache does) before the real call."""
    from numba.core.compiler_lock import global_compiler_lock
    real = getattr(kr, name)
    calls = []

    def wrapped(*args, **kw):
        if not calls:
            with global_compiler_lock:
                time.sleep(seconds)
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(kr, name, wrapped)


def test_compile_time_is_reported_apart_from_the_solver_time(monkeypatch):
    model = load_problem("toy").model
    Solver(model, lam=0.1, max_passes=2, gap_check=1).run()  # compiled for real, outside the test
    _fake_compile(monkeypatch, "run_steps", 0.4)
    _fake_compile(monkeypatch, "exact_gap_pass", 0.3)
    t0 = time.perf_counter()
    res = Solver(model, lam=0.1, max_passes=4, gap_check=1).run()
    elapsed = time.perf_counter() - t0
    assert res.compile_time_s >= 0.7
    assert res.wall_time_s <= elapsed - 0.7 + 0.05
    assert res.wall_time_s < 0.3  # toy passes take microseconds; the time axis has no compile in it
    times = [r["wall_time_s"] for r in res.trace]
    assert times == sorted(times) and times[-1] <= res.wall_time_s
    assert res.to_dict()["compile_time_s"] == res.compile_time_s


def test_cli_reports_compile_time_and_says_compiling_on_a_cold_cache(tmp_path):
    env = dict(ENV, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))  # a cold cache: everything compiles
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--max-passes", "3",
                        "--progress", "--out", str(out)], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "compiling" in p.stderr
    r = json.loads(out.read_text())
    assert r["compile_time_s"] > 1.0 > r["wall_time_s"]  # the toy's 3 passes are milliseconds of work
    assert all(rec["wall_time_s"] <= r["wall_time_s"] for rec in r["trace"])
    assert "numba compile (s)" in p.stdout
