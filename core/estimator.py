"""A scikit-learn style estimator over the solver (fit / predict / score), without a
scikit-learn dependency (get_params / set_params follow its conventions)."""
from __future__ import annotations

import warnings

import numpy as np

from .config import SolverConfig, config_from_settings, settings_schema
from .datasets.base import SequenceData
from .models.chain import ChainModel, check_chain_size
from .solver import Solver

__all__ = ["SSVM", "ConvergenceWarning"]


class ConvergenceWarning(UserWarning):
    """``fit`` ended on its budget (passes or time) before the exact duality gap reached
    ``gap_threshold`` (scikit-learn's ConvergenceWarning, without the dependency)."""


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
                        f"{type(X).__name__}; train other models with gaplab.core.Solver(model, ...)")


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


class SSVM:
    """Chain structured SVM trained by a BCFW-family solver.

    Parameters
    ----------
    lam : float
        Regularization λ > 0.
    **params
        Any setting of :func:`gaplab.core.config.settings_schema` by its flat name: ``sampling``,
        ``gap_power``, ``step``, ``cache`` (bool: the oracle cache of Alg. 5), ``cache_factor``,
        ``cache_nu``, ``cache_size``, ``gap_check``, ``gap_threshold`` (default 1e-3),
        ``max_passes`` (default 500), ``time_limit``, ``seed``, ``batch_step``; see
        :class:`gaplab.core.SolverConfig`.

    Attributes
    ----------
    coef_ : ndarray of float64, shape (d,)
        The weight vector w after ``fit``.
    result_ : Result
        The solver's result (gap, passes, trace).
    n_iter_ : float
        Effective passes the fit used (oracle calls / n, exact gap passes included).
    dual_gap_ : float
        Exact duality gap of the fitted w (Paper: Eq. (5)).

    Warns
    -----
    ConvergenceWarning
        When ``fit`` ends on ``max_passes`` or ``time_limit`` before the gap reaches
        ``gap_threshold``.

    Notes
    -----
    ``fit``, ``predict`` and ``score`` also take the name of a registered problem
    (:mod:`gaplab.core.problems`, a chain problem such as ``"ocr-small"``): ``fit`` trains on its
    training set, ``predict``/``score`` use its test set.
    """

    _PARAMS = tuple(_DEFAULTS)

    def __init__(self, lam=_DEFAULTS["lam"], **params):
        unknown = [k for k in params if k not in _DEFAULTS]
        if unknown:
            raise TypeError(f"SSVM() got unknown parameter(s) {', '.join(map(repr, unknown))}; "
                            f"valid: {', '.join(self._PARAMS)}")
        self.lam = lam
        for k in self._PARAMS:
            if k != "lam":
                setattr(self, k, params.get(k, _DEFAULTS[k]))

    def get_params(self, deep=True) -> dict:
        return {k: getattr(self, k) for k in self._PARAMS}

    def set_params(self, **params) -> "SSVM":
        for k, v in params.items():
            if k not in self._PARAMS:
                raise ValueError(f"unknown parameter {k!r}; valid: {', '.join(self._PARAMS)}")
            setattr(self, k, v)
        return self

    def _config(self) -> SolverConfig:
        return config_from_settings({k: getattr(self, k) for k in self._PARAMS})

    def fit(self, X, Y=None) -> "SSVM":
        """Fit on sequences X (list of (T_i, F) float arrays, or a SequenceData, or the name of a
        registered chain problem: its training set) with labels Y (list of int arrays in [0, K)).
        Returns self."""
        cfg = self._config()  # validate before any work
        _refuse_other_containers(X)
        if not isinstance(X, (SequenceData, str)):
            _check_labels(X, Y, "fit")
        data = _as_data(X, Y, split="train")
        self.model_ = ChainModel(data)
        self.label_names_ = data.label_names
        self.n_features_ = data.n_features
        self.solver_ = Solver(self.model_, cfg)
        self.result_ = self.solver_.run()
        self.coef_ = self.result_.w
        _fit_report(self)
        return self

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise ValueError("this SSVM is not fitted yet; call fit first")

    def predict(self, X):
        """Decoded labellings argmax_y ⟨w, ψ(x, y)⟩: a list of int64 arrays (or one flat array of
        token labels when X is a SequenceData or a registered problem's name: its test set)."""
        self._check_fitted()
        flat_in = isinstance(X, (SequenceData, str))
        data = _as_data(X, label_names=self.label_names_, n_features=self.n_features_)
        pred = self.model_.predict(self.coef_, data)
        if flat_in:
            return pred
        return [pred[data.tokens(i)] for i in range(data.n)]

    def score(self, X, Y=None) -> float:
        """Token accuracy (1 − normalized-by-token Hamming error); X may be a registered
        problem's name (its test set)."""
        self._check_fitted()
        _refuse_other_containers(X)
        if not isinstance(X, (SequenceData, str)):
            _check_labels(X, Y, "score")
        data = _as_data(X, Y, label_names=self.label_names_, n_features=self.n_features_)
        return 1.0 - self.model_.error(self.coef_, data)


def _signature():
    import inspect
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    params += [P(k, P.POSITIONAL_OR_KEYWORD if k == "lam" else P.KEYWORD_ONLY, default=v) for k, v in _DEFAULTS.items()]
    return inspect.Signature(params)


SSVM.__init__.__signature__ = _signature()  # help(SSVM) shows every parameter with its default


def _fit_report(est) -> None:
    """n_iter_, dual_gap_ and a ConvergenceWarning when the budget ended the fit."""
    from .config import Status
    res = est.result_
    est.n_iter_ = float(res.effective_passes)
    est.dual_gap_ = float(res.exact_gap)
    if res.status in (Status.MAX_PASSES, Status.TIME_LIMIT) and est.gap_threshold > 0:
        budget = (f"max_passes={est.max_passes}" if res.status == Status.MAX_PASSES
                  else f"time_limit={est.time_limit} s")
        # the status is MAX_PASSES / TIME_LIMIT only when the final exact gap is above the
        # threshold (Solver.run: else CONVERGED); shown with enough digits to tell them apart
        warnings.warn(f"SSVM.fit stopped on its budget ({budget}) with duality gap {res.exact_gap:.6g} > "
                      f"gap_threshold={est.gap_threshold:g}; raise max_passes / time_limit or lam",
                      ConvergenceWarning, stacklevel=3)
