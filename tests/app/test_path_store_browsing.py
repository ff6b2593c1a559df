"""Path stores in the app: the path lab streams its breakpoints to an on-disk store (no W in
memory, no breakpoint cap from d), and a saved path store can be opened and browsed: its rows
at once, w_at(λ) read from the store on a pick."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import random_chain_data
from gaplab.app import pathlab_pick
from gaplab.core import ChainModel
from gaplab.core.regpath import PathConfig, RegPath, regularization_path

SHORT = dict(eps=0.5, lam_min=0.1)


def _wait_w_info(lab, lam, timeout=30):
    t0 = time.time()
    while lab.snapshot.w_info.get("lam") != lam and time.time() - t0 < timeout:
        time.sleep(0.02)
    return lab.snapshot.w_info


def test_the_labs_path_is_streamed_to_a_store_and_read_back(sess, monkeypatch):
    lab = sess.path
    lab.param.update(**SHORT)
    assert lab.start() and lab.wait(120)
    snap = lab.snapshot
    assert snap.status == "done" and snap.n_points >= 5 and snap.store
    store = Path(snap.store)
    opened = RegPath.open(store, model=sess.problem.model)
    assert len(opened) == snap.n_points
    assert all(w is None for w in lab.path._W)  # no breakpoint weight kept in memory
    assert np.array_equal(opened.column("gap"), snap.cols["gap"])
    lam = float(np.sqrt(snap.cols["lam"][2] * snap.cols["lam"][3]))
    assert np.array_equal(lab.w_at(lam), opened.w_at(lam))
    assert lab.pick(lam) and sess.wait_idle(60)  # the replayed solver's w is w_at(λ) from the store
    assert np.array_equal(sess.solver.w, opened.w_at(lam))
    assert not lab.snapshot.pending_load
    # a pick whose replay would be long (CoNLL) reads w_at(λ) from the store and loads nothing more
    monkeypatch.setattr(pathlab_pick, "REPLAY_AUTO_S", -1.0)
    solver_before = sess.solver
    lam2 = float(np.sqrt(snap.cols["lam"][-2] * snap.cols["lam"][-3]))
    assert lab.pick(lam2)
    info = _wait_w_info(lab, lam2)
    w2 = opened.w_at(lam2)
    assert info["nnz"] == np.count_nonzero(w2) and info["norm"] == pytest.approx(np.linalg.norm(w2))
    assert info["test_error"] == pytest.approx(sess.problem.model.error(w2, sess.problem.test))
    pend = lab.snapshot.pending_load
    assert pend["lam"] == lam2 and pend["piece"] == opened.piece_at(lam2)[0] and sess.wait_idle(10)
    assert sess.solver is solver_before and sess.solver.lam == lam   # the solver was left alone
    assert lab.pick(lam2, load=True) and sess.wait_idle(60)   # the deferred load, on request
    assert np.array_equal(sess.solver.w, w2) and not lab.snapshot.pending_load
    lab.reset()
    assert not store.exists()  # the lab's temporary store goes with its path


def test_open_a_saved_store_and_pick_reads_w_at_lam(sess, tmp_path):
    model = sess.problem.model
    saved = regularization_path(model, PathConfig(**SHORT), meta={"dataset": sess.problem.name},
                                store=tmp_path / "s")
    lab = sess.path
    assert lab.open_store(tmp_path / "s")
    snap = lab.snapshot
    assert snap.opened and snap.status == "done" and snap.n_points == len(saved)
    assert np.array_equal(snap.cols["lam"], saved.lams)
    lam = float(np.sqrt(saved.lams[4] * saved.lams[5]))
    assert lab.pick(lam)
    t0 = time.time()
    while not lab.snapshot.w_info and time.time() - t0 < 30:
        time.sleep(0.05)
    info = lab.snapshot.w_info
    w = RegPath.open(tmp_path / "s").w_at(lam)
    assert info["lam"] == lam and info["nnz"] == np.count_nonzero(w) and info["piece"] == 4
    assert info["test_error"] == pytest.approx(model.error(w, sess.problem.test))
    assert lab.snapshot.picked == lam


def test_a_store_of_another_dataset_is_refused_with_a_notification(sess, tmp_path):
    other = ChainModel(random_chain_data(n=5, K=3, F=4, seed=1))
    regularization_path(other, PathConfig(eps=0.5, lam_min=0.5), store=tmp_path / "o")
    before = sess.path.snapshot
    assert not sess.path.open_store(tmp_path / "o")
    kind, msg = sess.messages()[-1][:2]
    assert "path store" in msg and str(tmp_path / "o") in msg and "this model has" in msg
    assert sess.path.snapshot.n_points == before.n_points
    assert not sess.path.open_store(tmp_path / "missing")
    assert "does not exist" in sess.messages()[-1][1]


def test_the_tab_plots_the_recorded_test_metric_from_the_rows_without_reading_weights(sess, tmp_path,
                                                                                      monkeypatch):
    pytest.importorskip("panel")
    from gaplab.app.path_tab import PathView
    from gaplab.core.regpath import store as pst
    from gaplab.core.regpath import PathMetric

    model = sess.problem.model
    test = model.data   # (the training words: their arrays are built, so the errors are fast)
    # a headline metric other than the test error (CoNLL records chunk F1 the same way)
    metric = PathMetric("letter accuracy", lambda w: 1.0 - model.error(w, test), higher_is_better=True)
    saved = regularization_path(model, PathConfig(**SHORT), test_data=test, test_metric=metric,
                                meta={"dataset": sess.problem.name}, store=tmp_path / "s")
    acc = saved.column("test_metric")
    assert np.allclose(acc, 1.0 - saved.column("test_error"))
    # an old store (no test_metric in its rows) of the same path
    saved.to_store(tmp_path / "old")
    man = json.loads((tmp_path / "old" / "manifest.json").read_text())
    del man["meta"]["test_metric"]
    for r in man["rows"]:
        del r["test_metric"]
    (tmp_path / "old" / "manifest.json").write_text(json.dumps(man))
    lab = sess.path
    assert lab.open_store(tmp_path / "s")
    view = PathView(lab, sess)

    def no_weights(*a, **k):
        raise AssertionError("the plots must not read a breakpoint's w")

    monkeypatch.setattr(pst, "read_weights", no_weights)
    view.update(sess.snapshot, force=True)
    assert lab.snapshot.shown_metric == ("test_metric", "letter accuracy", True)
    assert view.test.title.text == "Test letter accuracy vs λ" and view.test.yaxis.axis_label == "test letter accuracy"
    assert np.array_equal(view.test_pts.data["y"], acc) and np.array_equal(view.test_pts.data["x"], saved.lams)
    best = int(np.argmax(acc))
    assert "highest" in view.b_best.label and f"{100 * acc[best]:.2f}%" in view.pick_info.object
    # the old store: the test error is plotted
    assert lab.open_store(tmp_path / "old")
    view.update(sess.snapshot, force=True)
    assert view.test.title.text == "Test error vs λ" and "lowest" in view.b_best.label
    assert np.array_equal(view.test_pts.data["y"], saved.column("test_error"))
