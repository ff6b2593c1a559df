"""check_model over every registered problem: each model's primitives, max oracle, decoding and
loss agree with its own dense joint_feature and loss (replaces the per-model copies of this
check), and a model that breaks one of them is caught, named and explained."""
from __future__ import annotations

import numpy as np
import pytest

from gaplab.core.models import ModelCheckError, PythonModel, check_model
from gaplab.core.problems import get_problem, problem_names
from gaplab.toy_examples.multilabel import MultiLabel, make_multilabel


def _tiny(name):
    """The problem's tiny instance (``warmup``: a few blocks, enumerable label spaces), else the
    problem itself when it loads in milliseconds."""
    spec = get_problem(name)
    if spec.warmup is not None:
        return spec.warmup()
    assert spec.quick, f"problem {name!r} has neither a warmup instance nor a quick loader"
    return spec.load().model


@pytest.mark.parametrize("name", problem_names())
def test_registered_model_meets_its_own_dense_definition(name):
    model = _tiny(name)
    check_model(model, blocks=3, labellings=8, enumerate_up_to=256, seed=0)
    check_model(model, blocks=2, labellings=8, enumerate_up_to=0, seed=1)  # random labellings only


@pytest.mark.parametrize("seed", range(3))
def test_full_size_chain_and_segmentation_on_random_labellings(seed):
    """The real OCR-small and seg-tiny models (label spaces far too large to enumerate)."""
    for name in ("ocr-small", "seg-tiny"):
        check_model(get_problem(name).load().model, blocks=2, labellings=10, seed=seed)


class _WrongOracle(MultiLabel):
    def loss_augmented_inference(self, x, y, w):
        return self.all_y[np.argmin(self._scores(x, w))]  # the worst labelling


class _WrongLossInOracle(MultiLabel):
    def loss_augmented_inference(self, x, y, w):
        return self.inference(x, w)  # forgets the loss


class _IgnoresLoss(MultiLabel):
    """An oracle that never looks at the loss (nor at y): the argmax of ⟨w, ψ⟩ written out."""

    def loss_augmented_inference(self, x, y, w):
        return self.all_y[np.argmax(self._scores(x, w))]


class _SumHammingInOracle(MultiLabel):
    """The oracle adds the sum-Hamming loss while ``loss()`` is the mean: the same argmax at
    w = 0 and wherever ⟨w, ψ⟩ dominates, a different one where the loss decides."""

    def loss_augmented_inference(self, x, y, w):
        return self.all_y[np.argmax(self._scores(x, w) + np.sum(self.all_y != y, axis=1))]


class _NotLinear(MultiLabel):
    def joint_feature(self, x, y):
        return super().joint_feature(x, y) ** 3 + 0.1


BROKEN = [(_WrongOracle, "max oracle's labelling"), (_WrongLossInOracle, "max oracle's labelling"),
          (_IgnoresLoss, "max oracle's labelling"), (_SumHammingInOracle, "max oracle's labelling"),
          (_NotLinear, "max oracle|decode")]


@pytest.mark.parametrize("seed", range(10))
def test_the_sound_model_passes_and_says_what_it_tried(seed):
    data = make_multilabel(5, n_features=3, n_tags=3, seed=seed)
    report = check_model(PythonModel(MultiLabel(3, 3), data), seed=seed)
    assert report.ok and report.worst_violation == 0.0 and not report.warnings
    assert report.enumerated == report.blocks  # 2^3 labellings: brute force on every block checked
    assert report.labellings == 8 * len(report.blocks)
    assert report.points == 1 + 3 * 6  # w = 0, then 3 fixed and 3 loss-decisive t per direction
    text = str(report)
    assert "worst violation" in text and "never beaten" in text and f"{report.labellings}" in text


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("cls, match", BROKEN)
def test_a_broken_model_is_caught_at_every_seed(cls, match, seed):
    """Every seed of the check (random directions, blocks) and of the data catches each bug, and
    the message names the labelling that beats the oracle's with both scores."""
    data = make_multilabel(5, n_features=3, n_tags=3, seed=seed)
    with pytest.raises(ModelCheckError, match=match) as info:
        check_model(PythonModel(cls(3, 3), data), seed=seed)
    if cls is not _NotLinear:
        rep = info.value.report
        assert rep.worst_violation > 1e-6 and "but the labelling" in str(info.value)


@pytest.mark.parametrize("seed", range(10))
def test_loss_bugs_are_caught_on_sampled_labellings_too(seed):
    """Label spaces too large to enumerate (2^10 labellings, 64 sampled): the loss-decisive
    points still catch an oracle that forgets the loss."""
    data = make_multilabel(6, n_features=3, n_tags=10, seed=seed)
    rep = check_model(PythonModel(MultiLabel(3, 10), data), seed=seed, enumerate_up_to=16)
    assert rep.sampled == rep.blocks and not rep.enumerated
    with pytest.raises(ModelCheckError, match="max oracle's labelling"):
        check_model(PythonModel(_IgnoresLoss(3, 10), data), seed=seed, enumerate_up_to=16)


class _NoLabelCount(MultiLabel):
    n_labels = None


def test_a_label_space_that_cannot_be_sampled_is_warned_about():
    from gaplab.core.models import ModelCheckWarning
    data = make_multilabel(5, n_features=3, n_tags=3, seed=0)
    with pytest.warns(ModelCheckWarning, match="neither enumerated nor sampled"):
        rep = check_model(PythonModel(_NoLabelCount(3, 3), data))
    assert rep.unchecked == rep.blocks and not rep.ok and "n_labels" in str(rep)


def test_a_broken_numba_primitive_is_caught(monkeypatch):
    """A compiled model whose statistics disagree with its ψ (here: a chain whose joint_feature
    drops the transitions) is reported with the numbers."""
    from gaplab.core.models import ChainModel
    from gaplab.core.builtin_problems import _tiny_chain
    model = _tiny_chain()
    good = ChainModel.joint_feature

    def no_transitions(self, i, y):
        psi = good(self, i, y)
        psi[self.trans_off:] = 0.0
        return psi
    monkeypatch.setattr(ChainModel, "joint_feature", no_transitions)
    with pytest.raises(ModelCheckError, match=r"block \d+: (scores|sqnorm|the max oracle)"):
        check_model(model)


def test_missing_interface_is_a_type_error():
    with pytest.raises(TypeError, match="missing"):
        check_model(object())


def test_missing_predict_is_reported():
    from gaplab.core.models import MulticlassModel
    from gaplab.core.models.protocol import StructuredModel

    class NoPredict(MulticlassModel):
        predict = StructuredModel.predict
        error = StructuredModel.error
    m = NoPredict([np.eye(3), np.eye(3)], [np.array([0.0, 1, 1])] * 2, [0, 0])
    with pytest.raises(ModelCheckError, match="predict and error must be implemented"):
        check_model(m)
