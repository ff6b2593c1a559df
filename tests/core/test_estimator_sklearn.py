"""``SSVM(model=...)`` fits any model of the contract and follows scikit-learn's conventions:
a plain-Python multi-label model and a compiled model's factory fit through it, parameters
survive ``clone``/``get_params``/``set_params``, an invalid parameter is refused naming it (the
constraints are those of the settings schema), and the applicable scikit-learn estimator checks
pass."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import sklearn
import sklearn.utils.estimator_checks as ec
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import StrOptions

from conftest import random_chain_data
from gaplab.core import ChainModel, Solver
from gaplab.core.config import settings_schema
from gaplab.core.estimator import SSVM, ConvergenceWarning
from gaplab.core.models import PythonModel
from gaplab.toy_examples.multilabel import MultiLabel, make_multilabel


def _chain_xy(n=8, seed=0):
    data = random_chain_data(n=n, T_range=(2, 4), K=3, F=4, seed=seed)
    return data, [data.dense_features(i) for i in range(data.n)], [data.labels[data.tokens(i)] for i in range(data.n)]


def test_plain_python_multilabel_model_fits_predicts_and_scores():
    """The fit is the Solver's run on PythonModel(model, (X, Y)) with the same settings (same
    seed: the same w bit for bit), certified to the gap threshold; predict is argmax_y ⟨w, ψ(x, y)⟩
    over all 2^L labellings scored with the model's own ψ; score is the per-tag accuracy."""
    train, test = make_multilabel(24, n_features=4, n_tags=3, seed=0), make_multilabel(16, n_features=4, n_tags=3, seed=1)
    est = SSVM(lam=0.1, model=MultiLabel(4, 3), step="pairwise", gap_threshold=1e-3, max_passes=300, seed=2)
    assert est.fit(train.X, train.Y) is est
    assert isinstance(est.model_, PythonModel) and est.coef_.shape == (est.model_.d,)
    assert est.result_.status.name == "CONVERGED" and 0 <= est.dual_gap_ <= 1e-3
    ref = Solver(PythonModel(MultiLabel(4, 3), (train.X, train.Y)), est._config()).run()
    np.testing.assert_array_equal(est.coef_, ref.w)

    m, w = MultiLabel(4, 3), est.coef_
    all_y = np.array(list(itertools.product([0, 1], repeat=3)))
    brute = [all_y[np.argmax([w @ m.joint_feature(x, y) for y in all_y])] for x in test.X]
    pred = est.predict(test.X)
    assert [p.shape for p in pred] == [(3,)] * len(test.X)
    np.testing.assert_array_equal(np.array(pred), np.array(brute))
    acc = est.score(test.X, test.Y)
    assert acc == pytest.approx(np.mean(np.array(brute) == np.array(test.Y)))
    assert est.score(train.X, train.Y) > 0.7  # the tags are a noisy linear function of x: learnable

    with pytest.raises(ValueError, match="needs the labels Y"):
        SSVM(model=MultiLabel(4, 3)).fit(train.X)
    with pytest.raises(ValueError, match=r"X and Y are empty \(0 examples\)"):
        SSVM(model=MultiLabel(4, 3)).fit([], [])
    with pytest.raises(ValueError, match="same number of examples, got 24 and 3"):
        SSVM(model=MultiLabel(4, 3)).fit(train.X, train.Y[:3])
    with pytest.raises(TypeError, match=r"plain-Python model's class; pass an instance \(model=MultiLabel\(...\)\)"):
        SSVM(model=MultiLabel).fit(train.X, train.Y)


def test_compiled_model_factory_fits_like_the_default_chain():
    """model=ChainModel (a compiled model's class, a factory of the training set) gives the
    default chain's fit, w bit for bit, and its predict/score are the model's own."""
    data, X, Y = _chain_xy()
    kw = dict(lam=0.1, step="pairwise", gap_threshold=1e-3, max_passes=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both converge
        a = SSVM(**kw).fit(data)
        b = SSVM(model=ChainModel, **kw).fit(data)
    assert isinstance(b.model_, ChainModel)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(b.predict(data), a.predict(data))
    assert b.score(data) == pytest.approx(1.0 - b.model_.error(b.coef_, data)) == pytest.approx(a.score(data))
    with pytest.raises(ValueError, match="factory of a compiled model.*Y must be None"):
        SSVM(model=ChainModel).fit(X, Y)


def test_clone_get_params_set_params_round_trip():
    model = MultiLabel(4, 3)
    est = SSVM(lam=0.3, model=model, step="pairwise", cache=True, cache_factor=0.5, seed=7)
    params = est.get_params(deep=False)
    assert params["model"] is model and params["lam"] == 0.3 and params["cache_factor"] == 0.5
    assert set(params) == {s.key for s in settings_schema()} | {"model"}
    # every constructor argument is stored unchanged (even an invalid one: checked in fit)
    assert SSVM(lam=-5.0).lam == -5.0 and SSVM(step="nope").step == "nope"

    twin = clone(est)
    assert twin is not est and not hasattr(twin, "coef_")
    tp = twin.get_params(deep=False)
    assert {k: v for k, v in tp.items() if k != "model"} == {k: v for k, v in params.items() if k != "model"}
    assert type(tp["model"]) is MultiLabel and tp["model"].size_joint_feature == model.size_joint_feature

    other = SSVM()
    assert other.set_params(**params) is other and other.get_params(deep=False) == params
    assert repr(est).startswith("SSVM(") and "lam=0.3" in repr(est)
    with pytest.raises(ValueError, match="unknown parameter 'lamda'"):
        other.set_params(lamda=1)
    with pytest.raises(TypeError, match="unknown parameter.*'lamda'"):
        SSVM(lamda=1)


@pytest.mark.parametrize("param, value", [("lam", -1.0), ("lam", 0), ("step", "newton"), ("sampling", "random"),
                                          ("cache", "yes"), ("max_passes", 0), ("seed", 1.5), ("model", 42)])
def test_invalid_parameter_is_refused_in_fit_naming_it(param, value):
    _, X, Y = _chain_xy(4)
    est = SSVM(**{"max_passes": 3, param: value})
    with pytest.raises(ValueError, match=rf"The '{param}' parameter of SSVM must be .* Got {value!r} instead"):
        est.fit(X, Y)
    assert not hasattr(est, "coef_") and not hasattr(est, "result_")  # no partial state


def test_parameter_constraints_are_generated_from_the_settings_schema():
    cons = SSVM._parameter_constraints
    assert set(cons) == {s.key for s in settings_schema()} | {"model"}
    for s in settings_schema():
        if s.choices is not None:
            assert [c.options for c in cons[s.key] if isinstance(c, StrOptions)] == [set(s.choices)]
        elif s.positive:
            assert not cons[s.key][0].is_satisfied_by(0) and cons[s.key][0].is_satisfied_by(s.default), s.key


#: scikit-learn's checks that hold for a structured-output estimator: they look at the parameters,
#: cloning, repr, tags, parameter validation and the unfitted state, never at what fit learns.
APPLICABLE = ("check_estimator_cloneable", "check_estimator_repr", "check_no_attributes_set_in_init",
              "check_parameters_default_constructible", "check_get_params_invariance", "check_set_params",
              "check_do_not_raise_errors_in_init_or_set_params", "check_param_validation",
              "check_estimators_unfitted", "check_mixin_order", "check_valid_tag_types",
              "check_estimator_tags_renamed")


@pytest.mark.parametrize("name", APPLICABLE)
def test_applicable_sklearn_checks(name):
    """The scikit-learn estimator checks that apply to structured outputs pass.

    Not applicable, and not run: every check that fits on a 2-D numeric X of shape
    (n_samples, n_features) with a 1-D y of class labels or reals (check_fit2d_*, check_fit1d,
    check_estimators_dtypes, check_estimators_nan_inf, check_estimators_empty_data_messages,
    check_dtype_object, check_complex_data, check_dict_unchanged, check_dont_overwrite_parameters,
    check_estimators_overwrite_params, check_fit_idempotent, check_fit_check_is_fitted,
    check_n_features_in*, check_methods_*_invariance, check_readonly_memmap_input,
    check_f_contiguous_array_estimator, check_estimators_fit_returns_self, check_pipeline_consistency,
    check_fit_score_takes_y, check_requires_y_none, check_supervised_y_*, the sparse, pandas,
    polars and array-API checks): SSVM's X is a list of sequences (the chain: (T_i, F) arrays) or of
    a model's inputs and Y a list of labellings, one per example, so a single 2-D X is one
    sequence's worth of tokens without its labels. The classifier/regressor/transformer/cluster/
    outlier checks are for other estimator types; the sample_weight checks for a fit parameter SSVM
    has not; check_estimators_pickle is left out because gaplab keeps pickle out of run time. The
    structured counterparts of fit returning self, fit not changing the parameters, and refitting
    giving the same result are in :func:`test_structured_counterparts_of_the_fit_checks`."""
    check = getattr(ec, name, None)
    if check is None:
        pytest.skip(f"{name} is not in scikit-learn {sklearn.__version__}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)
        check("SSVM", SSVM())


def test_structured_counterparts_of_the_fit_checks():
    """On chain data: fit returns self, leaves every parameter as given, a refit (and a fit of a
    clone) gives the same w (same seed: same trace), and predict before fit is a NotFittedError."""
    _, X, Y = _chain_xy()
    est = SSVM(lam=0.1, step="away", sampling="permutation", gap_threshold=1e-2, max_passes=400, seed=5)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        est.predict(X)
    before = est.get_params(deep=False)
    assert est.fit(X, Y) is est
    assert est.get_params(deep=False) == before
    w1 = est.coef_.copy()
    np.testing.assert_array_equal(est.fit(X, Y).coef_, w1)
    np.testing.assert_array_equal(clone(est).fit(X, Y).coef_, w1)
    assert est.n_iter_ > 0 and [p.shape for p in est.predict(X)] == [y.shape for y in Y]
    with pytest.warns(ConvergenceWarning) as rec:  # the budget ends the fit: the caller's line is named
        SSVM(max_passes=1, gap_threshold=1e-12).fit(X, Y)
    assert rec[0].filename == __file__
