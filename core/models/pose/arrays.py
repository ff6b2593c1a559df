"""The pose kind's flat arrays (:class:`PoseArrays`, what the compiled kernels read), built from
a :class:`~gaplab.core.datasets.lsp.PoseData` by :func:`build_pose_arrays` and checked by the
model contract's array check: the tree, the weight layout of ψ (offsets of the type-pair and
deformation weights; see :mod:`gaplab.core.models.pose.model`), the labellings, the per-image
numbers of the generated score maps and the oracle's scratch sizes.

Paper: App. I (LSP model).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import protocol as _p
from .transforms import DIRECT_MAX_G

__all__ = ["PoseArrays", "DEFORM_UNIT", "build_pose_arrays"]

PoseArrays = namedtuple(
    "PoseArrays",
    [
        "n", "d", "K",       # blocks (images), dim of w, oracle scratch per label entry (see below)
        "stat_off",          # int64 (n+1): block i's statistics m(y) = (ψ, L) at [i(d+1), (i+1)(d+1))
        "lab_off",           # int64 (n+1): labelling of block i: 2N entries (position, type) per node
        "gt",                # int64 (2N·n): ground-truth labellings
        "G", "N", "T",       # grid side, nodes, max types
        "parent",            # int64 (N,): parent node (-1 root)
        "nchild",            # int64 (N,): children of each node (0: a leaf)
        "depth",             # int64 (N,): depth in the tree (root 0)
        "order",             # int64 (N,): breadth-first order from the root
        "ntype",             # int64 (N,): types of each node (root: 1)
        "anchors",           # float64 (N·T·2,): r_q^t (grid units), [q, t, (x, y)]
        "pair_off",          # int64 (N,): start of edge (q, parent)'s type-pair weights (T_q × T_parent)
        "def_off",           # int64 (N,): start of node q's deformation weights (T_q × 4)
        "unit",              # float: deformation unit u (cells)
        "scale2",            # float64 (n,): s_i²
        "img_id",            # int64 (n,): image identity in the noise hash
        "seed",              # int: score-map seed
        "noise",             # float: noise standard deviation
        "sigma",             # float: bump width (cells)
        "bump_pos",          # float64 (n·N·3·2,): bump centres (x, y)
        "bump_amp",          # float64 (n·N·3,): bump amplitudes
        "scr_f", "scr_i",    # oracle scratch sizes (float64, int64)
        "direct_max_G",      # int: the oracle's transforms are direct when G <= this, envelope above
    ],
)

#: deformation unit u as a fraction of the grid side G (displacements are measured in G/2 cells)
DEFORM_UNIT = 0.5


def _scratch_sizes(N: int, T: int, G: int):
    """(scr_f, scr_i): the oracle's float64 and int64 scratch (see :func:`~gaplab.core.models.pose.oracle.pose_oracle`)."""
    GG = G * G
    return (N + 1) * T * GG + 2 * GG + 5 * G + 2, 2 * GG + G + N


def _scratch_K(N: int, T: int, G: int) -> int:
    """M.K for the pose kind: the solver gives a compiled oracle scratch of length
    (label length 2N) × M.K (float64 and int64; per thread in the exact gap pass), so M.K =
    ceil(max(scr_f, scr_i) / 2N) makes that scratch hold the oracle's tables (LSP, T = 4:
    K = 34,671 at G = 128, i.e. 14 MB of float64 and 14 MB of int64 per scratch: the solver
    sizes both alike)."""
    return int(-(-max(_scratch_sizes(N, T, G)) // (2 * N)))


_TRANSFORMS = ("auto", "direct", "envelope")


def build_pose_arrays(data, deform_unit: float = None, transform: str = "auto") -> PoseArrays:
    """The flat arrays of :class:`PoseArrays` for a :class:`~gaplab.core.datasets.lsp.PoseData`;
    ``deform_unit``: u as a fraction of G (default :data:`DEFORM_UNIT`); ``transform``: the
    oracle's distance transform, "auto" (direct for G <= :data:`DIRECT_MAX_G`, envelope
    above), "direct" or "envelope" (the same maxima; for tests and benchmarks)."""
    # every array below is the model's own writable copy: PoseData's are read-only, and a
    # change to the data after the model is built must not reach the kernels
    frac = DEFORM_UNIT if deform_unit is None else float(deform_unit)
    if not (np.isfinite(frac) and frac > 0):
        raise ValueError(f"deform_unit must be a finite number > 0 (a fraction of G), got {deform_unit!r}")
    if transform not in _TRANSFORMS:
        raise ValueError(f"transform must be one of {_TRANSFORMS}, got {transform!r}")
    parent = np.array(data.parent, dtype=np.int64, order="C", copy=True)
    N = parent.shape[0]
    roots = np.flatnonzero(parent < 0)
    if roots.size != 1:
        raise ValueError(f"parent must define a tree with exactly one root, got {roots.size} roots")
    children = [[] for _ in range(N)]
    for q in range(N):
        if parent[q] >= 0:
            if not 0 <= parent[q] < N:
                raise ValueError(f"parent[{q}] = {parent[q]} is outside [-1, {N})")
            children[parent[q]].append(q)
    order = [int(roots[0])]
    for k in range(N):
        if k >= len(order):
            raise ValueError("parent has a cycle: not every node is reachable from the root")
        order.extend(children[order[k]])
    order = np.asarray(order, dtype=np.int64)
    depth = np.zeros(N, dtype=np.int64)
    for q in order[1:]:
        depth[q] = depth[parent[q]] + 1
    ntype = np.array(data.n_types, dtype=np.int64, order="C", copy=True)
    anchors = np.array(data.anchors, dtype=np.float64, copy=True)
    T = anchors.shape[1]
    if ntype.shape != (N,) or ntype.min() < 1 or ntype.max() > T or ntype[roots[0]] != 1:
        raise ValueError(f"n_types must be (N,) = ({N},) in [1, {T}] with 1 for the root, got {ntype}")
    pair_off = np.full(N, -1, dtype=np.int64)
    def_off = np.full(N, -1, dtype=np.int64)
    off = N
    for q in range(N):
        if parent[q] >= 0:
            pair_off[q] = off
            off += ntype[q] * ntype[parent[q]]
    for q in range(N):
        if parent[q] >= 0:
            def_off[q] = off
            off += 4 * ntype[q]
    d = off
    G = int(data.G)
    n = data.n
    y = np.empty((n, N, 2), dtype=np.int64)
    y[:, :, 0] = data.pos[:, :, 1] * G + data.pos[:, :, 0]
    y[:, :, 1] = data.types
    if np.any(data.pos < 0) or np.any(data.pos >= G):  # checked again: the data's arrays could be unlocked
        raise ValueError(f"pos must lie in [0, G) = [0, {G}) for every node")
    if np.any(data.types < 0) or np.any(data.types >= ntype[None, :]):
        raise ValueError("types must lie in [0, n_types[p]) for every node")
    direct_max = {"auto": DIRECT_MAX_G, "direct": G, "envelope": 0}[transform]
    scr_f, scr_i = _scratch_sizes(N, T, G)
    return _p.freeze_arrays(PoseArrays(  # read-only: the kernels trust these offsets and sizes
        n=n, d=int(d), K=_scratch_K(N, T, G),
        stat_off=np.arange(n + 1, dtype=np.int64) * (d + 1),
        lab_off=np.arange(n + 1, dtype=np.int64) * (2 * N),
        gt=np.ascontiguousarray(y.reshape(-1)),
        G=G, N=N, T=int(T), parent=parent, nchild=np.bincount(parent[parent >= 0], minlength=N).astype(np.int64),
        depth=depth,
        order=order, ntype=ntype,
        anchors=np.array(anchors.reshape(-1), copy=True), pair_off=pair_off, def_off=def_off,
        unit=G * frac, scale2=np.ascontiguousarray(np.asarray(data.scale, np.float64) ** 2),
        img_id=np.array(data.img_id, dtype=np.int64, copy=True), seed=int(data.seed),
        noise=float(data.spec.noise), sigma=float(data.spec.sigma * G / 32.0),
        bump_pos=np.array(data.bump_pos.reshape(-1), dtype=np.float64, copy=True),
        bump_amp=np.array(data.bump_amp.reshape(-1), dtype=np.float64, copy=True),
        scr_f=int(scr_f), scr_i=int(scr_i), direct_max_G=int(direct_max),
    ))


def _check_pose_arrays(M, fail):
    """What the pose kernels index with: the tree, the per-node type counts, the weight offsets,
    the labelling (grid position, type) of every node, the score-map tables and scratch sizes."""
    n, d, N, T, G = int(M.n), int(M.d), M.N, M.T, M.G
    for f in ("N", "T", "G"):
        if not _p._int(getattr(M, f)) or getattr(M, f) < 1:
            fail(f"{f} must be an int >= 1, got {getattr(M, f)!r}")
    if not np.array_equal(M.stat_off, np.arange(n + 1) * (d + 1)):
        fail("stat_off must be arange(n + 1)·(d + 1)")
    if not np.array_equal(M.lab_off, np.arange(n + 1) * (2 * N)):
        fail("lab_off must be arange(n + 1)·2N")
    parent = _p.array(M, "parent", fail, dtype=np.int64, shape=(N,), lo=-1, hi=N)
    ntype = _p.array(M, "ntype", fail, dtype=np.int64, shape=(N,), lo=1, hi=T + 1)
    order = _p.array(M, "order", fail, dtype=np.int64, shape=(N,))
    if not np.array_equal(np.sort(order), np.arange(N)) or parent[order[0]] != -1:
        fail("order must be a permutation of the nodes starting at the root")
    _p.array(M, "depth", fail, dtype=np.int64, shape=(N,), lo=0, hi=N)
    if not np.array_equal(M.nchild, np.bincount(parent[parent >= 0], minlength=N)):
        fail("nchild must count the children of each node")
    gt = M.gt.reshape(n, N, 2)
    if gt.size and (gt[:, :, 0].min() < 0 or gt[:, :, 0].max() >= G * G):
        fail(f"gt positions must lie in [0, G²) = [0, {G * G})")
    if gt.size and (gt[:, :, 1].min() < 0 or np.any(gt[:, :, 1] >= ntype[None, :])):
        fail("gt types must lie in [0, ntype[q]) for every node q")
    _p.array(M, "anchors", fail, dtype=np.float64, shape=(N * T * 2,))
    child = parent >= 0
    pair_end = np.where(child, M.pair_off + ntype * ntype[np.maximum(parent, 0)], 0)
    def_end = np.where(child, M.def_off + 4 * ntype, 0)
    for f, end in (("pair_off", pair_end), ("def_off", def_end)):
        a = _p.array(M, f, fail, dtype=np.int64, shape=(N,))
        if np.any(a[child] < N) or np.any(end > d):
            fail(f"{f} of every non-root node must lie in [N, d) with its weights inside w (d = {d})")
    _p.array(M, "scale2", fail, dtype=np.float64, shape=(n,))
    _p.array(M, "img_id", fail, dtype=np.int64, shape=(n,))
    _p.array(M, "bump_pos", fail, dtype=np.float64, shape=(n * N * 3 * 2,))
    _p.array(M, "bump_amp", fail, dtype=np.float64, shape=(n * N * 3,))
    if (M.scr_f, M.scr_i) != tuple(int(v) for v in _scratch_sizes(N, T, G)) or M.K != _scratch_K(N, T, G):
        fail("the scratch sizes scr_f, scr_i and K must match N, T and G")


_p.register_arrays_check(PoseArrays, _check_pose_arrays)
