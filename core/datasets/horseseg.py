"""The released HorseSeg feature files (Kolesnikov et al., ECCV 2014) as superpixel segmentation data.

Paper: App. I (HorseSeg). The paper's experiments read HorseSeg from the feature files of its
authors (``data.tar`` of https://pub.ist.ac.at/~akolesnikov/HDSeg/); this module reads those
files into the same :class:`~gaplab.core.datasets.segmentation.SegmentationData` that the
Weizmann pipeline (:mod:`gaplab.core.datasets.horse`) builds, so
:class:`~gaplab.core.models.SegmentationModel` and every solver run on them unchanged. Nothing is
downloaded and nothing is shipped; reading HDF5 needs the optional ``h5py`` package
(``pip install gaplab[horseseg]``).

Layout (as read by gapBCFW's ``load_dataset_horseSeg.m``), under a root directory:

* ``data/horse-features.bin`` (training) and ``data/horse-features-test.bin`` (test): HDF5 files
  with, for image k (``%06d`` = k, from 0): ``features_%06d`` (the unary features, V_k x d_u as
  h5py reads a file MATLAB reads as d_u x V_k), ``edge_structure_%06d`` (E_k x 2, 0-based
  superpixel indices), ``labels_%06d`` (V_k, 0 = background, 1 = horse) and optionally
  ``superpixel_count_%06d``, ``edge_count_%06d``, ``image_name_%06d``;
* ``data/horse-superpixels/%06d.png`` and ``data/horse-superpixels-test/%06d.png``: the
  superpixel index (0-based) of every pixel.

The training file holds HorseSeg-small first (147 images with manual annotations), then the
5,974 images of -medium, then the 19,317 of -large; the test file 241 images.

What is derived here (the authors' code does the same):

* areas: pixels per superpixel in its PNG (the class-balanced loss weights come from them);
* pairwise features, d_p = 1 + 9 · len(etas) = 100: a constant 1, then for each of the 9
  histograms of the unary features and η = 2^-5, ..., 2^5: exp(−η χ²(h_p, h_q)) with
  χ²(a, b) = ½ Σ_k (a_k − b_k)² / (a_k + b_k) on the **squared** histogram entries (the files'
  histograms are L2-normalised, their squares L1-normalised). The unary features keep the
  files' order: a constant, then position (3 scopes x 16), colour (3 x 128) and SIFT words
  (3 x 512) -- d_u = 1,969; :func:`horseseg_layout` gives the ranges;
* the pixel mask: the superpixel labels painted onto the superpixel map (the files carry
  superpixel labels; the HDSeg annotation PNGs are not read), so ``fg_area`` is 0 or ``area``.

Photos are not read (the app draws the superpixel map on grey).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from .segmentation import SegmentationData

__all__ = ["load_horseseg", "read_horseseg_h5", "horseseg_layout", "horseseg_pairwise_features",
           "HORSESEG_SIZES", "HORSESEG_N_TEST", "HORSESEG_HIST_SIZES", "HORSESEG_ETAS"]

#: training images of HorseSeg-small, -medium and -large (the first ones of the training file)
HORSESEG_SIZES = {"small": 147, "medium": 147 + 5974, "large": 147 + 5974 + 19317}
#: images of the HorseSeg test file
HORSESEG_N_TEST = 241
#: bins of the position, colour and SIFT-word histograms (each in 3 scopes)
HORSESEG_HIST_SIZES = (16, 128, 512)
#: the η of the pairwise features exp(−η χ²)
HORSESEG_ETAS = tuple(2.0 ** k for k in range(-5, 6))

_FILES = {"train": ("data/horse-features.bin", "data/horse-superpixels"),
          "test": ("data/horse-features-test.bin", "data/horse-superpixels-test")}


def horseseg_layout(hist_sizes=HORSESEG_HIST_SIZES, n_etas: int = len(HORSESEG_ETAS)) -> dict:
    """Names and [start, stop) ranges of the feature groups of w = (w_U, w_P) for the HorseSeg
    files' order (type-major: position, colour, texture, each for the scopes superpixel, first-
    and second-order neighbourhood)."""
    out, j = {"unary/constant": (0, 1)}, 1
    for nm, k in zip(("location", "colour", "texture"), hist_sizes):
        for scope in ("superpixel", "neighbours1", "neighbours2"):
            out[f"unary/{scope}/{nm}"] = (j, j + int(k))
            j += int(k)
    out["pairwise/constant"] = (j, j + 1)
    j += 1
    for nm in ("location", "colour", "texture"):
        for scope in ("superpixel", "neighbours1", "neighbours2"):
            out[f"pairwise/{scope}/{nm}"] = (j, j + n_etas)
            j += n_etas
    return out


def horseseg_pairwise_features(xu: np.ndarray, edges: np.ndarray, hist_sizes=HORSESEG_HIST_SIZES,
                               etas=HORSESEG_ETAS) -> np.ndarray:
    """Pairwise features of one image from its unary features (the authors'
    ``construct_pairwise_features``): float32 of shape (E, 1 + 9 · len(etas)), all in [0, 1].

    Parameters
    ----------
    xu : ndarray, shape (V, 1 + 3 · sum(hist_sizes))
        Unary features: a constant, then the 9 L2-normalised histograms (type-major).
    edges : ndarray of int, shape (E, 2)
        0-based superpixel pairs.
    hist_sizes : tuple of 3 int
        Bins of the position, colour and texture histograms.
    etas : sequence of float
        The η of exp(−η χ²).
    """
    xu = np.asarray(xu, dtype=np.float64)
    sizes = [int(k) for k in hist_sizes for _ in range(3)]
    if xu.ndim != 2 or xu.shape[1] != 1 + sum(sizes):
        raise ValueError(f"xu must have shape (V, {1 + sum(sizes)}) for hist_sizes {tuple(hist_sizes)}, "
                         f"got {xu.shape}")
    etas = np.asarray(etas, dtype=np.float64)
    u, v = edges[:, 0], edges[:, 1]
    out = np.empty((len(edges), 1 + len(sizes) * etas.size), dtype=np.float32)
    out[:, 0] = 1.0
    j = 1
    for h, k in enumerate(sizes):
        X = xu[:, j:j + k] ** 2
        a, b = X[u], X[v]
        s = a + b
        chi = 0.5 * np.sum(np.divide((a - b) ** 2, s, out=np.zeros_like(s), where=s > 0), axis=1)
        out[:, 1 + h * etas.size:1 + (h + 1) * etas.size] = np.exp(-np.outer(chi, etas))
        j += k
    return out


def _h5py():
    try:
        import h5py
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("reading the HorseSeg feature files needs h5py: pip install 'gaplab[horseseg]' "
                          "(or pip install h5py)") from e
    return h5py


def _scalar_str(v) -> str:
    v = np.asarray(v).ravel()
    if v.size == 0:
        return ""
    x = v[0]
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if np.issubdtype(v.dtype, np.integer):  # MATLAB char arrays stored as uint16 codes
        return "".join(chr(int(c)) for c in v)
    return str(x)


def _read_image(f, k: int, sp_dir: Path, d_u: int):
    key = f"{k:06d}"
    missing = [nm for nm in ("features", "edge_structure", "labels") if f"{nm}_{key}" not in f]
    if missing:
        raise ValueError(f"{f.filename}: image {key} has no dataset(s) "
                         f"{', '.join(f'{m}_{key}' for m in missing)}")
    labels = np.asarray(f[f"labels_{key}"][()]).ravel()
    V = int(np.asarray(f[f"superpixel_count_{key}"][()]).ravel()[0]) if f"superpixel_count_{key}" in f \
        else labels.size
    if labels.size != V:
        raise ValueError(f"{f.filename}: labels_{key} has {labels.size} entries, superpixel_count_{key} = {V}")
    if not np.all((labels == 0) | (labels == 1)):
        raise ValueError(f"{f.filename}: labels_{key} must be 0 (background) or 1 (horse), got values "
                         f"{np.unique(labels)[:5]}")
    X = np.asarray(f[f"features_{key}"][()], dtype=np.float32)
    if X.shape == (d_u, V) and X.shape != (V, d_u):
        X = X.T
    if X.shape != (V, d_u):
        raise ValueError(f"{f.filename}: features_{key} must have shape (V, d_u) = ({V}, {d_u}) or its "
                         f"transpose (V: superpixels of the image; d_u = 1 + 3 · sum(hist_sizes)), got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{f.filename}: features_{key} has non-finite values")
    e = np.asarray(f[f"edge_structure_{key}"][()])
    if e.size == 0:
        e = np.zeros((0, 2), dtype=np.int64)
    elif e.ndim == 2 and e.shape[1] != 2 and e.shape[0] == 2:
        e = e.T
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"{f.filename}: edge_structure_{key} must be (E, 2) or (2, E), got shape {e.shape}")
    e = np.sort(e.astype(np.int64), axis=1)
    if e.size and (e.min() < 0 or e.max() >= V or np.any(e[:, 0] == e[:, 1])):
        raise ValueError(f"{f.filename}: edge_structure_{key} must join two different 0-based superpixels "
                         f"< {V}, got range [{e.min()}, {e.max()}]")
    e = np.unique(e, axis=0)
    png = sp_dir / f"{key}.png"
    if not png.is_file():
        raise FileNotFoundError(f"superpixel map {png} not found (image {key} of {f.filename})")
    from skimage import io
    seg = np.asarray(io.imread(str(png)))
    if seg.ndim != 2:
        raise ValueError(f"superpixel map {png} must be a 2-D index image, got shape {seg.shape}")
    seg = seg.astype(np.int64)
    if seg.min() < 0 or seg.max() >= V:
        raise ValueError(f"superpixel map {png} has indices [{seg.min()}, {seg.max()}], image {key} has "
                         f"{V} superpixels (0-based)")
    area = np.bincount(seg.ravel(), minlength=V)
    if np.any(area == 0):
        raise ValueError(f"superpixel map {png} has no pixel of superpixel(s) {np.flatnonzero(area == 0)[:5]}")
    name = _scalar_str(f[f"image_name_{key}"][()]) if f"image_name_{key}" in f else key
    return {"X": X, "edges": e, "labels": labels.astype(np.int64), "seg": seg.astype(np.int32), "area": area,
            "name": Path(name).stem or key}


def read_horseseg_h5(feature_file: Any, superpixel_dir: Any, indices=None, *, name: str = "horseseg",
                     hist_sizes=HORSESEG_HIST_SIZES, etas=HORSESEG_ETAS, progress: bool = False) -> SegmentationData:
    """Images of one HorseSeg feature file and their superpixel PNGs as a SegmentationData.

    Parameters
    ----------
    feature_file : str or os.PathLike
        The HDF5 file (``horse-features.bin`` / ``horse-features-test.bin``).
    superpixel_dir : str or os.PathLike
        Directory of the ``%06d.png`` superpixel maps of the same images.
    indices : sequence of int, optional
        Image numbers k to read (default: every ``features_%06d`` of the file, in order).
    name : str
        Name of the data set.
    hist_sizes, etas
        Layout of the unary histograms and the η of the pairwise features (module docstring).
    progress : bool
        tqdm progress bar.

    Returns
    -------
    SegmentationData
        xu float32 (V, d_u) as in the file, xp float32 (E, d_p) from
        :func:`horseseg_pairwise_features`, gt the files' labels, areas from the PNGs;
        ``extras`` holds ``layout``, ``hist_sizes``, ``etas``, ``source`` and ``indices``.

    Raises
    ------
    ImportError
        Without h5py.
    FileNotFoundError
        If the file, the directory or a superpixel PNG is missing.
    ValueError
        If a dataset is missing or its shape does not match the image's superpixel count, an
        edge is out of range, a label is not 0/1, the unary size does not match ``hist_sizes``
        or a superpixel has no pixel.
    """
    h5py = _h5py()
    feature_file, sp_dir = Path(feature_file), Path(superpixel_dir)
    if not feature_file.is_file():
        raise FileNotFoundError(f"HorseSeg feature file {feature_file} not found")
    if not sp_dir.is_dir():
        raise FileNotFoundError(f"superpixel directory {sp_dir} not found")
    d_u_expected = 1 + 3 * sum(int(k) for k in hist_sizes)
    with h5py.File(feature_file, "r") as f:
        if indices is None:
            indices = sorted(int(k[len("features_"):]) for k in f.keys()
                             if k.startswith("features_") and k[len("features_"):].isdigit())
        indices = [int(k) for k in indices]
        if not indices:
            raise ValueError(f"{feature_file}: no image to read (no features_%06d dataset or empty indices)")
        it = indices
        if progress:
            from tqdm.auto import tqdm
            it = tqdm(indices, desc=f"reading {feature_file.name}", unit="image")
        imgs = []
        for k in it:
            im = _read_image(f, k, sp_dir, d_u_expected)
            im["xp"] = horseseg_pairwise_features(im["X"], im["edges"], hist_sizes, etas)
            imgs.append(im)
    cum = lambda a: np.concatenate([[0], np.cumsum(a)]).astype(np.int64)  # noqa: E731
    gt = np.concatenate([im["labels"] for im in imgs])
    area = np.concatenate([im["area"] for im in imgs])
    return SegmentationData(
        sp_off=cum([im["labels"].size for im in imgs]), edge_off=cum([len(im["edges"]) for im in imgs]),
        edges=np.concatenate([im["edges"] for im in imgs]).reshape(-1, 2),
        xu=np.concatenate([im["X"] for im in imgs]),
        xp=np.concatenate([im["xp"] for im in imgs]).reshape(-1, 1 + 9 * len(etas)),
        gt=gt, area=area, fg_area=gt * area, img_shape=np.array([im["seg"].shape for im in imgs]),
        segments=np.concatenate([im["seg"].ravel() for im in imgs]),
        mask=np.concatenate([(im["labels"][im["seg"]] == 1).ravel() for im in imgs]),
        name=name, image_names=tuple(im["name"] for im in imgs),
        extras={"layout": horseseg_layout(hist_sizes, len(etas)), "hist_sizes": tuple(hist_sizes),
                "etas": tuple(float(x) for x in etas), "source": str(feature_file), "indices": indices})


def _candidates(data_home: Any) -> list:
    if data_home is not None:
        base = Path(data_home).expanduser()
        return [base, base / "horseseg"]
    out = []
    env = os.environ.get("GAPLAB_DATA")
    if env:
        out += [Path(env).expanduser(), Path(env).expanduser() / "horseseg"]
    out.append(Path(platformdirs.user_cache_dir("gaplab")) / "horseseg")
    return out


def load_horseseg(data_home: Any = None, *, size: str = "small", n_train: int | None = None,
                  n_test: int | None = None, hist_sizes=HORSESEG_HIST_SIZES, etas=HORSESEG_ETAS,
                  progress: bool = True):
    """HorseSeg-small/-medium/-large from the authors' feature files (Paper: App. I).

    The root holding ``data/horse-features.bin`` is looked for in ``data_home`` or
    ``data_home/horseseg`` if given (nowhere else), otherwise in ``$GAPLAB_DATA`` or
    ``$GAPLAB_DATA/horseseg``, then ``platformdirs.user_cache_dir("gaplab")/horseseg``.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        Root directory (see above).
    size : {"small", "medium", "large"}
        The first 147, 6,121 or 25,438 images of the training file.
    n_train, n_test : int, optional
        Read only the first images (default: all of ``size``, all 241 test images).
    hist_sizes, etas
        As :func:`read_horseseg_h5` (default: the released files' layout).
    progress : bool
        tqdm progress bars.

    Returns
    -------
    train, test : SegmentationData
        Named ``horseseg-{size}/train`` and ``horseseg-{size}/test``.

    Raises
    ------
    ImportError, FileNotFoundError, ValueError
        As :func:`read_horseseg_h5`; FileNotFoundError lists where it looked.
    """
    if size not in HORSESEG_SIZES:
        raise ValueError(f"size must be one of {sorted(HORSESEG_SIZES)}, got {size!r}")
    for nm, v, hi in (("n_train", n_train, HORSESEG_SIZES[size]), ("n_test", n_test, HORSESEG_N_TEST)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi):
            raise ValueError(f"{nm} must be an int in [1, {hi}], got {v!r}")
    tried = _candidates(data_home)
    root = next((d for d in tried if (d / _FILES["train"][0]).is_file()), None)
    if root is None:
        where = "\n  ".join(str(d) for d in tried)
        raise FileNotFoundError(f"HorseSeg feature files not found: no {_FILES['train'][0]} under\n  {where}\n"
                                f"Unpack the authors' data.tar (https://pub.ist.ac.at/~akolesnikov/HDSeg/) into "
                                f"one of them, pass data_home=..., or set $GAPLAB_DATA.")
    out = []
    for part, n in (("train", n_train or HORSESEG_SIZES[size]), ("test", n_test or HORSESEG_N_TEST)):
        h5, spd = _FILES[part]
        out.append(read_horseseg_h5(root / h5, root / spd, range(n), name=f"horseseg-{size}/{part}",
                                    hist_sizes=hist_sizes, etas=etas, progress=progress))
    return out[0], out[1]
