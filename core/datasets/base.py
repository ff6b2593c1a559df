"""Containers for sequence-labelling data sets (OCR, CoNLL-2000, synthetic chains).

A data set is stored as flat arrays so that numba kernels can read it without copies:
tokens of all sequences are concatenated; per-token input features form a CSR matrix.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SequenceData"]


def frozen_copy(arr, dtype, name: str, ndim: int) -> np.ndarray:
    """A private, read-only, C-contiguous copy of ``arr`` as ``dtype`` (the datasets' arrays: what
    was validated is what the model's kernels read; nothing, the caller's array included, can
    change it afterwards). ValueError on the wrong number of axes; TypeError when ``dtype`` is an
    integer type and ``arr`` holds non-integers (a conversion would truncate them silently);
    for ``dtype=np.bool_`` the values must be bools or 0/1 numbers (ValueError naming one that
    is not: a 0.5 would silently become True)."""
    a = np.asarray(arr)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if np.issubdtype(dtype, np.integer) and a.size and not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if dtype is np.bool_ and a.dtype != np.bool_:
        if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
            raise TypeError(f"{name} must hold bools (or 0/1), got dtype {a.dtype}")
        bad = ~((a == 0) | (a == 1))
        if bad.any():
            raise ValueError(f"{name} must hold bools (or 0/1), got {a[bad].ravel()[0].item()!r} at index "
                             f"{tuple(int(j) for j in np.argwhere(bad)[0])}")
    out = np.array(a, dtype=dtype, order="C", copy=True)
    out.flags.writeable = False
    return out

# extras that describe the whole data set (not one entry per token or per sequence)
_GLOBAL_EXTRAS = frozenset({"attribute_names"})


@dataclass(frozen=True, eq=False)
class SequenceData:
    """Labelled sequences with sparse per-token features.

    Parameters
    ----------
    seq_offsets : ndarray of int64, shape (n + 1,)
        Token offsets: the tokens of sequence ``i`` are ``seq_offsets[i]:seq_offsets[i+1]``.
        Every sequence has at least one token.
    feat_indptr : ndarray of int64, shape (n_tokens + 1,)
        CSR row pointers of the token-feature matrix (one row per token).
    feat_indices : ndarray of int64, shape (nnz,)
        CSR column indices, each in ``[0, n_features)``.
    feat_values : ndarray of float64, shape (nnz,)
        CSR values (finite).
    labels : ndarray of int64, shape (n_tokens,)
        Ground-truth label of each token, in ``[0, n_labels)``.
    n_features : int
        Number of raw input attributes per token (the chain model adds a constant
        attribute of its own for the per-label bias).
    label_names : tuple of str
        Names of the ``n_labels`` labels.
    name : str
        Short name shown in the CLI and the app (e.g. ``"ocr-small/train"``).
    extras : dict
        Optional per-token or per-sequence extras for display, e.g. ``images``
        (uint8, shape (n_tokens, 16, 8)) for OCR or ``words`` / ``pos`` for CoNLL.

    Raises
    ------
    ValueError
        If shapes are inconsistent, a sequence is empty, a feature is not finite, an
        index is out of range or a label is outside ``[0, n_labels)``.
    TypeError
        If an array is not a numpy array, or offsets / indices / labels are not integers.

    Notes
    -----
    The five arrays are private read-only copies, validated once: assigning into them raises
    ``ValueError: assignment destination is read-only``, so no label or feature index can be
    moved out of range (which would make the compiled kernels read out of bounds) after the
    checks.
    """

    seq_offsets: np.ndarray
    feat_indptr: np.ndarray
    feat_indices: np.ndarray
    feat_values: np.ndarray
    labels: np.ndarray
    n_features: int
    label_names: tuple
    name: str = "data"
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        conv = {
            "seq_offsets": np.int64,
            "feat_indptr": np.int64,
            "feat_indices": np.int64,
            "feat_values": np.float64,
            "labels": np.int64,
        }
        for attr, dt in conv.items():
            val = getattr(self, attr)
            if not isinstance(val, np.ndarray):
                raise TypeError(f"{attr} must be a numpy array, got {type(val).__name__}")
            if val.ndim != 1:
                raise ValueError(f"{attr} must be 1-D, got shape {val.shape}")
            if dt is np.int64 and val.size and not (np.issubdtype(val.dtype, np.integer)
                                                    or val.dtype == np.bool_):
                # a float label or offset would be truncated silently by the int64 conversion
                raise TypeError(f"{attr} must hold integers, got dtype {val.dtype}")
            if dt is np.int64 and val.dtype == np.uint64 and val.size and val.max() > np.iinfo(np.int64).max:
                raise ValueError(f"{attr} holds values beyond the int64 range")
            # a private, read-only copy: the arrays validated here are the ones the kernels read,
            # and nothing (the caller's array included) can change them afterwards
            arr = np.array(val, dtype=dt, order="C", copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, attr, arr)
        object.__setattr__(self, "label_names", tuple(str(s) for s in self.label_names))
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Check every invariant of the container; raise ValueError naming the field."""
        so, ip = self.seq_offsets, self.feat_indptr
        if so.size < 2:
            raise ValueError(f"seq_offsets must describe at least one sequence, got shape {so.shape}")
        if so[0] != 0:
            raise ValueError(f"seq_offsets[0] must be 0, got {so[0]}")
        lengths = np.diff(so)
        if np.any(lengths < 1):
            bad = int(np.flatnonzero(lengths < 1)[0])
            raise ValueError(f"sequence {bad} is empty (seq_offsets must be strictly increasing)")
        n_tokens = int(so[-1])
        if self.labels.shape != (n_tokens,):
            raise ValueError(f"labels must have shape ({n_tokens},), got {self.labels.shape}")
        if ip.shape != (n_tokens + 1,):
            raise ValueError(f"feat_indptr must have shape ({n_tokens + 1},), got {ip.shape}")
        if ip[0] != 0 or np.any(np.diff(ip) < 0):
            raise ValueError("feat_indptr must start at 0 and be non-decreasing")
        nnz = int(ip[-1])
        if self.feat_indices.shape != (nnz,) or self.feat_values.shape != (nnz,):
            raise ValueError(
                f"feat_indices and feat_values must have shape ({nnz},), got "
                f"{self.feat_indices.shape} and {self.feat_values.shape}"
            )
        if not isinstance(self.n_features, (int, np.integer)) or self.n_features < 1:
            raise ValueError(f"n_features must be a positive int, got {self.n_features!r}")
        if nnz and (self.feat_indices.min() < 0 or self.feat_indices.max() >= self.n_features):
            raise ValueError(
                f"feat_indices must lie in [0, {self.n_features}), got range "
                f"[{self.feat_indices.min()}, {self.feat_indices.max()}]"
            )
        if not np.all(np.isfinite(self.feat_values)):
            raise ValueError("feat_values contains NaN or inf; features must be finite")
        K = len(self.label_names)
        if K < 1:
            raise ValueError("label_names must name at least one label")
        if n_tokens and (self.labels.min() < 0 or self.labels.max() >= K):
            raise ValueError(
                f"labels must lie in [0, {K}) (n_labels), got range "
                f"[{self.labels.min()}, {self.labels.max()}]"
            )

    # ------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of sequences (blocks of the SSVM dual)."""
        return int(self.seq_offsets.size - 1)

    @property
    def n_tokens(self) -> int:
        return int(self.seq_offsets[-1])

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.seq_offsets)

    def tokens(self, i: int) -> slice:
        """Slice of the tokens of sequence ``i``."""
        if not 0 <= i < self.n:
            raise IndexError(f"sequence index {i} out of range [0, {self.n})")
        return slice(int(self.seq_offsets[i]), int(self.seq_offsets[i + 1]))

    def dense_features(self, i: int) -> np.ndarray:
        """Dense features of sequence ``i``, float64 of shape (T_i, n_features)."""
        sl = self.tokens(i)
        out = np.zeros((sl.stop - sl.start, self.n_features))
        for r, tok in enumerate(range(sl.start, sl.stop)):
            a, b = self.feat_indptr[tok], self.feat_indptr[tok + 1]
            out[r, self.feat_indices[a:b]] += self.feat_values[a:b]
        return out

    def subset(self, idx: Any, name: str | None = None) -> "SequenceData":
        """A new data set made of the sequences ``idx`` (in that order)."""
        idx = np.asarray(idx, dtype=np.int64).ravel()
        if idx.size == 0:
            raise ValueError("subset needs at least one sequence index")
        if idx.min() < 0 or idx.max() >= self.n:
            raise ValueError(f"subset indices must lie in [0, {self.n})")
        starts, stops = self.seq_offsets[idx], self.seq_offsets[idx + 1]
        tok = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])
        lens = stops - starts
        seq_offsets = np.concatenate([[0], np.cumsum(lens)])
        f_lens = self.feat_indptr[tok + 1] - self.feat_indptr[tok]
        feat_indptr = np.concatenate([[0], np.cumsum(f_lens)])
        nz = np.concatenate(
            [np.arange(self.feat_indptr[t], self.feat_indptr[t + 1]) for t in tok]
        ) if feat_indptr[-1] else np.zeros(0, np.int64)
        extras = {}
        for k, v in self.extras.items():
            if k in _GLOBAL_EXTRAS:  # data-set-wide, never sliced
                extras[k] = v
            elif isinstance(v, np.ndarray) and v.shape[:1] == (self.n_tokens,):
                extras[k] = v[tok]
            elif isinstance(v, (list, tuple)) and len(v) == self.n:
                extras[k] = type(v)(v[j] for j in idx)
            elif isinstance(v, np.ndarray) and v.shape[:1] == (self.n,):
                extras[k] = v[idx]
        return SequenceData(
            seq_offsets=seq_offsets,
            feat_indptr=feat_indptr,
            feat_indices=self.feat_indices[nz],
            feat_values=self.feat_values[nz],
            labels=self.labels[tok],
            n_features=self.n_features,
            label_names=self.label_names,
            name=name or f"{self.name}[subset]",
            extras=extras,
        )

    def compact(self, name: str | None = None) -> "SequenceData":
        """The same sequences with only the attributes that occur, renumbered in increasing
        order (n_features shrinks; the model's d with it). Useful for small subsets of a
        data set with a huge attribute dictionary (CoNLL)."""
        used = np.unique(self.feat_indices)
        if used.size == 0:
            used = np.zeros(1, dtype=np.int64)
        remap = np.full(self.n_features, -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        extras = dict(self.extras)
        names = extras.get("attribute_names")
        if names is not None and len(names) == self.n_features:
            extras["attribute_names"] = tuple(names[j] for j in used)
        return SequenceData(
            seq_offsets=self.seq_offsets, feat_indptr=self.feat_indptr,
            feat_indices=remap[self.feat_indices], feat_values=self.feat_values,
            labels=self.labels, n_features=int(used.size), label_names=self.label_names,
            name=name or f"{self.name}[compact]", extras=extras,
        )

    @classmethod
    def from_dense(cls, X: list, Y: list, label_names, name: str = "data", **extras) -> "SequenceData":
        """Build from a list of dense arrays ``X[i]`` (T_i, n_features) and label arrays ``Y[i]``."""
        if len(X) != len(Y):
            raise ValueError(f"X and Y must have the same length, got {len(X)} and {len(Y)}")
        if len(X) == 0:
            raise ValueError("X must contain at least one sequence")
        Xs = []
        for i, x in enumerate(X):
            a = np.asarray(x)
            if np.iscomplexobj(a):  # casting would keep the real part only, with just numpy's warning
                raise TypeError(f"X[{i}] has complex dtype {a.dtype}; features must be real (float) numbers")
            if a.dtype.kind not in "biuf":
                raise TypeError(f"X[{i}] must hold real (float) features, got dtype {a.dtype}")
            Xs.append(np.asarray(a, dtype=np.float64))
        d = None
        for i, x in enumerate(Xs):
            if x.ndim != 2:
                raise ValueError(f"X[{i}] must be 2-D (T, n_features), got shape {x.shape}")
            if d is None:
                d = x.shape[1]
            elif x.shape[1] != d:
                raise ValueError(f"X[{i}] has {x.shape[1]} features, expected {d}")
            if x.shape[0] == 0:
                raise ValueError(f"X[{i}] is an empty sequence (T=0)")
            if not np.all(np.isfinite(x)):
                raise ValueError(f"X[{i}] contains NaN or inf; features must be finite")
        ys = [np.asarray(y).ravel() for y in Y]
        for i, (x, y) in enumerate(zip(Xs, ys)):
            if y.shape[0] != x.shape[0]:
                raise ValueError(f"Y[{i}] has {y.shape[0]} labels for {x.shape[0]} tokens")
            if y.size and not np.issubdtype(y.dtype, np.integer):
                raise ValueError(f"Y[{i}] must hold integer labels, got dtype {y.dtype}")
        allx = np.vstack(Xs)
        rows, cols = np.nonzero(allx)
        counts = np.bincount(rows, minlength=allx.shape[0])
        return cls(
            seq_offsets=np.concatenate([[0], np.cumsum([x.shape[0] for x in Xs])]),
            feat_indptr=np.concatenate([[0], np.cumsum(counts)]),
            feat_indices=cols.astype(np.int64),
            feat_values=allx[rows, cols],
            labels=np.concatenate(ys).astype(np.int64),
            n_features=int(d),
            label_names=tuple(label_names),
            name=name,
            extras=dict(extras),
        )
