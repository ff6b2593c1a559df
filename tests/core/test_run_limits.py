"""Runs that end, memory that is bounded, statuses that agree with the gap: one
large label, endless runs and their trace, and the status of a run whose final
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

from gaplab.core import Solver
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


# ============================================================ one large label
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


# ============================================================ runs that can never end
def test_gap_check_inf_without_any_budget_is_refused(toy):
    from gaplab.core.config import check_run_ends
    with pytest.raises(ValueError, match="never stop: gap_check=inf"):
        check_run_ends(math.inf, math.inf, 1e-3, math.inf)
    # a budget, or asking to stop on the heuristic gap, makes it a run that ends
    check_run_ends(math.inf, 5.0, 1e-3, math.inf)
    check_run_ends(math.inf, math.inf, 1e-3, math.inf, stop_on_heuristic_gap=True)
    check_run_ends(math.inf, math.inf, 1e-3, 10)


def test_solver_run_refuses_the_endless_combination(toy):
    # the endless combination: Solver(..., gap_check=inf, gap_threshold=1e-3, max_passes=inf).run()
    s = Solver(toy, gap_check=math.inf, gap_threshold=1e-3, max_passes=math.inf)
    with pytest.raises(ValueError, match="never stop: gap_check=inf"):
        s.run()
    assert s.oracle_calls == 0  # refused before any work
    s = Solver(toy, gap_check=math.inf, gap_threshold=1e-3, max_passes=5)
    with pytest.raises(ValueError, match="never stop: gap_check=inf"):
        s.run(max_passes=math.inf)
    # a caller that ends the run itself (a regularization path checks the gap on its own) may
    res = s.run(max_passes=math.inf, callback=lambda solver, rec: solver.effective_passes >= 3)
    assert res.status == Status.STOPPED


def test_cli_refuses_the_endless_train_in_one_line():
    p = subprocess.run([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--gap-check", "inf",
                        "--max-passes", "inf"], capture_output=True, text=True, timeout=60, env=ENV)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "gap_check=inf" in lines[0] and "never stop" in lines[0], p.stderr


def test_stop_on_the_heuristic_gap_when_asked_ends_the_run(toy):
    s = Solver(toy, lam=0.1, gap_check=math.inf, gap_threshold=1e-2, max_passes=math.inf,
               stop_on_heuristic_gap=True)
    res = s.run(final_gap_check=False)
    assert res.status == Status.CONVERGED_HEURISTIC and res.heuristic_gap <= 1e-2
    assert math.isnan(res.exact_gap)  # no exact gap was computed: the status says "heuristic"


def test_the_trace_of_an_unbounded_run_stays_bounded(toy):
    limit = 64
    # no budget that ends it (a time limit of 11 days): only the callback does
    s = Solver(toy, lam=0.1, gap_check=1, gap_threshold=0, max_passes=math.inf, time_limit=1e6, trace_limit=limit)
    longest = []
    seen = []

    def callback(solver, rec):
        longest.append(len(solver.trace()))
        return solver.n_trace_records >= 1000

    res = s.run(callback=callback, final_gap_check=False)
    assert res.status == Status.STOPPED and s.n_trace_records >= 1000
    assert max(longest) <= limit and len(res.trace) <= limit
    assert s.trace_records_dropped == s.n_trace_records - len(res.trace) > 0
    passes = [r["effective_passes"] for r in res.trace]
    assert passes == sorted(passes) and passes[0] == res.trace[0]["effective_passes"]
    assert res.trace[-1]["effective_passes"] == res.effective_passes  # the newest records are kept
    # records made after a point are still found by their number
    n0 = s.n_trace_records
    s.run(max_passes=res.effective_passes + 4, final_gap_check=False)  # gap passes count as passes
    new = s.trace(since=n0)
    assert len(new) == s.n_trace_records - n0 == 4
    seen.extend(new)
    assert [r["kind"] for r in seen] == ["pass", "gap_check"] * 2


def test_the_trace_of_a_time_bounded_run_stays_bounded(toy):
    # a gap check every pass on the toy writes hundreds of records in 2 s even on a busy machine
    s = Solver(toy, lam=0.1, gap_check=1, max_passes=math.inf, time_limit=2.0, trace_limit=16)
    res = s.run()
    assert res.status == Status.TIME_LIMIT and len(res.trace) <= 16 < s.n_trace_records


# ============================================================ status agrees with the gap
def test_a_budget_end_whose_final_exact_gap_meets_the_threshold_is_converged():
    X, Y = _seqs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = SSVM(lam=1e3, max_passes=2, gap_threshold=1e-3).fit(X, Y)
    assert est.dual_gap_ <= 1e-3
    assert est.result_.status == Status.CONVERGED


def test_the_warning_compares_the_gap_it_names():
    X, Y = _seqs()
    with pytest.warns(ConvergenceWarning) as rec:
        est = SSVM(lam=1e-3, max_passes=2, gap_threshold=1e-9).fit(X, Y)
    assert est.result_.status == Status.MAX_PASSES and est.dual_gap_ > 1e-9
    msg = str(rec[0].message)
    shown = float(msg.split("duality gap ")[1].split(" ")[0])
    assert shown > 1e-9 and math.isclose(shown, est.dual_gap_, rel_tol=1e-5)


def test_cli_train_with_huge_lam_reports_converged(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--lam", "1e100",
                        "--max-passes", "2", "--quiet", "--out", str(out)], capture_output=True, text=True,
                       timeout=120, env=ENV)
    assert p.returncode == 0, p.stderr
    import json
    r = json.loads(out.read_text())
    assert r["exact_gap"] <= 1e-3 and r["status"] == "converged"


def test_a_run_stopped_by_its_budget_with_a_large_gap_keeps_its_status(toy):
    res = Solver(toy, lam=1e-4, max_passes=1, gap_threshold=1e-12).run()
    assert res.exact_gap > 1e-12 and res.status == Status.MAX_PASSES


# ============================================================ budgets smaller than a pass
def test_a_budget_of_one_more_oracle_call_makes_that_call():
    """run(max_passes=passes + 1/n) makes exactly one more oracle call, whatever the rounding of
    (c/n + 1/n)·n (at c = 7, n = 10 it is 7.999…: floored, the call is lost, and a regularization
    path advancing one call at a time would never move)."""
    model = load_problem("toy", n=10).model
    s = Solver(model, lam=0.1, sampling="uniform", gap_check=math.inf, gap_threshold=0, max_passes=0.7)
    s.run(final_gap_check=False)
    assert s.oracle_calls == 7
    for k in range(8, 30):
        s.run(max_passes=s.effective_passes + 0.1, final_gap_check=False)
        assert s.oracle_calls == k


_TINY_BUDGETS = textwrap.dedent("""
    import math, sys
    from gaplab.core.problems import load_problem
    from gaplab.core.regpath import PathConfig, grid_search, regularization_path
    model = load_problem("toy", n=10).model
    what = sys.argv[1]
    if what == "grid":
        r = grid_search(model, [1.0, 0.1], max_passes_per_point=1e-308)
    else:
        r = regularization_path(model, PathConfig(eps=0.5, **{what: 1e-308}))
    print(len(r), r.end_reason if hasattr(r, "end_reason") else "")
""")


@pytest.mark.parametrize("what", ["max_passes_per_breakpoint", "check_every", "grid"])
def test_a_path_or_grid_with_a_budget_below_one_call_ends(what):
    """A per-point budget (or a chunk) below one oracle call ends the point instead of looping
    with no step."""
    p = subprocess.run([sys.executable, "-c", _TINY_BUDGETS, what], capture_output=True, text=True, env=ENV,
                       timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]


def test_a_cache_size_beyond_the_int64_pools_is_refused_in_one_line():
    from gaplab.core.config import MAX_CACHE_SIZE, CacheConfig
    with pytest.raises(ValueError, match=r"cache size must be an int in \[1, "):
        CacheConfig(enabled=True, size=MAX_CACHE_SIZE + 1)
    p = subprocess.run([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--cache-size",
                        "99999999999999999999", "--max-passes", "1", "--quiet"], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].startswith("gaplab train: error:") and "cache size" in p.stderr
