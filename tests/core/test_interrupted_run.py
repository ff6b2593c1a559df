"""Ctrl-C inside ``Solver.run()`` raises ``Interrupted`` with the result so far and keeps the
solver's state: the next ``run()`` ends where an uninterrupted run ends (the same iterates); and
run settings that could never stop or that do not fit a seed are refused."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from cli_runs import ENV
from gaplab.core import CacheConfig, ChainModel, Solver, SolverConfig, load_ocr


@pytest.fixture(scope="module")
def small():
    """A chain model on the first 40 OCR-small words, and the test set."""
    train, test = load_ocr("small")
    return ChainModel(train.subset(np.arange(40))), test


def test_solver_run_interrupted_keeps_state_and_continues(small):
    """Ctrl-C inside Solver.run(): Interrupted with the result so far; the second run() ends where
    an uninterrupted run ends (same iterates)."""
    model, _ = small
    cfg = SolverConfig(lam=0.01, sampling="gap", step="pairwise", cache=CacheConfig(enabled=True), max_passes=12,
                       gap_threshold=0, gap_check=3, seed=5)
    ref = Solver(model, cfg).run()
    s = Solver(model, cfg)
    calls = []

    def press_ctrl_c(solver, rec):
        calls.append(rec["kind"])
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGINT)
        return False

    from gaplab.core.interrupt import Interrupted
    with pytest.raises(Interrupted) as err:
        s.run(callback=press_ctrl_c)
    part = err.value.partial
    assert part.status.name == "INTERRUPTED" and 0 < part.effective_passes < 12
    assert isinstance(err.value, KeyboardInterrupt)
    res = s.run()
    assert res.status == ref.status and res.effective_passes == ref.effective_passes
    np.testing.assert_array_equal(res.w, ref.w)
    assert res.exact_gap == ref.exact_gap


def test_run_override_that_never_stops_is_refused():
    code = ("from gaplab.core import ChainModel, Solver, load_ocr\n"
            "s = Solver(ChainModel(load_ocr('small')[0].subset(range(10))), max_passes=5)\n"
            "try:\n    s.run(max_passes=float('inf'), gap_threshold=0)\n"
            "except ValueError as e:\n    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, env=ENV)
    assert "refused:" in r.stdout and "never stop" in r.stdout


def test_seeds_beyond_64_bits_are_refused():
    with pytest.raises(ValueError, match="2\\*\\*64"):
        SolverConfig(seed=2 ** 64)
    assert SolverConfig(seed=2 ** 64 - 1).seed == 2 ** 64 - 1
    assert SolverConfig(seed=np.uint32(7)).seed == 7
