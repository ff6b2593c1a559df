"""Container for superpixel segmentation data (one image = one block of the SSVM dual).

An image i is over-segmented into V_i superpixels (the nodes of a graph) joined by E_i edges
(pairs of superpixels sharing a boundary). Every superpixel p carries a unary feature vector
x_p ∈ R^{d_u}, every edge pq a non-negative pairwise feature vector x_pq ∈ R^{d_p}, a
ground-truth label (0 = background, 1 = foreground) and an area in pixels. The pixel maps
(superpixel index of every pixel, the ground-truth pixel mask) are kept for display and for
pixel-level evaluation.

Storage (all images concatenated, offsets per image):

* unary features ``xu``: float32 of shape (V, d_u), pairwise features ``xp``: float32 of shape
  (E, d_p) -- float32 halves the memory of float64 (horse-small: 147 images x ~150 superpixels
  x 1,969 unary features = 0.17 GB instead of 0.35 GB); every kernel reads them into float64
  accumulators, so ψ is computed exactly from the stored values;
* ``segments``: int32 superpixel index (local to its image) of every pixel, row-major;
* ``mask``: bool ground-truth mask of every pixel.

Paper: App. I (HorseSeg).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import frozen_copy

__all__ = ["SegmentationData", "make_synthetic_segmentation"]


def _as(arr, dtype, name, ndim):
    """A private, read-only, C-contiguous copy of ``arr`` as ``dtype``: the arrays validated
    here are the ones the model's kernels read, and nothing (the caller's array included) can
    change them afterwards."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(arr).__name__}")
    return frozen_copy(arr, dtype, name, ndim)


def _offsets(off, name, n=None):
    if off.size < 2 or off[0] != 0 or np.any(np.diff(off) < 0):
        raise ValueError(f"{name} must start at 0 and be non-decreasing with at least 2 entries, "
                         f"got {off[:5]}...")
    if n is not None and off.size != n + 1:
        raise ValueError(f"{name} must have shape ({n + 1},), got {off.shape}")


@dataclass(frozen=True, eq=False)
class SegmentationData:
    """Images over-segmented into superpixels, with features, ground truth and pixel maps.

    Parameters
    ----------
    sp_off : ndarray of int64, shape (n + 1,)
        Superpixel offsets: the superpixels of image ``i`` are ``sp_off[i]:sp_off[i+1]`` (at
        least one each).
    edge_off : ndarray of int64, shape (n + 1,)
        Edge offsets: the edges of image ``i`` are ``edge_off[i]:edge_off[i+1]``.
    edges : ndarray of int64, shape (E, 2)
        The two superpixels of each edge, local to its image (``0 <= p < q < V_i``), no
        duplicates within an image.
    xu : ndarray of float32, shape (V, d_u)
        Unary features of every superpixel (finite).
    xp : ndarray of float32, shape (E, d_p)
        Pairwise features of every edge (finite and >= 0, so that w_P >= 0 makes every energy
        submodular).
    gt : ndarray of int64, shape (V,)
        Ground-truth label of every superpixel, 0 (background) or 1 (foreground).
    area : ndarray of int64, shape (V,)
        Area of every superpixel in pixels (>= 1).
    fg_area : ndarray of int64, shape (V,)
        Ground-truth foreground pixels inside every superpixel (0 <= fg_area <= area).
    img_shape : ndarray of int64, shape (n, 2)
        (height, width) of every image in pixels.
    segments : ndarray of int32, shape (P,)
        Superpixel index (local) of every pixel, images concatenated, each row-major;
        ``P = sum(height * width)``.
    mask : ndarray of bool, shape (P,)
        Ground-truth foreground mask of every pixel.
    name : str
        Short name (``"horse-small/train"``).
    image_names : tuple of str
        One name per image (file stem).
    photo_paths : tuple of str
        Path of every photo (read and resized to the mask on demand by :meth:`photo`), or empty.
    extras : dict
        Anything else (feature layout, vocabularies, checksums).

    Raises
    ------
    ValueError
        If shapes are inconsistent, a superpixel is empty, a feature is not finite, a pairwise
        feature is negative, an edge is out of range or duplicated, or a label is not 0/1.
    """

    sp_off: np.ndarray
    edge_off: np.ndarray
    edges: np.ndarray
    xu: np.ndarray
    xp: np.ndarray
    gt: np.ndarray
    area: np.ndarray
    fg_area: np.ndarray
    img_shape: np.ndarray
    segments: np.ndarray
    mask: np.ndarray
    name: str = "segmentation"
    image_names: tuple = ()
    photo_paths: tuple = ()
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        conv = {"sp_off": (np.int64, 1), "edge_off": (np.int64, 1), "edges": (np.int64, 2),
                "xu": (np.float32, 2), "xp": (np.float32, 2), "gt": (np.int64, 1),
                "area": (np.int64, 1), "fg_area": (np.int64, 1), "img_shape": (np.int64, 2),
                "segments": (np.int32, 1), "mask": (np.bool_, 1)}
        for attr, (dt, nd) in conv.items():
            object.__setattr__(self, attr, _as(getattr(self, attr), dt, attr, nd))
        object.__setattr__(self, "image_names", tuple(str(s) for s in self.image_names))
        object.__setattr__(self, "photo_paths", tuple(str(s) for s in self.photo_paths))
        self.validate()
        object.__setattr__(self, "_pix_off", np.concatenate(
            [[0], np.cumsum(self.img_shape[:, 0] * self.img_shape[:, 1])]).astype(np.int64))
        object.__setattr__(self, "_photos", {})

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Check every invariant; raise ValueError naming the field."""
        _offsets(self.sp_off, "sp_off")
        n = self.sp_off.size - 1
        _offsets(self.edge_off, "edge_off", n)
        if np.any(np.diff(self.sp_off) < 1):
            bad = int(np.flatnonzero(np.diff(self.sp_off) < 1)[0])
            raise ValueError(f"image {bad} has no superpixel (sp_off must be strictly increasing)")
        V, E = int(self.sp_off[-1]), int(self.edge_off[-1])
        if self.xu.shape[0] != V:
            raise ValueError(f"xu (unary features) must have shape ({V}, d_u) -- one row per "
                             f"superpixel -- got {self.xu.shape}")
        if self.xp.shape[0] != E:
            raise ValueError(f"xp (pairwise features) must have shape ({E}, d_p) -- one row per "
                             f"edge -- got {self.xp.shape}")
        if self.xu.shape[1] < 1 or self.xp.shape[1] < 1:
            raise ValueError(f"d_u and d_p must be >= 1, got xu {self.xu.shape}, xp {self.xp.shape}")
        if self.edges.shape != (E, 2):
            raise ValueError(f"edges must have shape ({E}, 2), got {self.edges.shape}")
        for nm in ("gt", "area", "fg_area"):
            if getattr(self, nm).shape != (V,):
                raise ValueError(f"{nm} must have shape ({V},) (one per superpixel), got "
                                 f"{getattr(self, nm).shape}")
        if not np.all(np.isfinite(self.xu)):
            raise ValueError("xu (unary features) contains NaN or inf")
        if not np.all(np.isfinite(self.xp)):
            raise ValueError("xp (pairwise features) contains NaN or inf")
        if self.xp.size and self.xp.min() < 0:
            raise ValueError(f"xp (pairwise features) must be >= 0 (so that w_P >= 0 gives a "
                             f"submodular energy), got min {self.xp.min()}")
        if V and not np.all((self.gt == 0) | (self.gt == 1)):
            raise ValueError("gt must hold 0 (background) or 1 (foreground) for every superpixel")
        if V and self.area.min() < 1:
            raise ValueError(f"area must be >= 1 pixel for every superpixel, got min {self.area.min()}")
        if V and (self.fg_area.min() < 0 or np.any(self.fg_area > self.area)):
            raise ValueError("fg_area must lie in [0, area] for every superpixel")
        if E:
            nv = np.repeat(np.diff(self.sp_off), np.diff(self.edge_off))
            p, q = self.edges[:, 0], self.edges[:, 1]
            if p.min() < 0 or np.any(p >= q) or np.any(q >= nv):
                bad = int(np.flatnonzero((p < 0) | (p >= q) | (q >= nv))[0])
                raise ValueError(f"edge {bad} = {tuple(self.edges[bad])} must satisfy "
                                 f"0 <= p < q < V_i = {nv[bad]}")
            img = np.repeat(np.arange(n), np.diff(self.edge_off))
            key = (img * (nv.max() + 1) + p) * (nv.max() + 1) + q
            if np.unique(key).size != E:
                raise ValueError("edges holds a duplicated edge within an image")
        if self.img_shape.shape != (n, 2) or (n and self.img_shape.min() < 1):
            raise ValueError(f"img_shape must have shape ({n}, 2) with positive sizes, got "
                             f"{self.img_shape.shape}")
        P = int(np.sum(self.img_shape[:, 0] * self.img_shape[:, 1]))
        if self.segments.shape != (P,) or self.mask.shape != (P,):
            raise ValueError(f"segments and mask must have shape ({P},) (all pixels), got "
                             f"{self.segments.shape} and {self.mask.shape}")
        if self.image_names and len(self.image_names) != n:
            raise ValueError(f"image_names must have {n} entries, got {len(self.image_names)}")
        if self.photo_paths and len(self.photo_paths) != n:
            raise ValueError(f"photo_paths must have {n} entries, got {len(self.photo_paths)}")

    # ------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of images (blocks of the SSVM dual)."""
        return int(self.sp_off.size - 1)

    @property
    def d_u(self) -> int:
        return int(self.xu.shape[1])

    @property
    def d_p(self) -> int:
        return int(self.xp.shape[1])

    @property
    def n_superpixels(self) -> np.ndarray:
        return np.diff(self.sp_off)

    @property
    def n_edges(self) -> np.ndarray:
        return np.diff(self.edge_off)

    def _check_i(self, i) -> int:
        if not 0 <= int(i) < self.n:
            raise IndexError(f"image index {i} out of range [0, {self.n})")
        return int(i)

    def segment_map(self, i: int) -> np.ndarray:
        """Superpixel index of every pixel of image i, int32 of shape (H, W)."""
        i = self._check_i(i)
        H, W = self.img_shape[i]
        return self.segments[self._pix_off[i]:self._pix_off[i + 1]].reshape(H, W)

    def mask_map(self, i: int) -> np.ndarray:
        """Ground-truth pixel mask of image i, bool of shape (H, W)."""
        i = self._check_i(i)
        H, W = self.img_shape[i]
        return self.mask[self._pix_off[i]:self._pix_off[i + 1]].reshape(H, W)

    def labels_to_mask(self, i: int, y) -> np.ndarray:
        """Pixel mask of a superpixel labelling y of image i, bool of shape (H, W)."""
        i = self._check_i(i)
        y = np.asarray(y)
        V = int(self.sp_off[i + 1] - self.sp_off[i])
        if y.shape != (V,):
            raise ValueError(f"y must have shape ({V},) (one label per superpixel of image {i}), "
                             f"got {y.shape}")
        return (y != 0)[self.segment_map(i)]

    def photo(self, i: int) -> np.ndarray | None:
        """The photo of image i resized to its mask, uint8 of shape (H, W, 3), or None without
        photo paths. Read from disk and resized on first use (scikit-image), then kept."""
        i = self._check_i(i)
        if not self.photo_paths:
            return None
        if i not in self._photos:
            from .horse_features import read_photo
            self._photos[i] = read_photo(self.photo_paths[i], tuple(self.img_shape[i]))
        return self._photos[i]

    def subset(self, idx: Any, name: str | None = None) -> "SegmentationData":
        """A new data set made of the images ``idx`` (in that order)."""
        idx = np.asarray(idx, dtype=np.int64).ravel()
        if idx.size == 0 or idx.min() < 0 or idx.max() >= self.n:
            raise ValueError(f"subset needs image indices in [0, {self.n}), got {idx[:5]}")
        sp = np.concatenate([np.arange(self.sp_off[i], self.sp_off[i + 1]) for i in idx])
        ed = np.concatenate([np.arange(self.edge_off[i], self.edge_off[i + 1]) for i in idx])
        px = np.concatenate([np.arange(self._pix_off[i], self._pix_off[i + 1]) for i in idx])
        cum = lambda a: np.concatenate([[0], np.cumsum(a)]).astype(np.int64)  # noqa: E731
        return SegmentationData(
            sp_off=cum(self.n_superpixels[idx]), edge_off=cum(self.n_edges[idx]),
            edges=self.edges[ed], xu=self.xu[sp], xp=self.xp[ed], gt=self.gt[sp],
            area=self.area[sp], fg_area=self.fg_area[sp], img_shape=self.img_shape[idx],
            segments=self.segments[px], mask=self.mask[px], name=name or f"{self.name}[subset]",
            image_names=tuple(self.image_names[i] for i in idx) if self.image_names else (),
            photo_paths=tuple(self.photo_paths[i] for i in idx) if self.photo_paths else (),
            extras=dict(self.extras))

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays, in bytes (features, graph, pixel maps)."""
        return int(sum(getattr(self, a).nbytes for a in (
            "sp_off", "edge_off", "edges", "xu", "xp", "gt", "area", "fg_area", "img_shape",
            "segments", "mask")))


def make_synthetic_segmentation(n_images: int = 4, grid: tuple = (3, 4), cell: int = 4,
                                d_u: int = 5, d_p: int = 3, noise: float = 0.5,
                                seed: int = 0, name: str = "synthetic-seg") -> SegmentationData:
    """Small synthetic segmentation data: each image is a ``grid`` of square superpixels of
    ``cell`` x ``cell`` pixels (4-connected adjacency), the foreground a random rectangle of
    superpixels; unary features = (1, the foreground indicator + Gaussian noise, noise...),
    pairwise features = (1, exp(-‖x_p - x_q‖²) ...) >= 0. For tests and toy runs.

    Parameters
    ----------
    n_images : int
        Number of images (blocks).
    grid : (int, int)
        Superpixels per column and per row.
    cell : int
        Side of a superpixel in pixels.
    d_u, d_p : int
        Unary and pairwise feature sizes (d_u >= 2, d_p >= 1).
    noise : float
        Standard deviation of the noise on the informative unary feature.
    seed : int
        Seed of the numpy Generator.
    """
    if d_u < 2 or d_p < 1:
        raise ValueError(f"d_u must be >= 2 and d_p >= 1, got d_u={d_u}, d_p={d_p}")
    rng = np.random.default_rng(seed)
    gh, gw = grid
    V = gh * gw
    ids = np.arange(V).reshape(gh, gw)
    e = np.concatenate([np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], 1),
                        np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()], 1)])
    e = e[np.lexsort((e[:, 1], e[:, 0]))]
    seg = np.kron(ids, np.ones((cell, cell), dtype=np.int64))
    xs, xps, gts, segs, masks, edges = [], [], [], [], [], []
    for _ in range(n_images):
        r0, c0 = rng.integers(0, gh), rng.integers(0, gw)
        r1, c1 = rng.integers(r0, gh) + 1, rng.integers(c0, gw) + 1
        g = np.zeros((gh, gw), dtype=np.int64)
        g[r0:r1, c0:c1] = 1
        g = g.ravel()
        x = np.empty((V, d_u))
        x[:, 0] = 1.0
        x[:, 1] = g + noise * rng.standard_normal(V)
        x[:, 2:] = rng.standard_normal((V, d_u - 2))
        diff = np.sum((x[e[:, 0], 1:] - x[e[:, 1], 1:]) ** 2, axis=1)
        xp = np.empty((len(e), d_p))
        xp[:, 0] = 1.0
        for k in range(1, d_p):
            xp[:, k] = np.exp(-diff * 2.0 ** (k - 1))
        xs.append(x)
        xps.append(xp)
        gts.append(g)
        segs.append(seg.ravel())
        masks.append(g[seg.ravel()].astype(bool))
        edges.append(e)
    area = np.full(V * n_images, cell * cell, dtype=np.int64)
    gt = np.concatenate(gts)
    return SegmentationData(
        sp_off=np.arange(n_images + 1, dtype=np.int64) * V,
        edge_off=np.arange(n_images + 1, dtype=np.int64) * len(e),
        edges=np.concatenate(edges), xu=np.concatenate(xs).astype(np.float32),
        xp=np.concatenate(xps).astype(np.float32), gt=gt, area=area, fg_area=gt * cell * cell,
        img_shape=np.tile([gh * cell, gw * cell], (n_images, 1)),
        segments=np.concatenate(segs).astype(np.int32), mask=np.concatenate(masks), name=name,
        image_names=tuple(f"synthetic{k:03d}" for k in range(n_images)))
