"""The model interface (core/models/protocol.py) and the two oracle tiers behind one Solver.

A model whose max oracle is plain Python (oracle_tier="python") runs on the same samplers, step
kinds, cache, box and gap passes as the compiled model; the block step is then the compiled
pre-step kernel, the Python oracle, the compiled post-step kernel. For the multiclass model both
tiers compute every number with the same floating-point operations, so their traces must be
bitwise identical; for the chain, the compiled Viterbi returns its own running maximum while the
Python tier scores the returned labelling, so values agree to round-off.
"""
from __future__ import annotations

import numpy as np
import pytest

from gaplab.core import ChainModel, MulticlassModel, SequenceData, Solver, load_ocr
from gaplab.core import kernels as kr
from gaplab.core.models import StructuredModel, check_model
from gaplab.toy_examples.hard_easy import make_hard_easy
from gaplab.toy_examples.plain_chain import _viterbi  # plain numpy Viterbi (the tutorial chain's)


class PyMulticlass(MulticlassModel):
    """The multiclass model with its max oracle written in numpy (enumeration)."""

    oracle_tier = "python"
    name = "py-multiclass"

    def max_oracle(self, i, w):
        scores = self._losses[i] + self._features[i] @ w
        return np.array([int(np.argmax(scores))], dtype=np.int64)  # ties: lowest label, as the kernel

    def decode(self, i, w):
        return np.array([int(np.argmax(self._features[i] @ w))], dtype=np.int64)


class PyChain(ChainModel):
    """The chain model with a numpy Viterbi as its (loss-augmented) max oracle."""

    oracle_tier = "python"
    name = "py-chain"

    def _unaries(self, i, w, loss):
        X = self.data.dense_features(i)
        E = w[: self.first_off].reshape(self.F1, self.K)
        U = X @ E[: self.F] + E[self.F]
        U[0] += w[self.first_off:self.last_off]
        U[-1] += w[self.last_off:self.trans_off]
        if loss:
            gt = self.ground_truth(i)
            U += 1.0 / len(gt)
            U[np.arange(len(gt)), gt] -= 1.0 / len(gt)
        return U, w[self.trans_off:].reshape(self.K, self.K)

    def max_oracle(self, i, w):
        return _viterbi(*self._unaries(i, w, True))

    def decode(self, i, w):
        return _viterbi(*self._unaries(i, w, False))


def _state_arrays(s):
    S = s.S
    return [S.w, S.v, S.mu, S.ell, S.gap_est, S.gap_iter, S.counters, S.scalars, S.a_alpha, S.a_count, S.rng,
            S.log]


def _toy():
    model, lam, info = make_hard_easy(8, 6)
    return model, lam, info


def _py_toy(info):
    return PyMulticlass(info["features"], [np.r_[0.0, np.ones(len(f) - 1)] for f in info["features"]], info["gt"])


@pytest.mark.parametrize("step", ["fw", "pairwise", "away", "combined"])
@pytest.mark.parametrize("cache", [False, True])
def test_python_oracle_multiclass_bitwise_same_trace(step, cache):
    model, lam, info = _toy()
    py = _py_toy(info)
    rng = np.random.default_rng(0)
    lb = np.full(model.d, -np.inf)
    lb[rng.choice(model.d, 2, replace=False)] = 0.0
    for box in (None, lb):
        runs = []
        for m in (model, py):
            s = Solver(m, lam=lam, step=step, sampling="gap", cache={"enabled": cache}, gap_check=2,
                       max_passes=12, seed=5, lb=box, batch_step=(step == "fw"))
            r = s.run()
            runs.append((s, r))
        (s1, r1), (s2, r2) = runs
        for a, b in zip(_state_arrays(s1), _state_arrays(s2)):
            assert np.array_equal(a, b, equal_nan=True)
        assert [{k: v for k, v in x.items() if k != "wall_time_s"} for x in r1.trace] == \
               [{k: v for k, v in x.items() if k != "wall_time_s"} for x in r2.trace]
        assert r1.oracle_calls == r2.oracle_calls and r1.cache_hits == r2.cache_hits
        if cache:
            assert r1.cache_hits > 0
        assert r2.exact_gap >= 0 and r2.primal >= r2.dual


@pytest.fixture(scope="module")
def small_chain_data():
    tr, _ = load_ocr("small")
    idx = np.arange(12)
    X = [tr.dense_features(i) for i in idx]
    Y = [tr.labels[tr.tokens(i)] for i in idx]
    return SequenceData.from_dense(X, Y, tr.label_names, name="ocr-12")


@pytest.mark.parametrize("step", ["fw", "pairwise", "combined"])
def test_python_oracle_chain_same_trace(small_chain_data, step):
    """Uniform sampling: the draws do not depend on the gap values, so both tiers visit the same
    blocks; corners, step kinds and w agree (values to round-off)."""
    runs = []
    for cls in (ChainModel, PyChain):
        s = Solver(cls(small_chain_data), lam=0.05, step=step, sampling="uniform", gap_check=3, max_passes=8,
                   seed=2)
        recs = [s.step() for _ in range(40)]
        runs.append((s, recs, s.run()))
    (s1, rec1, r1), (s2, rec2, r2) = runs
    assert [r.block for r in rec1] == [r.block for r in rec2]
    assert [r.kind for r in rec1] == [r.kind for r in rec2]
    for a, b in zip(rec1, rec2):
        assert np.array_equal(a.fw_corner, b.fw_corner)
        assert a.gamma == pytest.approx(b.gamma, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(s1.S.w, s2.S.w, rtol=1e-9, atol=1e-12)
    assert r1.exact_gap == pytest.approx(r2.exact_gap, rel=1e-9, abs=1e-12)
    assert r2.exact_gap >= 0 and r2.primal >= r2.dual - 1e-12


def test_python_oracle_block_gap_and_exact_gap_match(small_chain_data):
    s1 = Solver(ChainModel(small_chain_data), lam=0.05, max_passes=3, seed=1)
    s2 = Solver(PyChain(small_chain_data), lam=0.05, max_passes=3, seed=1)
    s1.steps(30)
    s2.steps(30)
    e1, e2 = s1.exact_gap(count=False), s2.exact_gap(count=False)
    assert e1.gap == pytest.approx(e2.gap, rel=1e-9)
    assert e1.primal == pytest.approx(e2.primal, rel=1e-9)
    np.testing.assert_allclose(e1.block_deltas, e2.block_deltas, rtol=1e-8, atol=1e-14)
    for i in (0, 5, 11):
        assert s1.block_gap_now(i) == pytest.approx(s2.block_gap_now(i), rel=1e-9, abs=1e-14)


def test_python_oracle_refuses_exact_gap_sampler():
    _, lam, info = _toy()
    with pytest.raises(ValueError, match="compiled max oracle"):
        Solver(_py_toy(info), lam=lam, sampling="exact_gap")


# ---------------------------------------------------------------------------------- bad input
class _BadOracle(PyMulticlass):
    answer = None

    def max_oracle(self, i, w):
        return self.answer


@pytest.mark.parametrize("answer, err, msg", [
    (np.array([0, 1]), ValueError, r"block \d+: the max oracle's labelling must have shape \(1,\)"),
    (np.array([99]), ValueError, r"label 99 outside \[0, 7\)"),
    (np.array([-1]), ValueError, r"label -1 outside"),
    (np.array([0.5]), TypeError, r"must be an integer array, got dtype float64"),
])
def test_bad_oracle_answer_is_refused_naming_model_and_block(answer, err, msg):
    _, lam, info = _toy()
    m = _BadOracle(info["features"], [np.r_[0.0, np.ones(len(f) - 1)] for f in info["features"]], info["gt"])
    m.answer = answer
    s = Solver(m, lam=lam, max_passes=2, sampling="uniform")
    w_before, rng_before, counters_before = s.w, s.S.rng.copy(), s.S.counters.copy()
    with pytest.raises(err, match=msg) as exc:
        s.step()
    assert "py-multiclass" in str(exc.value)
    # nothing was applied, and the draw was undone: the next step draws the same block
    assert s.iteration == 0 and np.array_equal(s.w, w_before)
    assert np.array_equal(s.S.rng, rng_before) and np.array_equal(s.S.counters, counters_before)


def test_model_missing_methods_is_refused():
    class Half:
        name = "half"
        n, d = 3, 4

        def loss(self, i, y):
            return 0.0

    with pytest.raises(TypeError, match=r"model 'half' .* missing arrays, ground_truth"):
        Solver(Half(), lam=0.1)
    with pytest.raises(TypeError):
        check_model(object())


def test_structured_model_abc_requires_methods():
    class Incomplete(StructuredModel):
        n, d = 1, 1

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()


def test_unregistered_arrays_and_register_model_kind_errors():
    from collections import namedtuple
    _, lam, info = _toy()
    m = _py_toy(info)
    Fake = namedtuple("Fake", ["n", "d", "K", "stat_off", "lab_off", "gt"])
    m.arrays = Fake(*m.arrays[:6])
    with pytest.raises(TypeError, match="not a registered model kind"):
        Solver(m, lam=lam)
    with pytest.raises(ValueError, match="missing primitives"):
        kr.register_model_kind(Fake, "fake", scores=kr.block_scores)
    Short = namedtuple("Short", ["n", "d"])
    with pytest.raises(ValueError, match="lacks the fields"):
        kr.register_model_kind(Short, "short")
    with pytest.raises(TypeError, match="namedtuple"):
        kr.register_model_kind(dict, "dict")


def test_set_vertices_checks_labels_against_the_model():
    _, lam, info = _toy()
    s = Solver(_py_toy(info), lam=lam, step="pairwise", max_passes=2)
    with pytest.raises(ValueError, match=r"labels\[0\] must lie in \[0, 7\)"):
        s.set_vertices([np.array([7])] + [np.array([0])] * (s.n - 1))


def _allocating_gt_label(M, i, y):
    tmp = np.zeros(1, dtype=np.int64)  # not allowed in a primitive
    tmp[0] = M.gt[i]
    y[0] = tmp[0]


def _allocating_sqnorm(M, i, dlt, zbuf):
    tmp = np.zeros(M.K)  # not allowed in a primitive
    for k in range(M.K):
        tmp[k] = dlt[k] * dlt[k]
    return tmp.sum()


# gt_label is first compiled by a small kernel of Solver(...); sqnorm only by the fused step loop
# of the first step (a compile of the whole driver for the new kind: slow)
@pytest.mark.parametrize("primitive", ["gt_label", pytest.param("sqnorm", marks=pytest.mark.slow)])
def test_an_allocating_primitive_gets_a_note_naming_the_kind_and_the_rule(monkeypatch, primitive):
    """Primitives are compiled without reference counting: one that allocates fails to compile,
    and the error says which model kind and why (not only numba's "Only accept returning of
    array passed into the function as argument")."""
    import sys
    from collections import namedtuple

    from numba import njit
    from numba.core.errors import NumbaError

    from gaplab.core.models.multiclass import MulticlassArrays, MulticlassModel
    monkeypatch.setattr(kr.registry, "_drop_stale_driver_caches", lambda name, prims: None)  # keep the on-disk cache
    Alloc = namedtuple("AllocArrays", MulticlassArrays._fields)
    allocating = njit({"gt_label": _allocating_gt_label, "sqnorm": _allocating_sqnorm}[primitive])
    prims = {k: v for k, v in kr._KINDS[MulticlassArrays].items() if k != "__name__"}
    kr.register_model_kind(Alloc, "allocating", **{**prims, primitive: allocating})
    model = MulticlassModel([np.eye(3), np.eye(3)], [np.array([0.0, 1, 1]), np.array([0.0, 1, 1])], [0, 0])
    model.arrays = Alloc(*model.arrays)
    with pytest.raises(NumbaError) as exc:
        Solver(model, lam=0.1, max_passes=1).step()
    if sys.version_info >= (3, 11):
        note = " ".join(getattr(exc.value, "__notes__", []))
        assert "model kind 'allocating'" in note and "must not allocate" in note
