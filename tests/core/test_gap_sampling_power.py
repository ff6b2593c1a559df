"""Gap sampling P(i) ∝ g_i^p with a large p approaches max-gap sampling (g^p must not underflow
to 0 for every block, which would fall back to uniform draws)."""
from __future__ import annotations

import numpy as np
import pytest

from gaplab.core import ChainModel, SequenceData, Solver, load_ocr
from gaplab.core import kernels as kr


@pytest.fixture(scope="module")
def data():
    tr, _ = load_ocr("small")
    idx = np.arange(30)
    return SequenceData.from_dense([tr.dense_features(i) for i in idx], [tr.labels[tr.tokens(i)] for i in idx],
                                   tr.label_names, name="ocr-30")


@pytest.mark.parametrize("p", [1000.0, 1e300])
def test_large_gap_power_draws_the_max_gap_block(data, p):
    s = Solver(ChainModel(data), lam=0.01, sampling="gap", gap_power=p, max_passes=20, seed=0)
    s.steps(3 * s.n)
    s.gap_check()  # every estimate exact and fresh; the tree rebuilt
    g = s.gap_estimates
    assert np.all(np.isfinite(g)) and g.max() > 0
    target = int(np.argmax(g))
    probs = s.sampling_probabilities()
    assert probs[target] > 0.999 and probs.sum() == pytest.approx(1.0)
    S = s.S
    draws = [kr.sample_block(s._M, S, s._ci, s._cf) for _ in range(300)]
    assert all(d == target for d in draws)


def test_moderate_gap_power_matches_the_formula(data):
    s = Solver(ChainModel(data), lam=0.01, sampling="gap", gap_power=3.0, max_passes=20, seed=0)
    s.steps(2 * s.n)
    s.gap_check()
    g = np.maximum(s.gap_estimates, 0)
    np.testing.assert_allclose(s.sampling_probabilities(), g ** 3 / np.sum(g ** 3), rtol=1e-12)
    # the kernel's tree holds the same weights, up to the common factor g_ref^p
    S = s.S
    size = S.tree.shape[0] // 2
    leaves = S.tree[size:size + s.n]
    np.testing.assert_allclose(leaves / leaves.sum(), g ** 3 / np.sum(g ** 3), rtol=1e-10)


def test_large_power_steps_follow_the_largest_gap(data):
    """Stepping with p = 1000 after the first visit of every block: each drawn block's estimate is
    within 2 % of the largest at the draw (a block at <= 0.98 g_max has weight <= 0.98^1000 = 2e-9
    relative to the max; uniform draws, the old underflow, would pick such blocks most of the time)."""
    s = Solver(ChainModel(data), lam=0.01, sampling="gap", gap_power=1000.0, max_passes=20, seed=1)
    s.steps(s.n)  # every block visited once
    for _ in range(40):
        g = s.gap_estimates
        rec = s.step()
        assert g[rec.block] >= 0.98 * g.max()
