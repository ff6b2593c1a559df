"""A certificate that never lies: an exact duality gap below −tolerance (a max oracle that is not
exact) ends a run as ``oracle_not_exact``, never ``converged``, on the Solver, the path, the grid
and in the app's status line; the report names the worst block and a labelling that beats the
oracle's there, checked here against the model's own loss and joint_feature."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gaplab.core import Solver
from gaplab.core.certify import NEGATIVE_GAP_RTOL, is_impossible_gap, negative_gap_tolerance
from gaplab.core.config import Status
from gaplab.core.models import PythonModel
from gaplab.toy_examples.multilabel import MultiLabel, load_multilabel


class IgnoresLoss(MultiLabel):
    """The oracle of the issue's reproduction: plain decoding, the loss forgotten."""

    def loss_augmented_inference(self, x, y, w):
        return self.inference(x, w)


def _model(cls):
    train, _ = load_multilabel()
    return PythonModel(cls(8, 4), train)


def _dense_score(model, i, w, y):
    """L_i(y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩ from the author's own loss and joint_feature."""
    author = model.model
    x, yi = model.data.X[i], model.data.Y[i]
    y = np.asarray(y)
    return float(author.loss(yi, y)) + float(w @ (author.joint_feature(x, y) - author.joint_feature(x, yi)))


def test_tolerance_is_relative_to_the_objective_and_strict():
    assert negative_gap_tolerance(2.0, 1.0) == pytest.approx(2.0 * NEGATIVE_GAP_RTOL)
    assert not is_impossible_gap(-1.9 * NEGATIVE_GAP_RTOL, 2.0, 1.0)     # round-off
    assert is_impossible_gap(-2.1 * NEGATIVE_GAP_RTOL, 2.0, 1.0)
    assert not is_impossible_gap(0.0, 0.0, 0.0) and not is_impossible_gap(math.nan, 1.0, 1.0)


@pytest.mark.parametrize("step, cache", [("fw", False), ("pairwise", True)])
def test_a_loss_ignoring_oracle_is_never_certified(step, cache):
    model = _model(IgnoresLoss)
    solver = Solver(model, lam=0.1, step=step, cache={"enabled": cache}, gap_threshold=1e-3, max_passes=200)
    res = solver.run()
    assert res.status == Status.ORACLE_NOT_EXACT and res.status != Status.CONVERGED
    assert res.exact_gap < -negative_gap_tolerance(res.primal, res.dual)
    rep = res.not_exact
    assert rep is not None and res.to_dict()["status"] == "oracle_not_exact"
    ex = solver.fresh_exact_gap
    assert rep["block"] == int(np.argmin(ex.block_gaps)) and rep["block_gap"] < 0
    # the labelling named beats the oracle's at the final w, by the model's own definitions
    i, w = rep["block"], solver.w
    assert rep["labelling"] is not None
    better = _dense_score(model, i, w, rep["labelling"])
    oracle = _dense_score(model, i, w, rep["oracle_labelling"])
    assert better == pytest.approx(rep["score"]) and oracle == pytest.approx(rep["oracle_score"])
    assert better > oracle + 1e-9
    if step == "pairwise":  # the active set keeps the labellings the run has seen: one of them beats it
        assert rep["source"] in ("active set", "ground truth")
    msg = rep["message"]
    assert "\n" not in msg and f"block {i}" in msg and str(rep["labelling"]) in msg and "not exact" in msg


def test_a_sound_oracle_still_converges():
    res = Solver(_model(MultiLabel), lam=0.1, step="pairwise", gap_threshold=1e-3, max_passes=200).run()
    assert res.status == Status.CONVERGED and 0 <= res.exact_gap <= 1e-3 and res.not_exact is None


def test_path_and_grid_certify_no_point_with_a_negative_gap():
    from gaplab.core.regpath import grid_search, regularization_path
    model = _model(IgnoresLoss)
    path = regularization_path(model, eps=1e-2, lam_min=1e-2, time_limit=120)
    bad = [r for r in path.rows() if r["status"] == "oracle_not_exact"]
    assert bad and path.end_reason == "oracle_not_exact"
    assert not any(r["certified"] for r in bad) and all(r["gap"] < 0 for r in bad)
    assert all(r["gap"] >= 0 for r in path.rows() if r["certified"] and r["status"] != "init")
    grid = grid_search(model, [1.0, 0.1], eps=1e-2, time_limit=120)
    assert [r["status"] for r in grid.rows()] == ["oracle_not_exact"] * 2
    assert not any(r["certified"] for r in grid.rows())


def test_the_app_status_line_says_the_oracle_is_not_exact():
    from gaplab.app.views.status import StatusView
    from gaplab.core.problems import register_problem, unregister_problem
    from app_session import idle_session
    register_problem("ignores-loss-toy", load_multilabel, lambda train: PythonModel(IgnoresLoss(8, 4), train),
                     default_lam=0.1, description="a multi-label model whose oracle forgets the loss", quick=True)
    try:
        s = idle_session(dataset="ignores-loss-toy")
        try:
            s.step_n(30 * s.solver.n)
            assert s.wait_idle(120)
            ex = s.compute_exact_gaps()
            assert ex.gap < 0
            view = StatusView()
            view.update(s.snapshot)
            assert "oracle not exact" in view.panel.object and "max oracle is not exact" in view.panel.object
        finally:
            s.close()
    finally:
        unregister_problem("ignores-loss-toy")
