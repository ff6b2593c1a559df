"""Leeds Sports Pose (LSP) joint geometry for the pose-estimation SSVM (Paper: App. I, LSP).

LSP's images and the CNN score maps of Chen and Yuille (NIPS 2014) that the paper used cannot be
had here; only the real joint annotations can (``joints.mat``, Johnson and Everingham, BMVC
2010). This module turns them into a structured prediction data set whose *outputs* are real
human poses and whose *inputs* are generated part-score maps (see :class:`PoseData`).

``joints.mat``
    A MATLAB v5 array ``joints`` of shape (3, 14, 2000): row 0 the x coordinate, row 1 the y
    coordinate (pixels of the original-size image), row 2 a per-joint flag. The flag is 1 for
    2,044 of 28,000 joints (7.3 %) and 0 for the rest: in the original LSP release it marks an
    **occluded** joint (1 = occluded, 0 = visible; the README's "visibility" wording is
    inverted), and the coordinates of occluded joints are annotated all the same (no joint is
    missing in the file). We keep every joint and use the flag only to weaken the generated
    detector peak of occluded joints. First 1,000 poses: training set; last 1,000: test set.

Nodes and tree (26 nodes, 25 edges, root = neck)
    Nodes 0-13 are LSP's 14 joints in the file's order (:data:`JOINT_NAMES`): right ankle,
    right knee, right hip, left hip, left knee, left ankle, right wrist, right elbow, right
    shoulder, left shoulder, left elbow, left wrist, neck, head top. The 13 bones of the
    skeleton are head-neck, neck-shoulder (×2), shoulder-elbow, elbow-wrist, shoulder-hip,
    hip-knee, knee-ankle (×2 each). Every bone except head-neck gets a midpoint node (12 nodes,
    14-25, :data:`MIDPOINTS`), which splits it in two edges: 14 + 12 = 26 nodes, as the paper's
    (App. I). The tree is rooted at the neck; :data:`LSP_PARENT` lists each node's parent
    (-1 for the root).

Grid
    Images are not available, so each pose is placed on its own G×G grid: the bounding box of
    its 14 joints is centred and scaled (aspect kept) to span ``(1 - 2·margin)·(G - 1)`` cells,
    and every node's position is rounded to the nearest cell. G is a parameter (32, 64, 128;
    any G >= 2). Positions are (x, y) = (column, row); the position index is ``y·G + x``.

Mixture types (Paper: App. I; Chen and Yuille 2014)
    For every non-root node q, the displacements ``l_q - l_parent(q)`` (grid units) over the
    1,000 training poses are clustered by k-means (k-means++ seeding and Lloyd iterations with
    a numpy Generator of the given seed: reproducible per seed) into ``n_types`` clusters; the
    cluster centres are the anchors r_q^t of the deformation term, and the training poses'
    types are their cluster labels. Test poses take the nearest anchor. The root has one type.

Loss scale
    s_i = distance between the left shoulder and the right hip of the ground-truth pose, in grid
    units (at least 1), as in the paper.

Generated part-score maps (:class:`ScoreMapSpec`)
    The input x_i of image i is, for every node p, a generated G×G map φ_p(l) standing in for
    a part detector's score: a peak near the true position, decoys, noise; drawn from the seed
    and regenerated on demand (:mod:`gaplab.core.datasets.lsp_scoremaps`).

Paper: App. I (LSP), Chen and Yuille (NIPS 2014), Johnson and Everingham (BMVC 2010).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from .base import frozen_copy
from .lsp_scoremaps import ScoreMapSpec, draw_bumps

__all__ = [
    "JOINT_NAMES", "NODE_NAMES", "MIDPOINTS", "LSP_PARENT", "LSP_MIRROR", "LSP_JOINTS_SHA256",
    "ScoreMapSpec", "PoseData", "read_lsp_joints", "make_pose_data", "kmeans_types", "load_lsp",
]

#: sha256 of LSP's joints.mat (the 2,000-image original release).
LSP_JOINTS_SHA256 = "96e46fdc743ebf8640c1868b07ceb7f1edd83377376e868b1fca413e2cf44eb0"

JOINT_NAMES = (
    "r_ankle", "r_knee", "r_hip", "l_hip", "l_knee", "l_ankle", "r_wrist", "r_elbow",
    "r_shoulder", "l_shoulder", "l_elbow", "l_wrist", "neck", "head_top",
)
_NECK, _HEAD = 12, 13
_R_HIP, _L_SHO = 2, 9

#: The 12 midpoint nodes 14-25: (joint a, joint b) of the bone they halve.
MIDPOINTS = (
    (12, 8), (12, 9),          # 14, 15: neck-shoulder (right, left)
    (8, 7), (7, 6),            # 16, 17: right upper arm, right forearm
    (9, 10), (10, 11),         # 18, 19: left upper arm, left forearm
    (8, 2), (9, 3),            # 20, 21: right and left torso side (shoulder-hip)
    (2, 1), (1, 0),            # 22, 23: right thigh, right shin
    (3, 4), (4, 5),            # 24, 25: left thigh, left shin
)
NODE_NAMES = JOINT_NAMES + tuple(f"mid_{JOINT_NAMES[a]}_{JOINT_NAMES[b]}" for a, b in MIDPOINTS)


def _build_tree():
    parent = np.full(26, -1, dtype=np.int64)
    parent[_HEAD] = _NECK
    for m, (a, b) in enumerate(MIDPOINTS):  # bone a-b with a nearer the neck: a -> mid -> b
        parent[14 + m] = a
        parent[b] = 14 + m
    return parent


#: Parent of each of the 26 nodes (root = neck, node 12, parent -1).
LSP_PARENT = _build_tree()


def _build_mirror():
    names = list(NODE_NAMES)
    out = np.full(26, -1, dtype=np.int64)
    for p, nm in enumerate(names):  # swap every r/l token of the name
        new = "_".join({"r": "l", "l": "r"}.get(t, t) for t in nm.split("_"))
        if new != nm and new in names:
            out[p] = names.index(new)
    return out


#: Left/right partner of each node (-1: none; neck, head top).
LSP_MIRROR = _build_mirror()


@dataclasses.dataclass
class PoseData:
    """Poses on a G×G grid with their generated part-score maps (one dual block per image).

    Attributes
    ----------
    G : int
        Grid side; node positions are cells (x, y) in [0, G)², index y·G + x.
    parent : ndarray of int64, shape (N,)
        Tree over the N nodes (parent -1 for the root; exactly one root).
    pos : ndarray of int64, shape (n, N, 2)
        Ground-truth (x, y) cell of every node of every image.
    types : ndarray of int64, shape (n, N)
        Ground-truth mixture type of every node (0 for the root).
    anchors : ndarray of float64, shape (N, T, 2)
        Mean displacement r_q^t = l_q − l_parent(q) of type t (grid units; zeros for the root).
    n_types : ndarray of int64, shape (N,)
        Number of types of each node (T, or 1 for the root).
    scale : ndarray of float64, shape (n,)
        Loss scale s_i (grid units, >= 1).
    img_id : ndarray of int64, shape (n,)
        Identity of each image for the noise hash (LSP: 0-1999).
    occluded : ndarray of bool, shape (n, N)
        Occlusion flags (midpoints: either end occluded).
    mirror : ndarray of int64, shape (N,)
        Left/right partner of each node (-1: none).
    spec : ScoreMapSpec
        Parameters of the score maps.
    seed : int
        Seed of the score maps (bumps and noise).
    bump_pos, bump_amp : ndarray
        Bump centres (n, N, 3, 2) float64 (x, y in cells) and amplitudes (n, N, 3) float64 of
        each node's 3 bumps (peak, mirror decoy, clutter decoy), drawn from the seed when not
        given.
    node_names : tuple of str
    name : str

    Every field is validated at construction (shapes, ranges, finite values, a tree) and the
    arrays are kept as private read-only copies; reassigning a field other than ``name`` and
    ``node_names`` afterwards raises AttributeError (use ``dataclasses.replace``), so the model
    built on it reads exactly what was validated.

    Raises
    ------
    ValueError, TypeError
        Naming the field, its expected shape or range and what was received.
    """

    G: int
    parent: np.ndarray
    pos: np.ndarray
    types: np.ndarray
    anchors: np.ndarray
    n_types: np.ndarray
    scale: np.ndarray
    img_id: np.ndarray
    occluded: np.ndarray
    mirror: np.ndarray
    spec: ScoreMapSpec
    seed: int
    bump_pos: np.ndarray = None
    bump_amp: np.ndarray = None
    node_names: tuple = ()
    name: str = "pose"

    #: fields that may be reassigned after validation (the kernels never read them)
    _MUTABLE = frozenset({"name", "node_names"})

    def __setattr__(self, key, value):
        if self.__dict__.get("_validated") and key not in self._MUTABLE:
            raise AttributeError(
                f"PoseData.{key} cannot be reassigned after validation (the model's kernels read it); "
                f"build a new one, e.g. dataclasses.replace(data, {key}=...)")
        object.__setattr__(self, key, value)

    def __post_init__(self):
        _check_G(self.G)
        self.G = int(self.G)
        if not isinstance(self.spec, ScoreMapSpec):
            raise TypeError(f"spec must be a ScoreMapSpec, got {type(self.spec).__name__}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or not 0 <= self.seed < 2 ** 63:
            raise ValueError(f"seed must be an int in [0, 2**63), got {self.seed!r}")
        self.seed = int(self.seed)
        self.parent = _frozen(self.parent, np.int64, "parent", 1)
        N = self.parent.shape[0]
        if N < 1 or np.count_nonzero(self.parent < 0) != 1 or np.any(self.parent < -1) or np.any(self.parent >= N):
            raise ValueError(f"parent must hold, for each of the N = {N} nodes, its parent in [0, N) or -1 for "
                             f"exactly one root, got {self.parent.tolist()}")
        seen, todo = {int(np.flatnonzero(self.parent < 0)[0])}, [int(np.flatnonzero(self.parent < 0)[0])]
        while todo:
            q = todo.pop()
            for c in np.flatnonzero(self.parent == q):
                if int(c) not in seen:
                    seen.add(int(c))
                    todo.append(int(c))
        if len(seen) != N:
            raise ValueError("parent has a cycle: not every node is reachable from the root")
        self.pos = _frozen(self.pos, np.int64, "pos", 3)
        n = self.pos.shape[0]
        if self.pos.shape[1:] != (N, 2):
            raise ValueError(f"pos must have shape (n, {N}, 2), got {self.pos.shape}")
        if self.pos.size and (self.pos.min() < 0 or self.pos.max() >= self.G):
            raise ValueError(f"pos must lie in [0, G) = [0, {self.G}), got range "
                             f"[{self.pos.min()}, {self.pos.max()}]")
        self.anchors = _frozen(self.anchors, np.float64, "anchors", 3)
        if self.anchors.shape[0] != N or self.anchors.shape[1] < 1 or self.anchors.shape[2] != 2:
            raise ValueError(f"anchors must have shape (N, T, 2) = ({N}, T >= 1, 2), got {self.anchors.shape}")
        if not np.all(np.isfinite(self.anchors)):
            raise ValueError("anchors contains NaN or inf")
        T = self.anchors.shape[1]
        self.n_types = _frozen(self.n_types, np.int64, "n_types", 1)
        if self.n_types.shape != (N,) or self.n_types.min() < 1 or self.n_types.max() > T \
                or np.any(self.n_types[self.parent < 0] != 1):
            raise ValueError(f"n_types must have shape ({N},) with values in [1, T = {T}] and 1 for the root, "
                             f"got {self.n_types.tolist()}")
        self.types = _frozen(self.types, np.int64, "types", 2)
        if self.types.shape != (n, N):
            raise ValueError(f"types must have shape (n, N) = ({n}, {N}), got {self.types.shape}")
        if self.types.size and (self.types.min() < 0 or np.any(self.types >= self.n_types[None, :])):
            raise ValueError("types must lie in [0, n_types[p]) for every node p")
        self.scale = _frozen(self.scale, np.float64, "scale", 1)
        if self.scale.shape != (n,) or not np.all(np.isfinite(self.scale)) or np.any(self.scale <= 0):
            raise ValueError(f"scale must have shape ({n},) with finite values > 0, got shape {self.scale.shape}"
                             + (f", range [{self.scale.min()}, {self.scale.max()}]" if self.scale.size else ""))
        self.img_id = _frozen(self.img_id, np.int64, "img_id", 1)
        if self.img_id.shape != (n,) or (n and self.img_id.min() < 0):
            raise ValueError(f"img_id must have shape ({n},) with values >= 0, got shape {self.img_id.shape}")
        self.occluded = _frozen(self.occluded, np.bool_, "occluded", 2)
        if self.occluded.shape != (n, N):
            raise ValueError(f"occluded must have shape (n, N) = ({n}, {N}), got {self.occluded.shape}")
        self.mirror = _frozen(self.mirror, np.int64, "mirror", 1)
        if self.mirror.shape != (N,) or np.any(self.mirror < -1) or np.any(self.mirror >= N):
            raise ValueError(f"mirror must have shape ({N},) with values in [-1, {N}), got {self.mirror.tolist()}")
        if (self.bump_pos is None) != (self.bump_amp is None):
            raise ValueError("give both bump_pos and bump_amp, or neither (drawn from the seed)")
        if self.bump_pos is None:
            self.bump_pos, self.bump_amp = draw_bumps(self)
        self.bump_pos = _frozen(self.bump_pos, np.float64, "bump_pos", 4)
        self.bump_amp = _frozen(self.bump_amp, np.float64, "bump_amp", 3)
        if self.bump_pos.shape != (n, N, 3, 2) or self.bump_amp.shape != (n, N, 3):
            raise ValueError(f"bump_pos and bump_amp must have shapes (n, N, 3, 2) = ({n}, {N}, 3, 2) and "
                             f"({n}, {N}, 3), got {self.bump_pos.shape} and {self.bump_amp.shape}")
        if not (np.all(np.isfinite(self.bump_pos)) and np.all(np.isfinite(self.bump_amp))):
            raise ValueError("bump_pos and bump_amp must be finite (no NaN or inf)")
        self.node_names = tuple(str(s) for s in self.node_names)
        object.__setattr__(self, "_validated", True)

    @property
    def n(self) -> int:
        return int(self.pos.shape[0])

    @property
    def label_names(self):
        """None: a labelling's entries are cells and types, not named labels (the app shows
        :meth:`~gaplab.core.models.PoseModel.describe_block`'s ``label_text`` instead)."""
        return None

    @property
    def n_nodes(self) -> int:
        return int(self.parent.shape[0])

    def subset(self, idx) -> "PoseData":
        """The images ``idx`` (same tree, anchors, spec and seed; maps unchanged per image)."""
        idx = np.asarray(idx, dtype=np.int64)
        return dataclasses.replace(
            self, pos=self.pos[idx], types=self.types[idx], scale=self.scale[idx],
            img_id=self.img_id[idx], occluded=self.occluded[idx], bump_pos=self.bump_pos[idx],
            bump_amp=self.bump_amp[idx], name=f"{self.name}[{len(idx)}]")


def _frozen(arr, dtype, name, ndim):
    """PoseData's arrays: a private read-only copy (:func:`~gaplab.core.datasets.base.frozen_copy`)."""
    return frozen_copy(arr, dtype, name, ndim)


def _as_flags(a, name):
    """``a`` (any shape) as bool flags: bools, or numbers that are all 0 or 1 (joints.mat stores
    0./1.); a float such as 0.5 is refused instead of silently becoming True."""
    a = np.asarray(a)
    return frozen_copy(a, np.bool_, name, a.ndim)


def _check_G(G):
    if isinstance(G, bool) or not isinstance(G, (int, np.integer)) or G < 2:
        raise ValueError(f"G (grid side) must be an int >= 2, got {G!r}")


# --------------------------------------------------------------------------- k-means types
def kmeans_types(X, k: int, seed: int, n_iter: int = 100):
    """k-means of points X (m, 2): k-means++ seeding then Lloyd iterations.

    Deterministic for a given seed (numpy Generator, no global RNG); ties go to the lowest
    centre. Returns (centres (k, 2) float64, labels (m,) int64). Clusters are then sorted by
    their centre's angle so that type numbers are stable under relabelling.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must have shape (m >= 1, dim), got {X.shape}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"n_types must be an int >= 1, got {k!r}")
    m = X.shape[0]
    rng = np.random.default_rng(seed)
    C = np.empty((k, X.shape[1]))
    C[0] = X[rng.integers(m)]
    d2 = ((X - C[0]) ** 2).sum(1)
    for j in range(1, k):
        tot = d2.sum()
        idx = rng.integers(m) if tot <= 0 else int(np.searchsorted(np.cumsum(d2), rng.random() * tot))
        C[j] = X[min(idx, m - 1)]
        d2 = np.minimum(d2, ((X - C[j]) ** 2).sum(1))
    lab = np.zeros(m, dtype=np.int64)
    for it in range(n_iter):
        D = ((X[:, None, :] - C[None]) ** 2).sum(2)
        new = D.argmin(1)
        for j in range(k):
            sel = new == j
            if sel.any():
                C[j] = X[sel].mean(0)
        if it and np.array_equal(new, lab):
            break
        lab = new
    lab = ((X[:, None, :] - C[None]) ** 2).sum(2).argmin(1)
    order = np.lexsort((C[:, 1], np.round(np.arctan2(C[:, 1], C[:, 0]), 12)))
    inv = np.empty(k, dtype=np.int64)
    inv[order] = np.arange(k)
    return C[order].copy(), inv[lab]


# --------------------------------------------------------------------------- building
def read_lsp_joints(path) -> tuple[np.ndarray, np.ndarray]:
    """Read an LSP ``joints.mat``: returns (xy (m, 14, 2) float64, occluded (m, 14) bool).

    Raises ValueError naming the file when the ``joints`` array is absent, of the wrong shape,
    or a pose has a missing (non-finite) joint coordinate.
    """
    import scipy.io

    path = Path(path)
    try:
        mat = scipy.io.loadmat(str(path))
    except Exception as exc:  # scipy raises several types for a bad file
        raise ValueError(f"{path}: not a readable MATLAB file ({exc})") from exc
    if "joints" not in mat:
        raise ValueError(f"{path}: no 'joints' array (found {sorted(k for k in mat if not k.startswith('__'))})")
    J = np.asarray(mat["joints"], dtype=np.float64)
    if J.ndim != 3 or J.shape[0] != 3 or J.shape[1] != 14:
        raise ValueError(f"{path}: 'joints' must have shape (3, 14, m) (x, y, occlusion flag per "
                         f"joint), got {J.shape}")
    xy = np.ascontiguousarray(J[:2].transpose(2, 1, 0))
    bad = ~np.isfinite(xy).all(axis=(1, 2))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        j = int(np.flatnonzero(~np.isfinite(xy[k]).all(1))[0])
        raise ValueError(f"{path}: pose {k} has a missing joint ({JOINT_NAMES[j]}: {xy[k, j].tolist()}); "
                         f"{int(bad.sum())} poses have missing joints")
    return xy, J[2].T.astype(bool)


def _to_grid(xy, G, margin):
    lo, hi = xy.min(1), xy.max(1)  # (m, 2)
    ext = np.maximum((hi - lo).max(1), 1e-9)
    s = (1.0 - 2.0 * margin) * (G - 1) / ext
    c = (lo + hi) / 2.0
    return (xy - c[:, None, :]) * s[:, None, None] + (G - 1) / 2.0


def make_pose_data(xy, occluded, G: int, *, n_types: int = 4, seed: int = 0, margin: float = 0.1,
                   train=None, spec: ScoreMapSpec | None = None, img_id=None, name: str = "lsp"):
    """Build :class:`PoseData` from 14-joint poses (see the module docstring).

    Parameters
    ----------
    xy : array (m, 14, 2) float
        Joint coordinates in LSP's order.
    occluded : array (m, 14) bool
    G : int >= 2
        Grid side.
    n_types : int
        Mixture types per non-root node (k-means clusters).
    seed : int
        Seed of the k-means and of the score maps.
    train : PoseData, optional
        Take the anchors (k-means centres) from this training set instead of clustering ``xy``
        (test set: each pose gets the nearest anchor).
    """
    _check_G(G)
    xy = np.asarray(xy, dtype=np.float64)
    if xy.ndim != 3 or xy.shape[1:] != (14, 2):
        raise ValueError(f"xy must have shape (m, 14, 2), got {xy.shape}")
    if not np.isfinite(xy).all():
        k = int(np.flatnonzero(~np.isfinite(xy).all(axis=(1, 2)))[0])
        raise ValueError(f"pose {k} has a missing (non-finite) joint coordinate")
    if not 0 <= margin < 0.5:
        raise ValueError(f"margin must lie in [0, 0.5), got {margin!r}")
    m = xy.shape[0]
    g = _to_grid(xy, G, margin)
    full = np.concatenate([g, np.stack([(g[:, a] + g[:, b]) / 2 for a, b in MIDPOINTS], 1)], 1)
    pos = np.clip(np.rint(full), 0, G - 1).astype(np.int64)
    occ = _as_flags(occluded, "occluded")
    occ = np.concatenate([occ, np.stack([occ[:, a] | occ[:, b] for a, b in MIDPOINTS], 1)], 1)
    parent = LSP_PARENT
    N = 26
    if train is None:
        T = n_types
        anchors = np.zeros((N, T, 2))
        types = np.zeros((m, N), dtype=np.int64)
        for q in range(N):
            if parent[q] < 0:
                continue
            disp = (pos[:, q] - pos[:, parent[q]]).astype(np.float64)
            C, lab = kmeans_types(disp, T, seed=[int(seed), q])
            anchors[q], types[:, q] = C, lab
    else:
        anchors = train.anchors
        T = anchors.shape[1]
        types = np.zeros((m, N), dtype=np.int64)
        for q in range(N):
            if parent[q] < 0:
                continue
            disp = (pos[:, q] - pos[:, parent[q]]).astype(np.float64)
            types[:, q] = ((disp[:, None, :] - anchors[q][None]) ** 2).sum(2).argmin(1)
    ntyp = np.where(parent < 0, 1, T).astype(np.int64)
    scale = np.maximum(np.sqrt(((pos[:, _L_SHO] - pos[:, _R_HIP]) ** 2).sum(1)), 1.0)
    return PoseData(
        G=int(G), parent=parent.copy(), pos=pos, types=types, anchors=anchors, n_types=ntyp,
        scale=scale, img_id=np.arange(m, dtype=np.int64) if img_id is None else np.asarray(img_id, np.int64),
        occluded=occ, mirror=LSP_MIRROR.copy(), spec=spec or ScoreMapSpec(), seed=int(seed),
        node_names=NODE_NAMES, name=name)


# --------------------------------------------------------------------------- locating files
def _cache_root() -> Path:
    return Path(platformdirs.user_cache_dir("gaplab"))


def _candidate_files(data_home: Any) -> list[tuple[Path, str]]:
    if data_home is not None:
        p = Path(data_home).expanduser()
        return [(p / "joints.mat", "data_home"), (p / "lsp" / "joints.mat", "data_home")]
    out = []
    env = os.environ.get("GAPLAB_DATA", "").strip()
    if env:
        p = Path(env).expanduser()
        out += [(p / "joints.mat", "$GAPLAB_DATA"), (p / "lsp" / "joints.mat", "$GAPLAB_DATA")]
    out.append((_cache_root() / "lsp" / "joints.mat", "user cache"))
    return out


def locate_lsp(data_home: Any = None) -> Path:
    """Path of ``joints.mat``: in ``data_home`` or ``data_home/lsp`` if given (nowhere else);
    otherwise in ``$GAPLAB_DATA`` or ``$GAPLAB_DATA/lsp``, then the user cache directory
    ``platformdirs.user_cache_dir("gaplab")/lsp``. FileNotFoundError lists where it looked."""
    cands = _candidate_files(data_home)
    for f, _ in cands:
        if f.is_file():
            return f
    lines = "\n".join(f"  - {f}  [{why}]" for f, why in cands)
    raise FileNotFoundError(
        "LSP joints.mat not found. Looked in:\n" + lines + "\nGet joints.mat from "
        "http://sam.johnson.io/research/lsp.html (lsp_dataset_original.zip) and pass "
        "load_lsp(data_home=DIR) with DIR holding it (or an lsp/ subfolder), or set the "
        f"environment variable GAPLAB_DATA to such a directory, or copy it to {_cache_root() / 'lsp'}.")


def load_lsp(G: int = 64, *, n_types: int = 4, seed: int = 0, data_home: Any = None,
             verify: bool = True, n_train: int = 1000, spec: ScoreMapSpec | None = None,
             margin: float = 0.1) -> tuple[PoseData, PoseData]:
    """Load LSP's poses on a G×G grid: (train, test) = first ``n_train`` of the first 1,000
    poses, last 1,000 poses (see the module docstring for the tree, types and score maps).

    Parameters
    ----------
    G : int >= 2
        Grid side (32, 64, 128 in the benchmarks); sets the oracle's cost (O(26·T·G²)).
    n_types : int
        Mixture types per non-root node, by k-means of the training displacements.
    seed : int
        Seed of the k-means and of the generated score maps.
    data_home : path, optional
        Directory holding ``joints.mat`` (or ``lsp/joints.mat``).
    verify : bool, default True
        Check the file's sha256 against :data:`LSP_JOINTS_SHA256`: a cut or edited file is
        refused with a message naming it. ``verify=False`` (``--no-verify`` on the command
        line) reads another ``joints.mat`` (a file that is not a readable MATLAB file with a
        (3, 14, 2000) ``joints`` array is still refused, naming it).
    n_train : int
        Use only the first ``n_train`` training poses (the paper's LSP-small: 100). The
        k-means always runs on all 1,000 training poses, as in the paper.

    Raises
    ------
    FileNotFoundError, ValueError (bad G, checksum mismatch, malformed file).
    """
    _check_G(G)
    if not isinstance(n_train, (int, np.integer)) or not 1 <= n_train <= 1000:
        raise ValueError(f"n_train must be an int in [1, 1000], got {n_train!r}")
    path = locate_lsp(data_home)
    if verify:
        from .conll import _sha256_file  # the one file checksum of the loaders
        got = _sha256_file(path)
        if got != LSP_JOINTS_SHA256:
            raise ValueError(f"sha256 mismatch for {path}: expected {LSP_JOINTS_SHA256} (LSP's official "
                             f"joints.mat), got {got}. The file is damaged (cut or edited): copy it again, or "
                             "pass verify=False (gaplab: --no-verify) to read another joints.mat on purpose")
    xy, occ = read_lsp_joints(path)
    if xy.shape[0] != 2000:
        raise ValueError(f"{path}: expected 2,000 poses (LSP), got {xy.shape[0]}")
    ids = np.arange(2000, dtype=np.int64)
    train = make_pose_data(xy[:1000], occ[:1000], G, n_types=n_types, seed=seed, margin=margin,
                           spec=spec, img_id=ids[:1000], name=f"lsp/train/G{G}")
    test = make_pose_data(xy[1000:], occ[1000:], G, n_types=n_types, seed=seed, margin=margin,
                          spec=spec, train=train, img_id=ids[1000:], name=f"lsp/test/G{G}")
    if n_train < 1000:
        train = train.subset(np.arange(n_train))
        train.name = f"lsp/train{n_train}/G{G}"
    return train, test
