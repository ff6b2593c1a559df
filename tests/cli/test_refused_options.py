"""Options that would crash, hang or mislead are refused up front with one line naming the
option (λ whose objective is not finite, ``--every 0``), and the ones that work say what they did
(an endless budget with a time limit runs; the final exact gap pass over the budget is explained)."""
from __future__ import annotations

import pytest

from cli_runs import gaplab
from gaplab.core import SolverConfig
from gaplab.core.regpath import PathConfig


def test_max_passes_inf_with_a_time_limit_runs():
    r = gaplab("train", "--dataset", "ocr-small", "--max-passes", "inf", "--time-limit", "0.5", "--gap-threshold", "0",
               "--progress", "--quiet")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("lam", ["1e-320", "1e-200", "1e300"])
def test_lam_whose_objective_is_not_finite_is_refused(lam):
    r = gaplab("train", "--dataset", "ocr-small", "--lam", lam, "--max-passes", "2")
    assert r.returncode == 2 and "lam" in r.stderr and "finite" in r.stderr, (r.returncode, r.stderr)
    with pytest.raises(ValueError, match="lam"):
        SolverConfig(lam=float(lam))
    if float(lam) < 1:  # a path or grid cannot go there either (refused up front, not mid-run)
        with pytest.raises(ValueError, match="lam_min"):
            PathConfig(lam_min=float(lam))
        r = gaplab("grid", "--dataset", "ocr-small", "--lams", f"1,{lam}")
        assert r.returncode == 2 and "λ of the grid" in r.stderr


def test_every_zero_is_refused():
    r = gaplab("path", "--every", "0")
    assert r.returncode == 2 and "--every" in r.stderr


def test_budget_overrun_by_the_final_gap_pass_is_explained():
    r = gaplab("train", "--dataset", "ocr-small", "--max-passes", "2", "--gap-threshold", "0")
    assert r.returncode == 0
    line = next(ln for ln in r.stdout.splitlines() if "effective passes" in ln)
    assert "3.0" in line and "final exact gap pass" in line
