"""The HorseSeg-style features of the Weizmann horses (Paper: App. I): reading a photo and its
mask, SLIC superpixels, the colour and texture vocabularies, per-superpixel word counts (the
cached part) and the unary and pairwise features built from them. Locating the files, the
split, the cache and the loader: :mod:`gaplab.core.datasets.horse`.

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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

__all__ = ["HorseFeatureParams", "read_photo", "read_mask", "extract_superpixel_counts",
           "features_from_counts", "progress_steps"]

_SCALE_TOL = 0.02  # the two axes' photo/mask scale factors may differ by 2% (rounding)


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


# --------------------------------------------------------------------------- images
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


# --------------------------------------------------------------------------- progress
def progress_steps(items, stage: str, progress):
    """Iterate over ``items`` (a sized sequence) reporting each item done.

    ``progress`` is a bool (True: a tqdm bar named ``"horse: " + stage``) or a callable
    ``progress(stage, done, total)``, called before the first item (``done = 0``) and after each
    one, from the iterating thread (a server shows it as "stage: done / total")."""
    total = len(items)
    if callable(progress):
        progress(stage, 0, total)
        for k, item in enumerate(items):
            yield item
            progress(stage, k + 1, total)
        return
    from tqdm.auto import tqdm
    yield from tqdm(items, desc=f"horse: {stage}", disable=not progress)


# --------------------------------------------------------------------------- superpixels and words
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
        From :func:`~gaplab.core.datasets.horse.find_image_pairs`.
    train_idx : array of int
        The training images: the vocabularies are fitted on samples of these images only.
    prm : HorseFeatureParams
    progress : bool or callable
        True: tqdm progress bars; a callable ``progress(stage, done, total)`` is told each image
        done instead (:func:`progress_steps`; stages "superpixels" and "word histograms", each
        over every image, and "vocabularies" (the k-means fits, told once as 0 of 1)).

    Returns
    -------
    dict of numpy arrays
        ``img_shape`` (n, 2), ``segments`` (P,) int32, ``mask`` (P,) bool, ``sp_off`` (n+1,),
        ``area``, ``fg_area`` (V,), ``edge_off`` (n+1,), ``edges`` (E, 2), for the location,
        colour and texture histograms ``{loc,col,tex}_row`` / ``_col`` (int32) / ``_cnt``
        (int32) sparse count triplets (superpixel, bin, pixels), ``colour_vocab`` (k, 3),
        ``texture_vocab`` (k, D) float32.
    """
    train_idx = np.asarray(train_idx, dtype=np.int64)
    is_train = np.zeros(len(pairs), dtype=bool)
    is_train[train_idx] = True
    photos, masks, segs, col_samples, tex_samples = _superpixels(pairs, is_train, prm, progress)
    if callable(progress):
        progress("vocabularies", 0, 1)
    km_col = _kmeans(np.concatenate(col_samples), prm.n_colour_words, prm.seed)
    km_tex = _kmeans(np.concatenate(tex_samples), prm.n_texture_words, prm.seed)
    out = {k: [] for k in ("area", "fg_area", "edges", "loc", "col", "tex")}
    nV, nE = [], []
    for i in progress_steps(range(len(pairs)), "word histograms", progress):
        V, n_edges = _count_words(photos[i], masks[i], segs[i], km_col, km_tex, prm, sum(nV), out)
        nV.append(V)
        nE.append(n_edges)
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


def _superpixels(pairs: list, is_train, prm: HorseFeatureParams, progress: bool):
    """Read every image pair, compute its SLIC superpixels and, for training images, draw the
    colour and texture samples of the vocabularies: (photos, masks, segments, colour samples,
    texture samples), lists."""
    from skimage.color import rgb2gray
    from skimage.segmentation import relabel_sequential, slic

    photos, masks, segs = [], [], []
    col_samples, tex_samples = [], []
    for i, (stem, ppath, mpath) in enumerate(progress_steps(pairs, "superpixels", progress)):
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
    return photos, masks, segs, col_samples, tex_samples


def _count_words(photo, mask, seg, km_col, km_tex, prm: HorseFeatureParams, v0: int, out: dict):
    """One image's location, colour and texture word counts per superpixel (sparse triplets,
    superpixels numbered from ``v0``), areas, foreground areas and edges, appended to ``out``;
    returns (superpixels, edges) of the image."""
    from skimage.color import rgb2gray

    G = prm.location_grid
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
        out[key].append((nz // k + v0, nz % k, cnt[nz]))
    out["area"].append(np.bincount(s, minlength=V))
    out["fg_area"].append(np.bincount(s, weights=mask.ravel(), minlength=V).astype(np.int64))
    e = _edges_of(seg)
    out["edges"].append(e)
    return V, len(e)


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
    with :func:`extract_superpixel_counts` (the compiled build is quick)."""
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
