"""Chain (sequence labelling) model: the paper's OCR and CoNLL model (Paper: App. I).

Joint feature map ψ(x, y) ∈ R^d, d = K·(F+1) + K + K + K², laid out as
  emission E (F+1, K) row-major: Σ_t x̃_t[j]·[y_t = k], x̃_t = (x_t, 1) (the constant attribute
  carries the per-label bias), first-label bias (K), last-label bias (K), transitions (K, K).
OCR: F = 128, K = 26, d = 4,082. Loss: normalized Hamming. Max oracle: Viterbi.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..datasets.base import SequenceData
from ..kernels import MODEL_CHAIN, ModelArrays, block_oracle, block_scores
from .protocol import StructuredModel, check_labelling

__all__ = ["ChainModel"]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


@njit(cache=True, nogil=True)
def _chain_gram(seq_off, indptr, indices, values, F, gram_off, gram):
    mark = np.zeros(F)
    for i in range(seq_off.shape[0] - 1):
        t0 = seq_off[i]
        T = seq_off[i + 1] - t0
        g0 = gram_off[i]
        for t in range(T):
            a = t0 + t
            for p in range(indptr[a], indptr[a + 1]):
                mark[indices[p]] += values[p]
            for u in range(t, T):
                b = t0 + u
                s = 1.0  # constant attribute
                for p in range(indptr[b], indptr[b + 1]):
                    s += mark[indices[p]] * values[p]
                gram[g0 + t * T + u] = s
                gram[g0 + u * T + t] = s
            for p in range(indptr[a], indptr[a + 1]):
                mark[indices[p]] = 0.0


@njit(cache=True, nogil=True)
def _predict(M, w, out, h, y, vit_f, vit_i):
    K = M.K
    for i in range(M.n):
        t0 = M.lab_off[i]
        T = M.lab_off[i + 1] - t0
        block_scores(M, i, w, h)
        for t in range(T):  # remove the loss term: plain decoding
            g = M.gt[t0 + t]
            for k in range(K):
                if k != g:
                    h[t * K + k] -= 1.0 / T
        block_oracle(M, i, h, y, vit_f, vit_i)
        for t in range(T):
            out[t0 + t] = y[t]


class ChainModel(StructuredModel):
    """The chain SSVM model over a :class:`SequenceData` training set.

    Parameters
    ----------
    data : SequenceData
        Training sequences (one block of the dual per sequence).

    Attributes
    ----------
    d : int
        Dimension of w: K·(F+1) + 2K + K².
    arrays : ModelArrays
        The flat arrays the numba kernels read (shared, read-only by convention).
    """

    kind = "chain"
    oracle_tier = "compiled"

    def __init__(self, data: SequenceData):
        if not isinstance(data, SequenceData):
            raise TypeError(f"data must be a SequenceData, got {type(data).__name__}")
        self.data = data
        self.K = K = data.n_labels
        self.F = F = data.n_features
        self.F1 = F + 1
        self.first_off = K * self.F1
        self.last_off = self.first_off + K
        self.trans_off = self.last_off + K
        self.d = self.trans_off + K * K
        self.n = data.n
        lens = data.lengths
        self.max_len = int(lens.max())
        self.arrays = self._build(data, with_gram=True)
        self.name = getattr(data, "name", None) or "chain"

    def _build(self, data: SequenceData, with_gram: bool) -> ModelArrays:
        K = self.K
        lens = data.lengths
        stat_off = np.concatenate([[0], np.cumsum(lens * K + K * K)]).astype(np.int64)
        if with_gram:
            gram_off = np.concatenate([[0], np.cumsum(lens * lens)]).astype(np.int64)
            gram = np.zeros(int(gram_off[-1]))
            _chain_gram(data.seq_offsets, data.feat_indptr, data.feat_indices, data.feat_values,
                        self.F, gram_off, gram)
        else:
            gram_off, gram = np.zeros(data.n + 1, dtype=np.int64), _EMPTY_F
        return ModelArrays(
            MODEL_CHAIN, data.n, self.d, K, stat_off, data.seq_offsets, data.labels,
            data.feat_indptr, data.feat_indices, data.feat_values, self.F1,
            int(bool(np.all(data.feat_values == 1.0))),
            gram_off, gram, self.first_off, self.last_off, self.trans_off,
            _EMPTY_I, _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F,
        )

    # ---------------------------------------------------------------- helpers
    @property
    def stat_sizes(self) -> np.ndarray:
        return np.diff(self.arrays.stat_off)

    def label_len(self, i: int) -> int:
        return int(self.data.lengths[i])

    def joint_feature(self, i: int, y) -> np.ndarray:
        """Dense ψ(x_i, y), float64 of shape (d,) (for tests and display; O(d))."""
        y = np.asarray(y, dtype=np.int64)
        X = self.data.dense_features(i)
        T = X.shape[0]
        if y.shape != (T,):
            raise ValueError(f"y must have shape ({T},), got {y.shape}")
        K = self.K
        psi = np.zeros(self.d)
        E = psi[: self.first_off].reshape(self.F1, K)
        for t in range(T):
            E[: self.F, y[t]] += X[t]
            E[self.F, y[t]] += 1.0
        psi[self.first_off + y[0]] += 1
        psi[self.last_off + y[-1]] += 1
        for t in range(T - 1):
            psi[self.trans_off + y[t] * K + y[t + 1]] += 1
        return psi

    def loss(self, i: int, y) -> float:
        """Normalized Hamming loss L_i(y)."""
        gt = self.data.labels[self.data.tokens(i)]
        y = np.asarray(y)
        return float(np.mean(gt != y))

    def ground_truth(self, i: int) -> np.ndarray:
        """The correct labels of sequence i, int64 of shape (T_i,)."""
        return self.data.labels[self.data.tokens(i)].copy()

    def n_labels(self, i: int) -> int:
        """K, the number of labels of every position."""
        return self.K

    def max_oracle(self, i: int, w) -> np.ndarray:
        """Loss-augmented Viterbi decoding of sequence i at w, int64 of shape (T_i,)
        (Paper: Eq. (2))."""
        from . import max_oracle
        return max_oracle(self, i, w)[0]

    def decode(self, i: int, w) -> np.ndarray:
        """Plain Viterbi decoding argmax_y ⟨w, ψ(x_i, y)⟩ of sequence i, int64 of shape (T_i,)."""
        from . import max_oracle
        return max_oracle(self, i, w, loss_augmented=False)[0]

    def describe_block(self, i: int, y) -> dict:
        """The sequence's labels as text (letters for OCR, chunk tags for CoNLL), the words and
        the OCR image when the data has them."""
        y = check_labelling(self, i, y)
        out = {"kind": "sequence", "text": self.describe_label(i, y), "labels": y}
        words = getattr(self.data, "words", None)
        if words is not None:
            out["words"] = words[i] if not hasattr(words, "shape") else None
        return out

    def predict(self, w: np.ndarray, data: SequenceData | None = None) -> np.ndarray:
        """Plain decoding argmax_y ⟨w, ψ(x, y)⟩ of every token of ``data`` (default: the
        training set). Returns int64 labels of shape (n_tokens,)."""
        data = self.data if data is None else data
        self._check_compatible(data)
        w = self._check_w(w)
        M = self.arrays if data is self.data else self._build(data, with_gram=False)
        out = np.empty(data.n_tokens, dtype=np.int64)
        T = int(data.lengths.max())
        _predict(M, w, out, np.empty(T * self.K + self.K * self.K), np.empty(T, np.int64),
                 np.empty(T * self.K), np.empty(T * self.K, np.int64))
        return out

    def error(self, w: np.ndarray, data: SequenceData | None = None) -> float:
        """Test error: fraction of wrongly labelled tokens (letters for OCR)."""
        data = self.data if data is None else data
        return float(np.mean(self.predict(w, data) != data.labels))

    def _check_compatible(self, data):
        if not isinstance(data, SequenceData):
            raise TypeError(f"data must be a SequenceData, got {type(data).__name__}")
        if data.n_features != self.F or data.n_labels != self.K:
            raise ValueError(
                f"data has {data.n_features} features and {data.n_labels} labels; the model expects "
                f"{self.F} and {self.K}"
            )

    def _check_w(self, w):
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w must have shape ({self.d},), got {w.shape}")
        return w

    def describe_label(self, i: int, y) -> str:
        names = self.data.label_names
        sep = "" if all(len(s) == 1 for s in names) else " "
        return sep.join(names[int(k)] for k in y)
