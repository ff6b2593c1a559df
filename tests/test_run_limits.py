"""Runs that end, memory that is bounded, statuses that agree with the gap (issue 26, items 2,
3 and 10): one large label, endless runs and their trace, and the status of a run whose final
exact gap meets the threshold."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from gaplab.core import Solver, SolverConfig
from gaplab.core.config import Status
from gaplab.core.estimator import SSVM, ConvergenceWarning
from gaplab.core.problems import load_problem

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)


def _seqs(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(2, 5)), 3)) for _ in range(n)]
    Y = [(x[:, 0] > 0).astype(np.int64) for x in X]
    return X, Y


@pytest.fixture(scope="module")
def toy():
    return load_problem("toy").model


# ============================================================ item 2: one large label
_BIG_LABEL = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from gaplab.core.estimator import SSVM
    # the address space this process has now, plus 1 GiB: a label of 100,000 (K² = 10^10
    # transition statistics) cannot fit, nor can a list of 2**63 label names
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2 ** 30, resource.RLIM_INFINITY))
    big = int(sys.argv[1])
    dtype = np.uint64 if big >= 2 ** 63 else np.int64
    Y = [np.array([0, 1, 0], dtype), np.array([1, 0, big], dtype)]
    try:
        SSVM(max_passes=1).fit([np.ones((3, 2))] * 2, Y)
    except ValueError as exc:
        print("refused:", exc)
    except MemoryError:
        print("MemoryError")
""")


@pytest.mark.parametrize("big", [2 ** 63, 100_000, 10 ** 12])
def test_one_large_label_is_refused_before_any_allocation(big):
    p = subprocess.run([sys.executable, "-c", _BIG_LABEL, str(big)], capture_output=True, text=True,
                       timeout=300, env=ENV)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "refused:" in p.stdout, (p.stdout, p.stderr[-2000:])
    msg = p.stdout
    if big >= 2 ** 63:
        assert "int64" in msg and str(big) in msg
    else:
        assert f"K = {big + 1}" in msg and "at most K =" in msg and "GiB" in msg


def test_the_label_bound_leaves_ordinary_label_counts_alone():
    X, Y = _seqs()
    Y = [y * 40 for y in Y]  # labels 0 and 40: K = 41, a small model
    est = SSVM(max_passes=2, gap_threshold=0).fit(X, Y)
    assert len(est.label_names_) == 41
