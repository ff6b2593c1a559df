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

Superpixels and features (Paper: App. I; parameters in :class:`HorseFeatureParams`)
-----------------------------------------------------------------------------------
* SLIC superpixels (scikit-image, ``n_segments=180`` gives about 150 per image); the ground truth of a superpixel is the
  majority label of its pixels (foreground when more than half of them are); areas in pixels;
  edges join superpixels that share a boundary (4-connected pixel neighbours).
* Per pixel: a location cell of a 4 x 4 grid over the image, a colour word (k-means over RGB
  values, 128 words) and a texture word (dense DAISY descriptors of the grey image, a SIFT-like
  descriptor from scikit-image, every ``daisy_step`` pixels, 512 words; a pixel takes the word of
  its nearest descriptor). Both vocabularies are fitted (scikit-learn's MiniBatchKMeans) on
  samples drawn from the **training images only**.
* Unary features of superpixel p, ``d_u = 1 + 3 · (16 + 128 + 512) = 1,969`` (the paper's size),
  in this order: a constant 1, then for the scope S = {p}, S = p with its first-order neighbours,
  S = p with its neighbours up to order two: the L1-normalised location histogram (16), colour
  histogram (128) and texture histogram (512) of the pixels of S.
* Pairwise features of an edge pq, ``d_p = 1 + 9 · 11 = 100`` (the paper's size): a constant 1,
  then for each of the 9 histograms above (same order) and η = 2^-5, ..., 2^5:
  exp(−η χ²(h_p, h_q)), χ²(a, b) = ½ Σ_k (a_k − b_k)² / (a_k + b_k) ∈ [0, 1]. All >= 0.
* So ``d = d_u + d_p = 2,069`` with the defaults.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs
from numba import njit

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
_SCALE_TOL = 0.02  # the two axes' photo/mask scale factors may differ by 2% (rounding)
_CACHE_VERSION = 1
_CACHE_KEYS = frozenset({"img_shape", "segments", "mask", "sp_off", "edge_off", "area", "fg_area",
                         "edges", "colour_vocab", "texture_vocab"} |
                        {f"{k}_{f}" for k in ("loc", "col", "tex") for f in ("row", "col", "cnt")})


@dataclass(frozen=True)
class HorseFeatureParams:
    """Parameters of the superpixels and features (they key the cache).

    Attributes
    ----------
    n_segments, compactness, slic_sigma
        SLIC (``skimage.segmentation.slic``): target number of superpixels, colour/space
        trade-off, Gaussian pre-smoothing (pixels).
    n_colour_words, n_texture_words : int
        Sizes of the two k-means vocabularies.
    location_grid : int
        The location histogram has location_grid² cells.
    daisy_step, daisy_radius, daisy_rings, daisy_histograms, daisy_orientations : int
        Dense DAISY descriptors (``skimage.feature.daisy``), one every daisy_step pixels.
    samples_per_image : int
        Pixels and descriptors sampled from each training image to fit the vocabularies.
    etas : tuple of float
        The η of the pairwise features exp(−η χ²).
    seed : int
        Seed of the samples and of k-means.
    """

    n_segments: int = 180
    compactness: float = 10.0
    slic_sigma: float = 1.0
    n_colour_words: int = 128
    n_texture_words: int = 512
    location_grid: int = 4
    daisy_step: int = 4
    daisy_radius: int = 8
    daisy_rings: int = 2
    daisy_histograms: int = 6
    daisy_orientations: int = 8
    samples_per_image: int = 1000
    etas: tuple = tuple(2.0 ** k for k in range(-5, 6))
    seed: int = 0

    def __post_init__(self):
        for f in ("n_segments", "n_colour_words", "n_texture_words", "location_grid", "daisy_step",
                  "daisy_radius", "daisy_rings", "daisy_histograms", "daisy_orientations",
                  "samples_per_image"):
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"HorseFeatureParams.{f} must be a positive int, got {v!r}")
        if not self.etas or any(not np.isfinite(e) or e <= 0 for e in self.etas):
            raise ValueError(f"HorseFeatureParams.etas must be positive numbers, got {self.etas!r}")
        object.__setattr__(self, "etas", tuple(float(e) for e in self.etas))

    @property
    def hist_sizes(self) -> tuple:
        """Bins of the location, colour and texture histograms."""
        return (self.location_grid ** 2, self.n_colour_words, self.n_texture_words)

    @property
    def d_u(self) -> int:
        """1 + 3 · (location + colour + texture bins)."""
        return 1 + 3 * sum(self.hist_sizes)

    @property
    def d_p(self) -> int:
        """1 + 9 · len(etas)."""
        return 1 + 9 * len(self.etas)

    def layout(self) -> dict:
        """Names and [start, stop) ranges of the feature groups in w = (w_U, w_P)."""
        out, j = {"unary/constant": (0, 1)}, 1
        names = ("location", "colour", "texture")
        for scope in ("superpixel", "neighbours1", "neighbours2"):
            for nm, k in zip(names, self.hist_sizes):
                out[f"unary/{scope}/{nm}"] = (j, j + k)
                j += k
        out["pairwise/constant"] = (j, j + 1)
        j += 1
        for scope in ("superpixel", "neighbours1", "neighbours2"):
            for nm in names:
                out[f"pairwise/{scope}/{nm}"] = (j, j + len(self.etas))
                j += len(self.etas)
        return out


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


def _imread(path: Any, what: str) -> np.ndarray:
    """scikit-image's imread; a file that cannot be decoded (cut, not an image) raises ValueError
    naming it (PIL's "image file is truncated" does not)."""
    from skimage import io

    try:
        return io.imread(str(path))
    except (OSError, ValueError, SyntaxError) as exc:
        raise ValueError(f"{what} {path} cannot be read as an image ({exc}): the file is damaged "
                         "(cut?) or not an image") from exc


def read_mask(path: Any) -> np.ndarray:
    """A figure/ground mask as bool (H, W): grey level >= 128 is foreground. ValueError naming
    the file if it cannot be decoded."""
    m = _imread(path, "mask")
    if m.ndim == 3:
        m = m[..., :3].mean(axis=2) if m.shape[2] >= 3 else m[..., 0]
    if m.ndim != 2:
        raise ValueError(f"mask {path} must be a 2-D grey image, got shape {m.shape}")
    if m.dtype != np.uint8:
        m = np.asarray(m, dtype=np.float64)
        m = m * (255.0 / max(float(m.max()), 1.0)) if m.max() <= 1.0 else m
    return np.asarray(m) >= 128


def read_photo(path: Any, shape: tuple) -> np.ndarray:
    """A photo resized to ``shape`` = (H, W) (scikit-image, anti-aliased), uint8 (H, W, 3).

    Raises
    ------
    ValueError
        If the photo's two axes are not scaled by the same factor (within 2%) to reach ``shape``
        -- a mask of a different size than its photo, or the file cannot be decoded (cut).
    """
    from skimage import transform

    im = _imread(path, "photo")
    if im.ndim == 2:
        im = np.stack([im] * 3, axis=2)
    im = im[..., :3]
    H, W = int(shape[0]), int(shape[1])
    fy, fx = im.shape[0] / H, im.shape[1] / W
    if abs(fx / fy - 1.0) > _SCALE_TOL:
        raise ValueError(
            f"photo {path} is {im.shape[0]}x{im.shape[1]} but its mask is {H}x{W}: the mask must be "
            f"the photo scaled by one factor in both axes (got {fy:.3f} vertically, {fx:.3f} "
            f"horizontally)")
    if im.shape[:2] != (H, W):
        im = transform.resize(im, (H, W), order=1, anti_aliasing=True, preserve_range=True)
    return np.clip(np.rint(im), 0, 255).astype(np.uint8)


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


# --------------------------------------------------------------------------- extraction
def _daisy(grey: np.ndarray, prm: HorseFeatureParams):
    """Dense DAISY descriptors, float32 (P, Q, D), and whether the image was padded."""
    from skimage.feature import daisy

    r = prm.daisy_radius
    H, W = grey.shape
    padded = H <= 2 * r + 1 or W <= 2 * r + 1
    if padded:  # too small for one descriptor: pad by reflection
        grey = np.pad(grey, ((r + 1, r + 1), (r + 1, r + 1)), mode="reflect")
    desc = daisy(grey, step=prm.daisy_step, radius=r, rings=prm.daisy_rings,
                 histograms=prm.daisy_histograms, orientations=prm.daisy_orientations)
    return desc.astype(np.float32), padded


def _pixel_texture_index(H: int, W: int, P: int, Q: int, prm: HorseFeatureParams, padded: bool):
    """Index (into the P x Q descriptor grid) of the descriptor nearest to every pixel."""
    r, s = prm.daisy_radius, prm.daisy_step
    off = r + 1 if padded else 0
    rows = np.clip(np.rint((np.arange(H) + off - r) / s), 0, P - 1).astype(np.int64)
    cols = np.clip(np.rint((np.arange(W) + off - r) / s), 0, Q - 1).astype(np.int64)
    return rows[:, None] * Q + cols[None, :]


def _edges_of(seg: np.ndarray) -> np.ndarray:
    """Sorted unique (p, q), p < q, of superpixels with 4-adjacent pixels."""
    V = int(seg.max()) + 1
    a = np.concatenate([seg[:, :-1].ravel(), seg[:-1, :].ravel()]).astype(np.int64)
    b = np.concatenate([seg[:, 1:].ravel(), seg[1:, :].ravel()]).astype(np.int64)
    k = a != b
    lo, hi = np.minimum(a[k], b[k]), np.maximum(a[k], b[k])
    key = np.unique(lo * V + hi)
    return np.stack([key // V, key % V], axis=1)


def _kmeans(X: np.ndarray, k: int, seed: int):
    from sklearn.cluster import MiniBatchKMeans

    if X.shape[0] < k:
        raise ValueError(f"cannot fit a {k}-word vocabulary on {X.shape[0]} training samples; lower "
                         f"the vocabulary size or raise samples_per_image")
    return MiniBatchKMeans(n_clusters=k, batch_size=2048, n_init=1, max_iter=50,
                           random_state=seed).fit(X)


def extract_superpixel_counts(pairs: list, train_idx, prm: HorseFeatureParams,
                              progress: bool = True) -> dict:
    """Superpixels, graph and per-superpixel word counts of every image (the cached part).

    Parameters
    ----------
    pairs : list of (stem, photo path, mask path)
        From :func:`find_image_pairs`.
    train_idx : array of int
        The training images: the vocabularies are fitted on samples of these images only.
    prm : HorseFeatureParams
    progress : bool
        Show tqdm progress bars.

    Returns
    -------
    dict of numpy arrays
        ``img_shape`` (n, 2), ``segments`` (P,) int32, ``mask`` (P,) bool, ``sp_off`` (n+1,),
        ``area``, ``fg_area`` (V,), ``edge_off`` (n+1,), ``edges`` (E, 2), for the location,
        colour and texture histograms ``{loc,col,tex}_row`` / ``_col`` (int32) / ``_cnt``
        (int32) sparse count triplets (superpixel, bin, pixels), ``colour_vocab`` (k, 3),
        ``texture_vocab`` (k, D) float32.
    """
    from skimage.color import rgb2gray
    from skimage.segmentation import relabel_sequential, slic
    from tqdm.auto import tqdm

    train_idx = np.asarray(train_idx, dtype=np.int64)
    is_train = np.zeros(len(pairs), dtype=bool)
    is_train[train_idx] = True
    photos, masks, segs = [], [], []
    col_samples, tex_samples = [], []
    for i, (stem, ppath, mpath) in enumerate(tqdm(pairs, desc="horse: superpixels", disable=not progress)):
        mask = read_mask(mpath)
        photo = read_photo(ppath, mask.shape)
        seg = slic(photo, n_segments=prm.n_segments, compactness=prm.compactness,
                   sigma=prm.slic_sigma, start_label=0, channel_axis=-1)
        seg = relabel_sequential(seg)[0].astype(np.int32)
        photos.append(photo)
        masks.append(mask)
        segs.append(seg)
        if is_train[i]:  # vocabulary samples from training images only
            rng = np.random.default_rng([prm.seed, i])
            pix = photo.reshape(-1, 3)
            col_samples.append(pix[rng.choice(len(pix), min(prm.samples_per_image, len(pix)),
                                              replace=False)].astype(np.float32) / 255.0)
            desc = _daisy(rgb2gray(photo), prm)[0]
            desc = desc.reshape(-1, desc.shape[2])
            tex_samples.append(desc[rng.choice(len(desc), min(prm.samples_per_image, len(desc)),
                                               replace=False)])
    km_col = _kmeans(np.concatenate(col_samples), prm.n_colour_words, prm.seed)
    km_tex = _kmeans(np.concatenate(tex_samples), prm.n_texture_words, prm.seed)
    G = prm.location_grid
    out = {k: [] for k in ("area", "fg_area", "edges", "loc", "col", "tex")}
    nV, nE = [], []
    for i in tqdm(range(len(pairs)), desc="horse: words and histograms", disable=not progress):
        photo, mask, seg = photos[i], masks[i], segs[i]
        H, W = seg.shape
        V = int(seg.max()) + 1
        cw = km_col.predict(photo.reshape(-1, 3).astype(np.float32) / 255.0)
        grey = rgb2gray(photo)
        desc, padded = _daisy(grey, prm)
        P, Q, D = desc.shape
        tw_grid = km_tex.predict(desc.reshape(-1, D))
        tw = tw_grid[_pixel_texture_index(H, W, P, Q, prm, padded)].ravel()
        cell = ((np.arange(H) * G // H)[:, None] * G + (np.arange(W) * G // W)[None, :]).ravel()
        s = seg.ravel().astype(np.int64)
        for key, word, k in (("loc", cell, G * G), ("col", cw, prm.n_colour_words),
                             ("tex", tw, prm.n_texture_words)):
            cnt = np.bincount(s * k + word, minlength=V * k)
            nz = np.flatnonzero(cnt)
            out[key].append((nz // k + sum(nV), nz % k, cnt[nz]))
        out["area"].append(np.bincount(s, minlength=V))
        out["fg_area"].append(np.bincount(s, weights=mask.ravel(), minlength=V).astype(np.int64))
        e = _edges_of(seg)
        out["edges"].append(e)
        nV.append(V)
        nE.append(len(e))
    cum = lambda a: np.concatenate([[0], np.cumsum(a)]).astype(np.int64)  # noqa: E731
    res = {
        "img_shape": np.array([s.shape for s in segs], dtype=np.int64),
        "segments": np.concatenate([s.ravel() for s in segs]).astype(np.int32),
        "mask": np.concatenate([m.ravel() for m in masks]),
        "sp_off": cum(nV), "edge_off": cum(nE),
        "area": np.concatenate(out["area"]).astype(np.int64),
        "fg_area": np.concatenate(out["fg_area"]),
        "edges": np.concatenate(out["edges"]).astype(np.int64).reshape(-1, 2),
        "colour_vocab": km_col.cluster_centers_.astype(np.float32),
        "texture_vocab": km_tex.cluster_centers_.astype(np.float32),
    }
    for key in ("loc", "col", "tex"):
        res[f"{key}_row"] = np.concatenate([t[0] for t in out[key]]).astype(np.int32)
        res[f"{key}_col"] = np.concatenate([t[1] for t in out[key]]).astype(np.int32)
        res[f"{key}_cnt"] = np.concatenate([t[2] for t in out[key]]).astype(np.int32)
    return res


@njit(cache=True, nogil=True)
def _features_kernel(sp_off, edge_off, eu, ev, row_ptr, cols, cnts, type_off, etas, xu, xp):
    """Per image: dense counts C (V_i x B, the three histogram types side by side at
    type_off), the scopes {p}, p + neighbours, p + neighbours up to order 2 (sums of counts),
    L1-normalised per type into xu[:, 1:]; χ² per edge, type and scope into xp[:, 1:]."""
    n = sp_off.size - 1
    B = type_off[-1]
    nt = type_off.size - 1
    ne = etas.size
    for i in range(n):
        a = sp_off[i]
        nv = sp_off[i + 1] - a
        e0 = edge_off[i]
        E = edge_off[i + 1] - e0
        C = np.zeros((nv, B))
        for p in range(nv):
            for t in range(row_ptr[a + p], row_ptr[a + p + 1]):
                C[p, cols[t]] += cnts[t]
        deg = np.zeros(nv + 1, dtype=np.int64)
        for e in range(E):
            deg[eu[e0 + e] + 1] += 1
            deg[ev[e0 + e] + 1] += 1
        for p in range(nv):
            deg[p + 1] += deg[p]
        nbr = np.empty(2 * E, dtype=np.int64)
        fill = deg[:nv].copy()
        for e in range(E):
            u, v = eu[e0 + e], ev[e0 + e]
            nbr[fill[u]] = v
            fill[u] += 1
            nbr[fill[v]] = u
            fill[v] += 1
        S = np.empty((nv, B))
        mark = np.full(nv, -1, dtype=np.int64)
        for scope in range(3):
            for p in range(nv):
                for c in range(B):
                    S[p, c] = C[p, c]
                if scope >= 1:
                    mark[p] = p
                    for t in range(deg[p], deg[p + 1]):
                        mark[nbr[t]] = p
                        for c in range(B):
                            S[p, c] += C[nbr[t], c]
                if scope == 2:
                    for t in range(deg[p], deg[p + 1]):
                        q = nbr[t]
                        for t2 in range(deg[q], deg[q + 1]):
                            r = nbr[t2]
                            if mark[r] != p:
                                mark[r] = p
                                for c in range(B):
                                    S[p, c] += C[r, c]
            for p in range(nv):
                for ty in range(nt):
                    tot = 0.0
                    for c in range(type_off[ty], type_off[ty + 1]):
                        tot += S[p, c]
                    inv = 1.0 / tot if tot > 0 else 0.0
                    for c in range(type_off[ty], type_off[ty + 1]):
                        S[p, c] *= inv
                        xu[a + p, 1 + scope * B + c] = S[p, c]
            for e in range(E):
                u, v = eu[e0 + e], ev[e0 + e]
                for ty in range(nt):
                    chi = 0.0
                    for c in range(type_off[ty], type_off[ty + 1]):
                        sm = S[u, c] + S[v, c]
                        if sm > 0:
                            df = S[u, c] - S[v, c]
                            chi += df * df / sm
                    chi *= 0.5
                    base = 1 + (scope * nt + ty) * ne
                    for k in range(ne):
                        xp[e0 + e, base + k] = np.exp(-etas[k] * chi)


def features_from_counts(counts: dict, prm: HorseFeatureParams, progress: bool = False):
    """Unary and pairwise features (float32) from the cached counts; see the module docstring
    for their order. Returns (xu (V, d_u), xp (E, d_p)). ``progress`` is accepted for symmetry
    (the compiled build takes about a second for horse-small)."""
    sp_off, edge_off, edges = counts["sp_off"], counts["edge_off"], counts["edges"]
    V, E = int(sp_off[-1]), int(edge_off[-1])
    sizes = prm.hist_sizes
    type_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = np.concatenate([counts[f"{k}_row"] for k in ("loc", "col", "tex")]).astype(np.int64)
    cols = np.concatenate([counts[f"{k}_col"].astype(np.int64) + type_off[t]
                           for t, k in enumerate(("loc", "col", "tex"))])
    cnts = np.concatenate([counts[f"{k}_cnt"] for k in ("loc", "col", "tex")]).astype(np.float64)
    order = np.argsort(rows, kind="stable")
    row_ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=V))]).astype(np.int64)
    xu = np.empty((V, prm.d_u), dtype=np.float32)
    xp = np.empty((E, prm.d_p), dtype=np.float32)
    xu[:, 0] = 1.0
    xp[:, 0] = 1.0
    _features_kernel(sp_off.astype(np.int64), edge_off.astype(np.int64),
                     np.ascontiguousarray(edges[:, 0], dtype=np.int64),
                     np.ascontiguousarray(edges[:, 1], dtype=np.int64), row_ptr, cols[order],
                     cnts[order], type_off, np.asarray(prm.etas, dtype=np.float64), xu, xp)
    return xu, xp


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
    progress : bool, default True
        tqdm progress bars.

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
    sha = _files_sha256(pairs, root, verify=verify)
    train_idx = _split(stems, n_train)
    key = _cache_key(sha, stems, train_idx, prm)
    cdir = Path(cache_dir) if cache_dir is not None else Path(platformdirs.user_cache_dir("gaplab")) / "features"
    cpath = cdir / f"weizmann_horse-{key}.npz"
    counts = None
    if use_cache and cpath.is_file():
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
            cdir.mkdir(parents=True, exist_ok=True)
            # atomic: a failed or interrupted write (disk full, Ctrl-C) leaves no partial cache file
            # and no temporary file behind
            with atomic_write(cpath, "wb") as fh:
                np.savez_compressed(fh, **counts)
    test_idx = np.setdiff1d(np.arange(len(pairs)), train_idx)
    extras = {"sha256": sha, "verified": sha == HORSE_SHA256, "params": prm,
              "layout": prm.layout(), "colour_vocab": counts["colour_vocab"],
              "texture_vocab": counts["texture_vocab"],
              "cache_file": str(cpath) if use_cache else None, "root": str(root)}
    parts = []
    for part, idx in (("train", train_idx), ("test", test_idx)):
        sub = _subset_counts(counts, idx)
        xu, xp = features_from_counts(sub, prm, progress=progress)
        parts.append(SegmentationData(
            sp_off=sub["sp_off"], edge_off=sub["edge_off"], edges=sub["edges"], xu=xu, xp=xp,
            gt=(2 * sub["fg_area"] > sub["area"]).astype(np.int64), area=sub["area"],
            fg_area=sub["fg_area"], img_shape=sub["img_shape"], segments=sub["segments"],
            mask=sub["mask"], name=f"horse-small/{part}",
            image_names=tuple(stems[i] for i in idx),
            photo_paths=tuple(str(pairs[i][1]) for i in idx),
            extras=dict(extras, image_index=idx)))
    return parts[0], parts[1]


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
