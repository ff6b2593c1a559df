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


class _NotLinear(MultiLabel):
    def joint_feature(self, x, y):
        return super().joint_feature(x, y) ** 3 + 0.1


@pytest.mark.parametrize("cls, match", [(_WrongOracle, "max oracle's labelling scores"),
                                        (_WrongLossInOracle, "max oracle's labelling scores"),
                                        (_NotLinear, "max oracle")])
def test_a_broken_model_is_caught(cls, match):
    data = make_multilabel(5, n_features=3, n_tags=3, seed=2)
    check_model(PythonModel(MultiLabel(3, 3), data))  # the sound model passes
    with pytest.raises(ModelCheckError, match=match):
        check_model(PythonModel(cls(3, 3), data), seed=0)


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
