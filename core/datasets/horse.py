"""The Weizmann Horse Database as a superpixel segmentation data set with HorseSeg-style features.

The paper's HorseSeg (Kolesnikov et al., ECCV 2014) cannot be downloaded here; the Weizmann
Horse Database (Borenstein and Ullman, ECCV 2002) is the classic horse figure/ground set closest
to it: 328 side views of horses, ``rgb/horseNNN.jpg`` (colour photos) and
``figure_ground/horseNNN.jpg`` (hand-made masks, grey-level JPEGs: thresholded at 128, white =
horse). Each mask is smaller than its photo by the same factor in both axes; every photo is
resized to its mask (scikit-image, anti-aliased).

The files are **not** shipped with gaplab; :func:`load_weizmann_horses` reads them from a
directory given by the user, ``$GAPLAB_DATA`` or the user cache directory.

Split ``horse-small``
---------------------
147 training images (the size of HorseSeg-small) and the other 181 for test, drawn once by
``numpy.random.default_rng(0).permutation(328)[:147]`` over the images sorted by name; the
training image numbers are kept in :data:`HORSE_SMALL_TRAIN` (so the split does not depend on
numpy's generator). Other image directories (tests, subsets) are split by the same seeded rule
with ``round(147 / 328 · n)`` training images unless ``n_train`` is given.

Superpixels and features (Paper: App. I)
----------------------------------------
SLIC superpixels; unary features of ``d_u = 1,969`` (location, colour and texture histograms
over three scopes) and pairwise features of ``d_p = 100`` (χ² similarities of the histograms),
so ``d = 2,069`` with the defaults: :mod:`gaplab.core.datasets.horse_features` says how.

Storage and cache
-----------------
Features are float32 (``SegmentationData.xu`` (V, d_u), ``xp`` (E, d_p)); all 328 images hold
about 49,000 superpixels, so xu takes 0.39 GB (horse-small training: 0.17 GB), half of float64.
The expensive part -- resizing, SLIC, DAISY, the vocabularies, word assignment -- runs once with
a tqdm progress bar; its result (superpixel maps, per-superpixel word counts as sparse
triplets, edges, areas, vocabularies) is cached as a compressed ``.npz`` (no pickle) in
``platformdirs.user_cache_dir("gaplab")/features`` (or ``cache_dir``), keyed by the sha256 of
the image files, the split and the feature parameters. The normalised histograms and the χ²
pairwise features are rebuilt from the counts at every load (seconds).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from .horse_features import (HorseFeatureParams, extract_superpixel_counts, features_from_counts,
                             read_mask, read_photo)
from .segmentation import SegmentationData

__all__ = [
    "load_weizmann_horses", "HorseFeatureParams", "HORSE_SHA256", "HORSE_SMALL_TRAIN",
    "SPLIT_SEED", "read_photo", "read_mask", "find_image_pairs", "extract_superpixel_counts",
    "features_from_counts", "official_file_sha256",
]

#: sha256 of the 656 files (``figure_ground/*`` then ``rgb/*``, sorted by path) concatenated
HORSE_SHA256 = "f1414bd423ec63fdf5f20bc187b229b3d5a48e67309faa2731aec2e505ab267b"

#: seed of the split rule (see the module docstring)
SPLIT_SEED = 0

#: the 147 training images of ``horse-small`` (numbers NNN of ``horseNNN.jpg``):
#: ``sorted(numpy.random.default_rng(0).permutation(328)[:147] + 1)``
HORSE_SMALL_TRAIN = (
    1, 6, 7, 9, 11, 14, 18, 19, 26, 27, 29, 32, 34, 37, 38, 40, 42, 43, 44, 45, 46, 48, 55, 62,
    64, 65, 66, 69, 71, 72, 73, 75, 76, 84, 85, 91, 93, 94, 95, 98, 99, 104, 107, 108, 110, 112,
    117, 118, 119, 120, 122, 124, 125, 127, 129, 131, 133, 134, 141, 142, 145, 146, 148, 149,
    150, 151, 154, 156, 159, 160, 161, 162, 163, 165, 167, 168, 169, 174, 175, 180, 182, 183,
    186, 187, 190, 191, 196, 198, 199, 201, 202, 204, 205, 206, 209, 210, 213, 216, 217, 219,
    220, 222, 227, 233, 236, 243, 244, 245, 248, 249, 252, 253, 255, 256, 257, 258, 260, 265,
    267, 270, 272, 273, 274, 276, 277, 280, 282, 286, 291, 292, 297, 298, 301, 302, 308, 309,
    310, 311, 313, 314, 315, 318, 319, 320, 322, 323, 324,
)

_N_WEIZMANN = 328
_PHOTO_DIR, _MASK_DIR = "rgb", "figure_ground"
_EXTS = (".jpg", ".jpeg", ".png")
_CACHE_VERSION = 1
_CACHE_KEYS = frozenset({"img_shape", "segments", "mask", "sp_off", "edge_off", "area", "fg_area",
                         "edges", "colour_vocab", "texture_vocab"} |
                        {f"{k}_{f}" for k in ("loc", "col", "tex") for f in ("row", "col", "cnt")})


# --------------------------------------------------------------------------- files
def _candidates(data_home: Any) -> list:
    if data_home is not None:
        base = Path(data_home).expanduser()
        return [base, base / "weizmann_horse"]
    out = []
    env = os.environ.get("GAPLAB_DATA")
    if env:
        out += [Path(env).expanduser(), Path(env).expanduser() / "weizmann_horse"]
    out.append(Path(platformdirs.user_cache_dir("gaplab")) / "weizmann_horse")
    return out


def _locate(data_home: Any) -> Path:
    tried = _candidates(data_home)
    for d in tried:
        if (d / _PHOTO_DIR).is_dir() and (d / _MASK_DIR).is_dir():
            return d
    where = "\n  ".join(str(d) for d in tried)
    raise FileNotFoundError(
        f"Weizmann Horse Database not found: no directory with '{_PHOTO_DIR}/' and '{_MASK_DIR}/' "
        f"subfolders among\n  {where}\nPass data_home=..., set $GAPLAB_DATA, or copy the database "
        f"(horseNNN.jpg photos in rgb/, masks in figure_ground/) to the last directory.")


def find_image_pairs(root: Any) -> list:
    """(stem, photo path, mask path) of every image under ``root/rgb`` and
    ``root/figure_ground``, sorted by stem.

    Raises
    ------
    FileNotFoundError
        If a subfolder is missing.
    ValueError
        If a photo has no mask or a mask no photo (the message names them), or there is no image.
    """
    root = Path(root)
    found = {}
    for sub in (_PHOTO_DIR, _MASK_DIR):
        d = root / sub
        if not d.is_dir():
            raise FileNotFoundError(f"{d} is not a directory (expected photos in {root / _PHOTO_DIR} "
                                    f"and masks in {root / _MASK_DIR})")
        found[sub] = {p.stem: p for p in sorted(d.iterdir()) if p.suffix.lower() in _EXTS}
    photos, masks = found[_PHOTO_DIR], found[_MASK_DIR]
    no_mask = sorted(set(photos) - set(masks))
    no_photo = sorted(set(masks) - set(photos))
    if no_mask:
        raise ValueError(f"{len(no_mask)} photo(s) in {root / _PHOTO_DIR} have no mask in "
                         f"{root / _MASK_DIR}: {', '.join(no_mask[:5])}{' ...' if len(no_mask) > 5 else ''}")
    if no_photo:
        raise ValueError(f"{len(no_photo)} mask(s) in {root / _MASK_DIR} have no photo in "
                         f"{root / _PHOTO_DIR}: {', '.join(no_photo[:5])}{' ...' if len(no_photo) > 5 else ''}")
    if not photos:
        raise ValueError(f"no image ({'/'.join(_EXTS)}) in {root / _PHOTO_DIR}")
    return [(s, photos[s], masks[s]) for s in sorted(photos)]


def _files_sha256(pairs, root: Any = None, verify: bool = False) -> str:
    """sha256 of the mask files then the photo files, each group sorted by path, concatenated
    (for the Weizmann directory: the order of ``find . -type f | sort``).

    With ``verify``, every file must also be a file of the Weizmann Horse Database
    (``rgb/horseNNN.jpg`` or ``figure_ground/horseNNN.jpg`` relative to ``root``) whose own
    sha256 is the official one (:func:`official_file_sha256`); otherwise ValueError naming the
    file. A subset of the database passes; a cut, edited or foreign file does not."""
    known = official_file_sha256() if verify else None
    h = hashlib.sha256()
    bad = []
    for k in (2, 1):  # figure_ground/ sorts before rgb/
        for p in sorted(str(t[k]) for t in pairs):
            with open(p, "rb") as f:
                data = f.read()
            h.update(data)
            if known is not None:
                rel = Path(p).relative_to(root).as_posix()
                want = known.get(rel)
                got = hashlib.sha256(data).hexdigest()
                if want != got:
                    bad.append((p, rel, want, got))
    if bad:
        p, rel, want, got = bad[0]
        more = f" ({len(bad)} files differ: {', '.join(b[1] for b in bad[:5])}{' ...' if len(bad) > 5 else ''})" \
            if len(bad) > 1 else ""
        if want is None:
            raise ValueError(
                f"{p} is not a file of the Weizmann Horse Database (no official sha256 for {rel!r}){more}. "
                "Pass verify=False (gaplab: --no-verify) to load other images on purpose")
        raise ValueError(
            f"sha256 mismatch for {p}: expected {want} (the official Weizmann {rel}), got {got}{more}. "
            "The file is damaged (cut or edited): copy it again, or pass verify=False (gaplab: --no-verify) "
            "to load a modified copy on purpose")
    return h.hexdigest()


_OFFICIAL = None


def official_file_sha256() -> dict:
    """{relative path: sha256} of the 656 files of the Weizmann Horse Database
    (``rgb/horseNNN.jpg``, ``figure_ground/horseNNN.jpg``), from the bundled
    ``assets/weizmann_horse_sha256.json`` (written by ``scripts/horse_checksums.py``)."""
    global _OFFICIAL
    if _OFFICIAL is None:
        from importlib import resources
        doc = json.loads(resources.files("gaplab.assets").joinpath("weizmann_horse_sha256.json").read_text())
        _OFFICIAL = dict(doc["files"])
    return _OFFICIAL


def _split(stems: list, n_train: int | None) -> np.ndarray:
    n = len(stems)
    full = stems == [f"horse{k:03d}" for k in range(1, _N_WEIZMANN + 1)]
    if n_train is None and full:
        return np.array(HORSE_SMALL_TRAIN, dtype=np.int64) - 1
    if n_train is None:
        n_train = int(round(len(HORSE_SMALL_TRAIN) / _N_WEIZMANN * n))
    if not 1 <= n_train < n:
        raise ValueError(f"n_train must lie in [1, {n}) for {n} images, got {n_train}")
    return np.sort(np.random.default_rng(SPLIT_SEED).permutation(n)[:n_train])


# --------------------------------------------------------------------------- cache + loader
def _cache_key(sha: str, stems: list, train_idx, prm: HorseFeatureParams) -> str:
    blob = json.dumps({"v": _CACHE_VERSION, "sha256": sha, "stems": stems,
                       "train": [int(t) for t in train_idx], "params": dataclasses.asdict(prm)},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def load_weizmann_horses(data_home: Any = None, *, params: HorseFeatureParams | None = None,
                         n_train: int | None = None, cache_dir: Any = None, use_cache: bool = True,
                         verify: bool = True, progress: bool = True):
    """Load the Weizmann Horse Database as superpixel segmentation data (split ``horse-small``).

    The directory holding ``rgb/`` and ``figure_ground/`` is looked for

    1. if ``data_home`` is given: in ``data_home`` or ``data_home/weizmann_horse`` (nowhere else);
    2. otherwise in ``$GAPLAB_DATA`` or ``$GAPLAB_DATA/weizmann_horse``, then in
       ``platformdirs.user_cache_dir("gaplab")/weizmann_horse``.

    Nothing is downloaded. The first call computes superpixels, vocabularies and word counts
    (minutes for the 328 images, with a progress bar) and caches them; later calls read the
    cache and rebuild the features (seconds).

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        Directory with ``rgb/`` and ``figure_ground/`` (or a ``weizmann_horse/`` subfolder).
    params : HorseFeatureParams, optional
        Superpixel and feature parameters (default: the paper's sizes, d = 2,069).
    n_train : int, optional
        Training images for a directory other than the full database (see the module
        docstring); the full database uses the fixed horse-small split unless given.
    cache_dir : str or os.PathLike, optional
        Where the cache file lives (default ``platformdirs.user_cache_dir("gaplab")/features``).
    use_cache : bool, default True
        Read and write the cache.
    verify : bool, default True
        Check every photo and mask against the sha256 of its file in the Weizmann Horse Database
        (:func:`official_file_sha256`; a subset of the database passes). A cut, edited or foreign
        file is refused with a message naming it, instead of being turned into features.
        ``verify=False`` (``--no-verify`` on the command line) loads other or modified images.
    progress : bool or callable, default True
        True: tqdm progress bars; False: none; a callable ``progress(stage, done, total)`` is
        told instead, from the loading thread: "checking the image files" (0 of the images),
        "reading the cached superpixels" (0 of 1) or, on a first load, each image done in
        "superpixels" and "word histograms" (see
        :func:`~gaplab.core.datasets.horse_features.extract_superpixel_counts`), then
        "features" (0 of 1).

    Returns
    -------
    train, test : SegmentationData
        Named ``horse-small/train`` (147 images) and ``horse-small/test`` (181); ``extras``
        holds ``sha256``, ``params``, ``layout`` (feature groups), the vocabularies and the
        split.

    Raises
    ------
    FileNotFoundError
        If no directory holds the database (the message lists where it looked).
    ValueError
        On a photo without mask (or the reverse), a mask not scaled like its photo, a file that
        is not the official one with ``verify=True`` (the message names it), an image file that
        cannot be decoded (cut), or a bad ``n_train``.
    """
    prm = HorseFeatureParams() if params is None else params
    if not isinstance(prm, HorseFeatureParams):
        raise TypeError(f"params must be a HorseFeatureParams, got {type(prm).__name__}")
    root = _locate(data_home)
    pairs = find_image_pairs(root)
    stems = [p[0] for p in pairs]
    tell = progress if callable(progress) else (lambda stage, done, total: None)
    tell("checking the image files", 0, len(pairs))
    sha = _files_sha256(pairs, root, verify=verify)
    train_idx = _split(stems, n_train)
    key = _cache_key(sha, stems, train_idx, prm)
    cdir = Path(cache_dir) if cache_dir is not None else Path(platformdirs.user_cache_dir("gaplab")) / "features"
    cpath = cdir / f"weizmann_horse-{key}.npz"
    counts = _cached_counts(cpath, use_cache, pairs, train_idx, prm, progress)
    tell("features", 0, 1)
    test_idx = np.setdiff1d(np.arange(len(pairs)), train_idx)
    extras = {"sha256": sha, "verified": sha == HORSE_SHA256, "params": prm,
              "layout": prm.layout(), "colour_vocab": counts["colour_vocab"],
              "texture_vocab": counts["texture_vocab"],
              "cache_file": str(cpath) if use_cache else None, "root": str(root)}
    return tuple(_segmentation_data(counts, idx, f"horse-small/{part}", prm, pairs, extras, progress)
                 for part, idx in (("train", train_idx), ("test", test_idx)))


def _segmentation_data(counts: dict, idx, name: str, prm: HorseFeatureParams, pairs: list, extras: dict,
                       progress: bool) -> SegmentationData:
    """The images ``idx`` of the cached counts as :class:`SegmentationData` with their features."""
    sub = _subset_counts(counts, idx)
    xu, xp = features_from_counts(sub, prm, progress=progress)
    return SegmentationData(
        sp_off=sub["sp_off"], edge_off=sub["edge_off"], edges=sub["edges"], xu=xu, xp=xp,
        gt=(2 * sub["fg_area"] > sub["area"]).astype(np.int64), area=sub["area"],
        fg_area=sub["fg_area"], img_shape=sub["img_shape"], segments=sub["segments"],
        mask=sub["mask"], name=name,
        image_names=tuple(pairs[i][0] for i in idx),
        photo_paths=tuple(str(pairs[i][1]) for i in idx),
        extras=dict(extras, image_index=idx))


def _cached_counts(cpath: Path, use_cache: bool, pairs: list, train_idx, prm: HorseFeatureParams,
                   progress: bool) -> dict:
    """The superpixel word counts from the cache file ``cpath`` when it is complete and readable,
    else extracted (:func:`extract_superpixel_counts`) and, with ``use_cache``, written to it."""
    counts = None
    if use_cache and cpath.is_file():
        if callable(progress):
            progress("reading the cached superpixels", 0, 1)
        try:
            with np.load(cpath, allow_pickle=False) as z:
                counts = {k: z[k] for k in z.files}
            if not _CACHE_KEYS <= set(counts):
                counts = None  # incomplete cache file: recompute and overwrite
        except (OSError, ValueError, zipfile.BadZipFile):
            counts = None  # unreadable cache file: recompute and overwrite
    if counts is None:
        counts = extract_superpixel_counts(pairs, train_idx, prm, progress=progress)
        if use_cache:
            from ..atomic import atomic_write
            cpath.parent.mkdir(parents=True, exist_ok=True)
            # atomic: a failed or interrupted write (disk full, Ctrl-C) leaves no partial cache file
            # and no temporary file behind
            with atomic_write(cpath, "wb") as fh:
                np.savez_compressed(fh, **counts)
    return counts


def _subset_counts(counts: dict, idx) -> dict:
    """The cached counts of the images ``idx`` (in that order), renumbered."""
    idx = np.asarray(idx, dtype=np.int64)
    sp_off, edge_off = counts["sp_off"], counts["edge_off"]
    shp = counts["img_shape"]
    pix_off = np.concatenate([[0], np.cumsum(shp[:, 0] * shp[:, 1])])
    cat = lambda off: np.concatenate([np.arange(off[i], off[i + 1]) for i in idx])  # noqa: E731
    cum = lambda a: np.concatenate([[0], np.cumsum(a)]).astype(np.int64)  # noqa: E731
    sp, ed, px = cat(sp_off), cat(edge_off), cat(pix_off)
    out = {"img_shape": shp[idx], "segments": counts["segments"][px], "mask": counts["mask"][px],
           "sp_off": cum(np.diff(sp_off)[idx]), "edge_off": cum(np.diff(edge_off)[idx]),
           "area": counts["area"][sp], "fg_area": counts["fg_area"][sp], "edges": counts["edges"][ed]}
    new_row = np.full(int(sp_off[-1]), -1, dtype=np.int64)
    new_row[sp] = np.arange(sp.size)
    for key in ("loc", "col", "tex"):
        r = new_row[counts[f"{key}_row"]]
        keep = r >= 0
        out[f"{key}_row"] = r[keep]
        out[f"{key}_col"] = counts[f"{key}_col"][keep]
        out[f"{key}_cnt"] = counts[f"{key}_cnt"][keep]
    return out
