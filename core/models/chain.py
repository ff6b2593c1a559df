"""Chain (sequence labelling) model: the paper's OCR and CoNLL model (Paper: App. I).

Joint feature map ψ(x, y) ∈ R^d, d = K·(F+1) + K + K + K², laid out as
  emission E (F+1, K) row-major: Σ_t x̃_t[j]·[y_t = k], x̃_t = (x_t, 1) (the constant attribute
  carries the per-label bias), first-label bias (K), last-label bias (K), transitions (K, K).

OCR: F = 128, K = 26, d = 4,082. Loss: normalized Hamming. Max oracle: Viterbi.

What lives where: :class:`ChainModel` and the memory check of K (here); the flat arrays and
numba primitives in :mod:`gaplab.core.models.chain_primitives`, the label-space pairwise step in
:mod:`gaplab.core.models.chain_pairwise`.
"""
from __future__ import annotations

import numpy as np

from ..datasets.base import SequenceData
from . import protocol as _p
from .chain_primitives import ChainArrays, _chain_gram, _predict
from .protocol import StructuredModel, check_labelling

__all__ = ["ChainModel", "ChainArrays", "check_chain_size"]

_EMPTY_F = np.zeros(0, dtype=np.float64)


def chain_state_bytes(n: int, tokens: int, K: int, n_features: int) -> int:
    """A lower bound of the bytes a solver over a chain model with K labels needs: the block
    statistics μ (T_i·K node marginals and K² transitions per sequence) and six vectors of
    dimension d = K·(F+1) + 2K + K² (w, v, the scratch of a step). Python ints: no overflow."""
    d = K * (n_features + 1) + 2 * K + K * K
    return 8 * (tokens * K + n * K * K) + 8 * 6 * d


def memory_limit_bytes() -> int:
    """The memory this process may use: the smaller of the machine's physical memory and the
    address-space limit (``ulimit -v``, RLIMIT_AS) when one is set."""
    import os
    limit = None
    try:
        limit = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limit = soft if limit is None else min(limit, soft)
    except (ImportError, ValueError, OSError):
        pass
    return int(limit) if limit else 2 ** 62


def check_chain_size(n: int, tokens: int, K: int, n_features: int, what: str = "K") -> None:
    """Refuse a number of labels K whose statistics cannot fit in memory, before anything of
    that size is allocated.

    Raises
    ------
    ValueError
        Saying how much memory K labels need, how much the process may use and the largest K
        that fits for these sequences.
    """
    need = chain_state_bytes(n, tokens, K, n_features)
    have = memory_limit_bytes()
    if need <= have:
        return
    lo, hi = 1, K  # the largest K that fits (bisection on the monotone bound)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chain_state_bytes(n, tokens, mid, n_features) <= have:
            lo = mid
        else:
            hi = mid - 1
    raise ValueError(
        f"{what} = {K} labels is more than a chain model can hold here: its solver keeps K² transition "
        f"statistics per sequence, at least {need / 2 ** 30:.3g} GiB for these {n} sequences, and this "
        f"process may use {have / 2 ** 30:.3g} GiB; at most K = {lo} labels fit (labels are numbered "
        "0..K-1: renumber sparse label values first)")


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
    arrays : ChainArrays
        The flat arrays the numba kernels read (read-only; checked again when a Solver is built).
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
        check_chain_size(data.n, data.n_tokens, K, F)  # before the Gram blocks and any solver state
        self.d = self.trans_off + K * K
        self.n = data.n
        lens = data.lengths
        self.max_len = int(lens.max())
        self.arrays = self._build(data, with_gram=True)
        self.name = getattr(data, "name", None) or "chain"

    def _build(self, data: SequenceData, with_gram: bool) -> ChainArrays:
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
        M = ChainArrays(
            data.n, self.d, K, stat_off, data.seq_offsets, data.labels,
            data.feat_indptr, data.feat_indices, data.feat_values, self.F1,
            int(bool(np.all(data.feat_values == 1.0))),
            gram_off, gram, self.first_off, self.last_off, self.trans_off,
        )
        # the model's own arrays: locked for good (the kernels trust these offsets); the arrays of a
        # test set are built for one decoding call and never handed out, so they are not copied
        return _p.freeze_arrays(M) if with_gram else M

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
        """The sequence's labels as text (letters for OCR, chunk tags for CoNLL), the words
        (``words``: the data's words, or its extras' word of the sequence) and the letter images
        (``image``: uint8 (T_i, h, w), dark ink on white, from the data's extras ``images``) when
        the data has them (the display contract: :mod:`gaplab.core.models.display`)."""
        y = check_labelling(self, i, y)
        out = {"kind": "sequence", "text": self.describe_label(i, y), "labels": y}
        words = getattr(self.data, "words", None)
        if words is not None:
            out["words"] = words[i] if not hasattr(words, "shape") else None
        extras = getattr(self.data, "extras", None) or {}
        if out.get("words") is None and extras.get("words") is not None:
            out["words"] = extras["words"][i]
        if extras.get("images") is not None:   # 0/1 letter images (1: ink)
            ink = np.asarray(extras["images"][self.data.tokens(i)], dtype=np.int64)
            out["image"] = np.clip(255 - 255 * ink, 0, 255).astype(np.uint8)
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

    def _subtract_loss(self, i, h):
        """Remove the loss term 1/T·[k != y_t] from a score vector of sequence i (decoding)."""
        M = self.arrays
        t0, t1 = int(M.lab_off[i]), int(M.lab_off[i + 1])
        T = t1 - t0
        K = M.K
        U = h[: T * K].reshape(T, K)
        U -= 1.0 / T
        U[np.arange(T), M.gt[t0:t1]] += 1.0 / T

    def describe_label(self, i: int, y) -> str:
        names = self.data.label_names
        sep = "" if all(len(s) == 1 for s in names) else " "
        return sep.join(names[int(k)] for k in y)
