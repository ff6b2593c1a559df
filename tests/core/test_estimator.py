"""The scikit-learn style estimator (``gaplab.core.estimator.SSVM``) says what is wrong with its
input (no labels, mismatched lengths, empty or non-integer sequences, another model's data) and
warns, with the gap reached, when the budget ends before the gap threshold."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from gaplab.core.estimator import SSVM


def _seqs(n=6, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(2, 5)), 3)) for _ in range(n)]
    Y = [(x[:, 0] > 0).astype(np.int64) for x in X]
    return X, Y


def test_estimator_needs_labels_and_says_so():
    X, Y = _seqs()
    with pytest.raises(ValueError, match="needs the labels Y"):
        SSVM(max_passes=5).fit(X)
    est = SSVM(max_passes=5, gap_threshold=0).fit(X, Y)
    with pytest.raises(ValueError, match="needs the labels Y"):
        est.score(X)
    assert 0 <= est.score(X, Y) <= 1
    with pytest.raises(ValueError, match="same number of sequences"):
        SSVM().fit(X, [])
    with pytest.raises(ValueError, match=r"\[1\] (is empty|must be a non-empty)"):
        SSVM().fit([X[0], np.zeros((0, 3))], [Y[0], np.zeros(0, dtype=int)])
    with pytest.raises(TypeError, match=r"Y\[0\] must hold integer labels"):
        SSVM().fit(X, [np.array(["a"] * len(x)) for x in X])


def test_estimator_warns_when_the_budget_ends_and_reports_the_gap():
    from gaplab.core.estimator import ConvergenceWarning
    X, Y = _seqs(12)
    with pytest.warns(ConvergenceWarning, match="max_passes=2"):
        est = SSVM(lam=1e-3, max_passes=2, gap_threshold=1e-9).fit(X, Y)
    assert est.n_iter_ == est.result_.effective_passes and est.dual_gap_ == est.result_.exact_gap
    assert est.dual_gap_ > 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SSVM(lam=1.0, max_passes=500, gap_threshold=1e-2, seed=np.int64(3)).fit(X, Y)  # numpy seed, converges


def test_estimator_refuses_other_models_data_clearly():
    from gaplab.core.datasets.segmentation import make_synthetic_segmentation
    seg = make_synthetic_segmentation(2, grid=(2, 3), cell=2, d_u=3, d_p=2)
    with pytest.raises(TypeError, match="sequence \\(chain\\) problems.*SegmentationData"):
        SSVM(max_passes=2).fit(seg)


def test_empty_training_set_names_x_and_y():
    """Was: "max() arg is an empty sequence"."""
    for X, Y in (([], []), ((), ())):
        with pytest.raises(ValueError, match=r"X and Y are empty \(0 sequences\)"):
            SSVM().fit(X, Y)


def test_complex_features_are_refused_naming_the_argument_and_dtype():
    """Was: trained on the real part with only numpy's ComplexWarning."""
    X, Y = _seqs()
    Xc = [x.astype(np.complex128) for x in X]
    Xc[2] = Xc[2] + 1j
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way
        with pytest.raises(TypeError, match=r"X\[0\] has complex dtype complex128"):
            SSVM().fit(Xc, Y)
    from gaplab.core.datasets.base import SequenceData
    with pytest.raises(TypeError, match=r"X\[1\] has complex dtype complex64"):
        SequenceData.from_dense([X[0], X[1].astype(np.complex64)], Y[:2], ["a", "b"])
