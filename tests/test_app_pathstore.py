"""Issue 19 in the app: the path lab streams its breakpoints to an on-disk store (no W in
memory, no breakpoint cap from d), and a saved path store can be opened and browsed: its rows
at once, w_at(λ) read from the store on a pick."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from conftest import random_chain_data
from gaplab.app.session import Session
from gaplab.core import ChainModel
from gaplab.core.regpath import PathConfig, RegPath, regularization_path

SHORT = dict(eps=0.5, lam_min=0.1)


@pytest.fixture
def sess():
    s = Session()
    assert s.wait_idle(60) and s.status == "idle", s.messages()
    yield s
    s.close()


def test_the_labs_path_is_streamed_to_a_store_and_read_back(sess):
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
