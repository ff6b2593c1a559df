"""A scikit-learn estimator over the solver (fit / predict / score) for any model of the
contract: the chain (default), a plain-Python pystruct-style model (the four methods of
:class:`~gaplab.core.models.PythonModel`) or a factory of a compiled model. Its parameters and
their ``_parameter_constraints`` are generated from the settings schema
(:func:`gaplab.core.config.settings_schema`)."""
from __future__ import annotations

import functools
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .config import SolverConfig, config_from_settings, settings_schema
from .datasets.base import SequenceData
from .models.chain import ChainModel, check_chain_size
from .models.plain import PYSTRUCT_METHODS, Examples, PythonModel
from .solver import Solver

try:  # scikit-learn >= 1.3: validates the parameters first, honours sklearn's config
    from sklearn.base import _fit_context
except ImportError:  # pragma: no cover - an equivalent for older versions
    def _fit_context(prefer_skip_nested_validation=True):
        def decorate(fit):
            @functools.wraps(fit)
            def wrapper(est, *args, **kwargs):
                est._validate_params()
                return fit(est, *args, **kwargs)
            return wrapper
        return decorate

__all__ = ["SSVM", "ConvergenceWarning", "OracleNotExactWarning"]


class ConvergenceWarning(_SklearnConvergenceWarning):
    """``fit`` ended on its budget (passes or time) before the exact duality gap reached
    ``gap_threshold`` (a scikit-learn ``ConvergenceWarning``)."""


class OracleNotExactWarning(RuntimeWarning):
    """``fit`` ended with status ``oracle_not_exact``: the exact duality gap came out negative,
    so the model's max oracle is not exact and the gap certifies nothing."""


def _check_labels(X, Y, what: str):
    """Clear messages for missing, empty or non-integer labels (before any conversion)."""
    if Y is None:
        raise ValueError(f"{what} needs the labels Y (a list of int arrays, one per sequence of X); "
                         "got Y=None" + (" (use predict(X) to decode without labels)" if what == "score" else ""))
    if not isinstance(Y, (list, tuple)):
        raise TypeError(f"Y must be a list of int arrays (one per sequence), got {type(Y).__name__}")
    if len(Y) != len(X):
        raise ValueError(f"X and Y must hold the same number of sequences, got {len(X)} and {len(Y)}")
    if len(X) == 0:
        raise ValueError(f"X and Y are empty (0 sequences); {what} needs at least one sequence X[i] of shape "
                         "(T_i, n_features) with its labels Y[i]")
    for i, y in enumerate(Y):
        a = np.asarray(y)
        if a.size == 0:
            raise ValueError(f"Y[{i}] is empty; every sequence needs at least one token and one label per token")
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"Y[{i}] must hold integer labels in [0, K), got dtype {a.dtype} "
                            f"(e.g. {a.ravel()[0]!r}); map label names to integers first")
        if a.min() < 0:
            raise ValueError(f"Y[{i}] has a negative label {int(a.min())}; labels must lie in [0, K)")
        if int(a.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"Y[{i}] has the label {int(a.max())}, beyond int64; labels must lie in [0, K) "
                             "with K the number of labels")
    if what == "fit":  # K = largest label + 1, bounded before anything of size K is made
        K = max(int(np.max(y)) for y in Y) + 1
        X0 = np.asarray(X[0])
        check_chain_size(len(X), sum(int(np.size(y)) for y in Y), K, int(X0.shape[-1]) if X0.ndim else 0,
                         what="the largest label + 1, K")


def _problem_data(name: str, split: str) -> SequenceData:
    """The training (split="train") or test set of a registered chain problem."""
    from .problems import get_problem
    spec = get_problem(name)  # ValueError listing the registered problems
    train, test = spec.loader(data_home=None, **spec.parse_options())[:2]
    data = train if split == "train" else test
    if not isinstance(data, SequenceData):
        raise ValueError(f"SSVM works on sequence (chain) problems; problem {name!r} gives a "
                         f"{type(data).__name__} {split} set")
    return data


def _refuse_other_containers(X) -> None:
    """A data container of another model (SegmentationData, PoseData) or a model: say that
    SSVM is the chain estimator (not "fit needs the labels Y")."""
    if X is not None and not isinstance(X, (SequenceData, str, list, tuple, np.ndarray)):
        raise TypeError(f"SSVM works on sequence (chain) problems: X must be a list of (T_i, n_features) "
                        f"arrays, a SequenceData or a registered chain problem's name, got a "
                        f"{type(X).__name__}; fit other models with SSVM(model=...) (a plain-Python model or a compiled model's factory)")


def _as_data(X, Y=None, *, n_labels=None, label_names=None, n_features=None, split="test"):
    _refuse_other_containers(X)
    if isinstance(X, str):
        if Y is not None:
            raise ValueError("pass either a registered problem name or X and Y, not both")
        X = _problem_data(X, split)
    if isinstance(X, SequenceData):
        if Y is not None:
            raise ValueError("pass labels inside the SequenceData, not as Y")
        return X
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        raise ValueError("X must be a non-empty list of arrays of shape (T_i, n_features) or a SequenceData")
    for i, x in enumerate(X):
        if np.iscomplexobj(x):  # casting to float64 would drop the imaginary part with only a warning
            raise TypeError(f"X[{i}] has complex dtype {np.asarray(x).dtype}; features must be real (float) numbers")
        if np.asarray(x).ndim != 2 or np.asarray(x).shape[0] == 0:
            raise ValueError(f"X[{i}] must be a non-empty 2-D array (T_i >= 1, n_features), got shape "
                             f"{np.asarray(x).shape}")
    if Y is None:  # prediction: dummy labels
        Y = [np.zeros(np.asarray(x).shape[0], dtype=np.int64) for x in X]
    if label_names is None:
        K = n_labels if n_labels is not None else int(max(int(np.max(y)) for y in Y)) + 1
        label_names = [str(k) for k in range(K)]
    data = SequenceData.from_dense(list(X), list(Y), label_names, name="X")
    if n_features is not None and data.n_features != n_features:
        raise ValueError(f"X has {data.n_features} features per token, the model was fit with {n_features}")
    return data


#: the estimator's parameters: every user-facing setting of SolverConfig/CacheConfig (the settings
#: schema), with the estimator's own defaults for when a fit stops
_DEFAULTS = {s.key: s.default for s in settings_schema()}
_DEFAULTS.update(gap_threshold=1e-3, max_passes=500)


def _constraint(s) -> list:
    """scikit-learn's constraint of one setting: its choices, bool, or a number (> 0 when the
    schema says ``positive``; finer ranges are SolverConfig's, checked next in ``fit``)."""
    if s.choices is not None:
        return [StrOptions(set(s.choices))]
    if s.type is bool:
        return ["boolean"]
    if s.type is int:
        return [Interval(Integral, 1 if s.positive else None, None, closed="left" if s.positive else "neither")]
    # floats may be inf (time_limit, gap_check: no limit)
    return [Interval(Real, 0 if s.positive else None, None, closed="right" if s.positive else "both")]


def parameter_constraints() -> dict:
    """``SSVM._parameter_constraints``: one entry per setting of the schema, plus ``model``."""
    out = {s.key: _constraint(s) for s in settings_schema()}
    out["model"] = [None, HasMethods(list(PYSTRUCT_METHODS)), callable]
    return out


def _model_kind(model) -> str:
    """"chain" (None), "python" (has the four pystruct methods) or "factory" (a callable that
    builds a StructuredModel from the training set, e.g. a compiled model's class)."""
    if model is None:
        return "chain"
    if all(callable(getattr(model, m, None)) for m in PYSTRUCT_METHODS) and not isinstance(model, type):
        return "python"
    return "factory"


def _check_examples(X, Y, what: str) -> None:
    """Plain-Python model: X and Y sequences of one length, not empty (the model's own checks
    follow in :class:`PythonModel`)."""
    if Y is None:
        raise ValueError(f"{what} needs the labels Y (one integer array per example of X); got Y=None")
    for name, v in (("X", X), ("Y", Y)):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
            raise TypeError(f"{name} must be a sequence with one entry per example, got {type(v).__name__}")
    if len(X) != len(Y):
        raise ValueError(f"X and Y must hold the same number of examples, got {len(X)} and {len(Y)}")
    if len(X) == 0:
        raise ValueError(f"X and Y are empty (0 examples); {what} needs at least one example")


class SSVM(BaseEstimator):
    """Structured SVM trained by a BCFW-family solver, in scikit-learn's conventions
    (``get_params``/``set_params``/``clone``, parameters validated in ``fit``).

    Parameters
    ----------
    lam : float
        Regularization λ > 0 (Paper: Eq. (1)).
    model : None, object or callable, default None
        What is fitted. None: the chain (X a list of (T_i, n_features) float arrays, Y a list of
        int arrays of shape (T_i,)). An object with the four pystruct-style methods
        ``joint_feature``, ``loss``, ``loss_augmented_inference`` and ``inference`` (see
        :class:`gaplab.core.models.PythonModel`): X and Y are sequences of its inputs and integer
        labellings. A callable without them (a compiled model's class such as ``ChainModel``,
        or a ``model_factory`` as in ``register_problem``): ``fit(X)`` builds ``model(X)`` from the
        training set X (a data container holding the labels; Y must be None).
    **params
        Any setting of :func:`gaplab.core.config.settings_schema` by its flat name: ``sampling``,
        ``gap_power``, ``step``, ``cache`` (bool: the oracle cache of Alg. 5), ``cache_factor``,
        ``cache_nu``, ``cache_size``, ``gap_check``, ``gap_threshold`` (default 1e-3),
        ``max_passes`` (default 500), ``time_limit``, ``seed``, ``batch_step``; see
        :class:`gaplab.core.SolverConfig`. Stored unchanged; checked by ``fit``
        (``_parameter_constraints``, generated from the schema, then SolverConfig).

    Attributes
    ----------
    coef_ : ndarray of float64, shape (d,)
        The weight vector w after ``fit``.
    model_ : StructuredModel
        The model over the training set the solver ran on.
    solver_ : Solver
    result_ : Result
        The solver's result (gap, passes, trace).
    n_iter_ : float
        Effective passes the fit used (oracle calls / n, exact gap passes included).
    dual_gap_ : float
        Exact duality gap of the fitted w (Paper: Eq. (5)).

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        (a ValueError and TypeError) from ``fit``, naming the parameter, when a parameter is out of
        its range or choices; ValueError from SolverConfig for its finer ranges.

    Warns
    -----
    ConvergenceWarning
        When ``fit`` ends on ``max_passes`` or ``time_limit`` before the gap reaches
        ``gap_threshold``.
    OracleNotExactWarning
        When the exact duality gap comes out negative (status ``oracle_not_exact``): the
        message names the block and the labelling that beats the max oracle's.

    Notes
    -----
    With the chain, ``fit``, ``predict`` and ``score`` also take the name of a registered chain
    problem (:mod:`gaplab.core.problems`, such as ``"ocr-small"``): ``fit`` trains on its
    training set, ``predict``/``score`` use its test set.
    """

    _PARAMS = ("model",) + tuple(_DEFAULTS)
    _parameter_constraints = parameter_constraints()

    def __init__(self, lam=_DEFAULTS["lam"], *, model=None, **params):
        unknown = [k for k in params if k not in _DEFAULTS]
        if unknown:  # what Python says for an explicit signature, with the valid names
            raise TypeError(f"SSVM() got unknown parameter(s) {', '.join(map(repr, unknown))}; "
                            f"valid: {', '.join(self._PARAMS)}")
        self.lam = lam
        self.model = model
        for k in _DEFAULTS:
            if k != "lam":
                setattr(self, k, params.get(k, _DEFAULTS[k]))

    def set_params(self, **params) -> "SSVM":
        unknown = [k for k in params if k.split("__")[0] not in self._PARAMS]
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r}; valid: {', '.join(self._PARAMS)}")
        return super().set_params(**params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # structured labels Y
        tags.input_tags.two_d_array = False  # X is a list of sequences / inputs, not one matrix
        return tags

    def _config(self) -> SolverConfig:
        return config_from_settings({k: getattr(self, k) for k in _DEFAULTS})

    def _build_model(self, X, Y):
        """(model, label_names, n_features) over the training set; nothing stored on self."""
        kind = _model_kind(self.model)
        if kind == "python":
            _check_examples(X, Y, "fit")
            return PythonModel(self.model, Examples(list(X), list(Y))), None, None
        if kind == "factory":
            if isinstance(self.model, type) and all(callable(getattr(self.model, m, None)) for m in PYSTRUCT_METHODS):
                raise TypeError(f"model={self.model.__name__} is a plain-Python model's class; pass an instance "
                                f"(model={self.model.__name__}(...))")
            if Y is not None:
                raise ValueError(f"model={self.model!r} is a factory of a compiled model: fit(X) takes the "
                                 "training set X it builds the model from (labels inside), so Y must be None")
            from .models.protocol import check_interface
            built = self.model(X)
            check_interface(built)
            return built, None, None
        _refuse_other_containers(X)
        if not isinstance(X, (SequenceData, str)):
            _check_labels(X, Y, "fit")
        data = _as_data(X, Y, split="train")
        return ChainModel(data), data.label_names, data.n_features

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y=None) -> "SSVM":
        """Fit on the training set; see ``model`` for what X and Y are (the chain: X a list of
        (T_i, F) float arrays, a SequenceData or a registered chain problem's name; Y a list of
        int arrays in [0, K)). Returns self; nothing is changed when it raises."""
        cfg = self._config()  # SolverConfig's own ranges, before any work
        model, label_names, n_features = self._build_model(X, Y)
        solver = Solver(model, cfg)
        result = solver.run()
        self.model_, self.solver_, self.result_, self.coef_ = model, solver, result, result.w
        self.label_names_, self.n_features_ = label_names, n_features
        _fit_report(self)
        return self

    def _check_fitted(self):
        check_is_fitted(self, "coef_", msg="this SSVM is not fitted yet; call fit first")

    def predict(self, X):
        """Decoded labellings argmax_y ⟨w, ψ(x, y)⟩. The chain: a list of int64 arrays (one flat
        array of token labels when X is a SequenceData or a registered problem's name: its test
        set); a plain-Python model: a list of ``model.inference(x, coef_)``; a compiled model:
        ``model_.predict(coef_, X)``. NotFittedError before ``fit``."""
        self._check_fitted()
        kind = _model_kind(self.model)
        if kind == "python":
            return [np.asarray(self.model_.model.inference(x, self.coef_)) for x in X]
        if kind == "factory":
            return self.model_.predict(self.coef_, X)
        flat_in = isinstance(X, (SequenceData, str))
        data = _as_data(X, label_names=self.label_names_, n_features=self.n_features_)
        pred = self.model_.predict(self.coef_, data)
        if flat_in:
            return pred
        return [pred[data.tokens(i)] for i in range(data.n)]

    def score(self, X, Y=None) -> float:
        """Per-label accuracy in [0, 1]: the fraction of label entries (chain: tokens; multiclass:
        examples; multi-label: tags), pooled over all examples, that ``predict`` gets right. The
        chain: 1 − its token Hamming error (X may be a registered problem's name: its test set);
        a plain-Python model: mean of ``predict(X)[i] == Y[i]`` over every entry; a compiled
        model: 1 − ``model_.error(coef_, X)`` (its own test error)."""
        self._check_fitted()
        kind = _model_kind(self.model)
        if kind == "python":
            _check_examples(X, Y, "score")
            pred = self.predict(X)
            hits = [np.ravel(p) == np.ravel(np.asarray(y)) for p, y in zip(pred, Y)]
            return float(np.mean(np.concatenate(hits)))
        if kind == "factory":
            return 1.0 - float(self.model_.error(self.coef_, X))
        _refuse_other_containers(X)
        if not isinstance(X, (SequenceData, str)):
            _check_labels(X, Y, "score")
        data = _as_data(X, Y, label_names=self.label_names_, n_features=self.n_features_)
        return 1.0 - self.model_.error(self.coef_, data)


def _signature():
    import inspect
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD), P("lam", P.POSITIONAL_OR_KEYWORD, default=_DEFAULTS["lam"]),
              P("model", P.KEYWORD_ONLY, default=None)]
    params += [P(k, P.KEYWORD_ONLY, default=v) for k, v in _DEFAULTS.items() if k != "lam"]
    return inspect.Signature(params)


SSVM.__init__.__signature__ = _signature()  # help(SSVM), get_params and clone see every parameter


def _fit_report(est) -> None:
    """n_iter_, dual_gap_, and a ConvergenceWarning when the budget ended the fit or an
    OracleNotExactWarning when the exact gap came out negative."""
    from .config import Status
    res = est.result_
    est.n_iter_ = float(res.effective_passes)
    est.dual_gap_ = float(res.exact_gap)
    if res.status == Status.ORACLE_NOT_EXACT:
        ne = getattr(res, "not_exact", None)
        what = ne.message() if hasattr(ne, "message") else "the max oracle is not exact"
        warnings.warn(f"SSVM.fit: {what}", OracleNotExactWarning, stacklevel=4)
        return
    if res.status in (Status.MAX_PASSES, Status.TIME_LIMIT) and est.gap_threshold > 0:
        budget = (f"max_passes={est.max_passes}" if res.status == Status.MAX_PASSES
                  else f"time_limit={est.time_limit} s")
        # the status is MAX_PASSES / TIME_LIMIT only when the final exact gap is above the
        # threshold (Solver.run: else CONVERGED); shown with enough digits to tell them apart
        warnings.warn(f"SSVM.fit stopped on its budget ({budget}) with duality gap {res.exact_gap:.6g} > "
                      f"gap_threshold={est.gap_threshold:g}; raise max_passes / time_limit or lam",
                      ConvergenceWarning, stacklevel=4)  # _fit_report < fit < _fit_context < caller
