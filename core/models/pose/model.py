"""Pose estimation on a tree of parts with mixture types (Paper: App. I, LSP; Chen and Yuille,
NIPS 2014; Yang and Ramanan's flexible mixtures of parts): :class:`PoseModel` and the
registration of the pose kind's compiled primitives with the solver's kernels.

Labelling
    y of block (image) i is int64 of shape (2N,): ``y[2p]`` the position index ``row·G + col``
    of node p (0 <= . < G²), ``y[2p+1]`` its mixture type (0 <= . < T_p; T_root = 1).
    N = 26 for LSP (see :mod:`gaplab.core.datasets.lsp` for the tree).

Joint feature map ψ(x_i, y) ∈ R^d (layout; offsets in :class:`~gaplab.core.models.pose.arrays.PoseArrays`)
    * unary, N entries: ψ_U,p = φ_p(l_p), the generated part-score map of node p of image i at
      the node's position (weight w_U,p: one per node, as the paper;
      :mod:`gaplab.core.datasets.lsp_scoremaps`);
    * type pairs, Σ_q T_q·T_parent(q) entries: indicator [t_q = a, t_parent(q) = b] for each edge
      (q, parent(q)) (the pairwise type weights: co-occurrence of mixture types);
    * deformation, Σ_q 4·T_q entries: for the child q's type t, with the displacement
      (dx, dy) = (l_q − l_parent(q) − r_q^t)/u, the features −(dx, dx², dy, dy²) in slot t and
      0 in the other types' slots. The unit u = G/2 cells
      (:data:`~gaplab.core.models.pose.arrays.DEFORM_UNIT`) keeps the features O(1) at every
      G, as the unary scores are: with u = one cell, loss-augmented corners that put parts far
      apart while the quadratic weights are near 0 have dx² ~ G², so ‖ψ‖² is large and BCFW's
      steps γ ~ λn/‖ψ‖² tiny (a badly conditioned dual).
      The minus sign makes the term a penalty: ⟨w_P,q,t, ψ⟩ = −(b_x dx + a_x dx² + b_y dy +
      a_y dy²), concave in the displacement when the quadratic weights a_x, a_y are >= 0,
      which is what the distance transform needs; :meth:`PoseModel.bounds` keeps them >= 0
      (Paper: App. H).

    LSP with T = 4 types (the loader's default): d = 26 + (3·4 + 22·16) + 25·16 = 790;
    with T = 6: d = 26 + (3·6 + 22·36) + 25·24 = 1,436.

Loss
    L_i(y) = (1/N) Σ_p min(1, ‖l_p − l*_p‖² / s_i²) over all N nodes (the paper's ``1/|V| Σ_{p∈V}``;
    min, as the authors' code; the text's max is a typo), s_i the left-shoulder to right-hip
    distance of the ground truth (grid units). L_i(y_i) = 0 and L_i <= 1.

Statistics space (what the solver stores per block)
    m(y) = (ψ(x_i, y), L_i(y)) ∈ R^{d+1}, so p_i = d + 1 and ψ = B_i m(y) with B_i = [I_d 0].
    The score vector is h = (w, 1): ⟨m(y), h⟩ = ⟨w, ψ⟩ + L_i(y) (c_i = 0). The other choice,
    one-hot positions per node (p_i >= 26·G²), would make the solver's per-block statistics
    μ (n × p_i float64) 1,000 × 26 × 128² × 8 B = 3.4 GB at G = 128 (0.85 GB at G = 64), and
    its atoms as many again; with p_i = d + 1 (791 for T = 4, 1,437 for T = 6) μ takes 6.3 MB
    (11.5 MB) at every G.
    The oracle reads h as (w, loss coefficient): h[d] = 0 is plain decoding
    (:mod:`gaplab.core.models.pose.oracle`).

Differences from the paper's model
    The paper (after Chen and Yuille) has a type t_pq ∈ {1..13} per *arc* (both orientations of
    every edge) and a CNN score φ^P_pq(I, l_p, t_pq) of each type, weighted by w_T,pq. Without
    images there is no type evidence, so here a type belongs to each non-root *node* (its
    displacement cluster relative to its parent, as in Yang and Ramanan) and the "pairwise type
    weights" are biases of the (child type, parent type) pairs; the unary and deformation terms
    are as in the paper.

Paper: App. I (LSP model), App. H (box constraints), Eq. (2) (max oracle).
"""
from __future__ import annotations

import numpy as np

from ...datasets.lsp_scoremaps import pose_score_map
from ...kernels import register_model_kind
from ..protocol import StructuredModel, check_labelling
from .arrays import DEFORM_UNIT, PoseArrays, build_pose_arrays
from .oracle import pose_decode, pose_oracle
from .primitives import (pose_axpy, pose_gt_label, pose_label_add, pose_label_dot, pose_label_loss,
                         pose_scores, pose_sqnorm)

__all__ = ["PoseModel"]


class PoseModel(StructuredModel):
    """The tree-structured pose SSVM over a :class:`~gaplab.core.datasets.lsp.PoseData`
    (one dual block per image; see the module docstring for ψ and the loss,
    :mod:`gaplab.core.models.pose.oracle` for the oracle).

    Parameters
    ----------
    data : PoseData
        Training images (poses and generated score maps).
    deform_unit : float, optional
        The deformation unit u as a fraction of G (default :data:`DEFORM_UNIT`); it scales the
        deformation features (dx/u, (dx/u)², ...) and so the conditioning of the dual.
    transform : {"auto", "direct", "envelope"}, optional
        The max oracle's distance transform (see :func:`build_pose_arrays`); every choice
        attains the same maximum (default "auto": the faster one for G).
    """

    kind = "pose"
    oracle_tier = "compiled"

    def __init__(self, data, deform_unit: float = None, transform: str = "auto"):
        from ...datasets.lsp import PoseData

        if not isinstance(data, PoseData):
            raise TypeError(f"data must be a PoseData, got {type(data).__name__}")
        self.data = data
        self.deform_unit = DEFORM_UNIT if deform_unit is None else float(deform_unit)
        self.transform = transform
        self.arrays = build_pose_arrays(data, self.deform_unit, transform)
        self.n = self.arrays.n
        self.d = self.arrays.d
        self.G = self.arrays.G
        self.name = data.name

    # ------------------------------------------------------------------ interface
    def label_len(self, i: int) -> int:
        return 2 * self.arrays.N

    def n_labels(self, i: int) -> int:
        """Entries are position indices (< G²) and types (< T)."""
        return max(self.G * self.G, self.arrays.T)

    def random_labelling(self, i: int, rng) -> np.ndarray:
        """Positions uniform in [0, G²) and types uniform in [0, ntype) per part, int64 (2N,)
        (for :func:`~gaplab.core.models.protocol.check_model`)."""
        M = self.arrays
        y = np.empty(2 * M.N, np.int64)
        y[0::2] = rng.integers(0, M.G * M.G, size=M.N)
        y[1::2] = rng.integers(0, M.ntype, size=M.N)
        return y

    def all_labellings(self, i: int, limit: int):
        """None: (G² · types)^N labellings are never enumerated."""
        return None

    def ground_truth(self, i: int) -> np.ndarray:
        i = self._check_i(i)
        M = self.arrays
        return M.gt[M.lab_off[i]:M.lab_off[i + 1]].copy()

    def _check_i(self, i):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n:
            raise IndexError(f"block i must be an int in [0, {self.n}), got {i!r}")
        return int(i)

    def _check_y(self, i, y):
        y = check_labelling(self, i, y)
        types = y[1::2]
        bad = types >= self.arrays.ntype
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise ValueError(f"model {self.name!r}, block {i}: node {p} has type {types[p]} outside "
                             f"[0, {self.arrays.ntype[p]})")
        GG = self.G * self.G
        if (y[0::2] >= GG).any():
            p = int(np.flatnonzero(y[0::2] >= GG)[0])
            raise ValueError(f"model {self.name!r}, block {i}: node {p} has position {y[2 * p]} "
                             f"outside [0, G²) = [0, {GG})")
        return y

    def _check_w(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w must have shape ({self.d},), got {w.shape}")
        if not np.isfinite(w).all():
            raise ValueError("w must be finite")
        q = self.quadratic_index()
        neg = w[q] < 0
        if neg.any():
            j = int(q[np.flatnonzero(neg)[0]])
            raise ValueError(f"w[{j}] = {float(w[j])!r} is a quadratic deformation weight and must be >= 0 "
                             f"for the distance transform (use bounds(): lb = 0 there)")
        return w

    def quadratic_index(self) -> np.ndarray:
        """Indices of w's quadratic deformation weights (the dx², dy² coefficients), int64."""
        M = self.arrays
        out = []
        for q in range(M.N):
            if M.parent[q] >= 0:
                for t in range(M.ntype[q]):
                    o = M.def_off[q] + 4 * t
                    out += [o + 1, o + 3]
        return np.asarray(out, dtype=np.int64)

    def bounds(self):
        """lb = 0 on the quadratic deformation weights (so the distance transform applies;
        Paper: App. H, App. I), −inf elsewhere; ub = +inf. Float64 arrays of shape (d,)."""
        lb = np.full(self.d, -np.inf)
        lb[self.quadratic_index()] = 0.0
        return lb, np.full(self.d, np.inf)

    def loss(self, i: int, y) -> float:
        """L_i(y) = (1/N) Σ_p min(1, ‖l_p − l*_p‖²/s_i²) (numpy; Paper: App. I)."""
        i = self._check_i(i)
        y = self._check_y(i, y)
        G = self.G
        gt = self.ground_truth(i)[0::2]
        c = y[0::2]
        d2 = (c % G - gt % G) ** 2 + (c // G - gt // G) ** 2
        return float(np.mean(np.minimum(1.0, d2 / self.arrays.scale2[i])))

    def score_map(self, i: int, p: int) -> np.ndarray:
        """Node p's generated part-score map φ_p of image i, float64 (G, G) (row = y)."""
        i = self._check_i(i)
        if not 0 <= int(p) < self.arrays.N:
            raise IndexError(f"part p must lie in [0, {self.arrays.N}), got {p!r}")
        out = np.empty(self.G * self.G)
        pose_score_map(self.arrays, i, int(p), out)
        return out.reshape(self.G, self.G)

    def joint_feature(self, i: int, y) -> np.ndarray:
        """Dense ψ(x_i, y), float64 of shape (d,) (numpy, from the whole score maps; for tests
        and display)."""
        i = self._check_i(i)
        y = self._check_y(i, y)
        M = self.arrays
        G, T = self.G, M.T
        psi = np.zeros(self.d)
        A = M.anchors.reshape(M.N, T, 2)
        for p in range(M.N):
            c = int(y[2 * p])
            psi[p] = self.score_map(i, p).ravel()[c]
            par = int(M.parent[p])
            if par < 0:
                continue
            t, cp = int(y[2 * p + 1]), int(y[2 * par])
            psi[M.pair_off[p] + t * M.ntype[par] + y[2 * par + 1]] = 1.0
            dx = ((c % G - cp % G) - A[p, t, 0]) / M.unit
            dy = ((c // G - cp // G) - A[p, t, 1]) / M.unit
            psi[M.def_off[p] + 4 * t: M.def_off[p] + 4 * t + 4] = [-dx, -dx * dx, -dy, -dy * dy]
        return psi

    def scratch(self):
        """Fresh oracle scratch arrays (float64 (scr_f,), int64 (scr_i,))."""
        return np.empty(self.arrays.scr_f), np.empty(self.arrays.scr_i, dtype=np.int64)

    def _subtract_loss(self, i, h):
        """Remove the loss term from a score vector of block i (plain decoding: h[d] = 0)."""
        h[self.d] = 0.0

    def _oracle(self, i, w, loss_augmented):
        i = self._check_i(i)
        w = self._check_w(w)
        M = self.arrays
        h = np.empty(self.d + 1)
        pose_scores(M, i, w, h)
        if not loss_augmented:
            h[self.d] = 0.0
        y = np.empty(2 * M.N, dtype=np.int64)
        sf, si = self.scratch()
        val = pose_oracle(M, i, h, y, sf, si)
        return y, float(val)

    def max_oracle(self, i: int, w) -> np.ndarray:
        """Loss-augmented decoding argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ of image i (Paper: Eq. (2)),
        int64 (2N,). w's quadratic deformation weights must be >= 0 (ValueError)."""
        return self._oracle(i, w, True)[0]

    def decode(self, i: int, w) -> np.ndarray:
        """Plain decoding argmax_y ⟨w, ψ(x_i, y)⟩ of training image i, int64 (2N,)."""
        return self._oracle(i, w, False)[0]

    def describe_block(self, i: int, y, part: int | None = None) -> dict:
        """What the app draws: the score map of one part (default node 6, LSP's right wrist, or
        node 0 on trees of at most 6 nodes) and
        the skeleton of y.

        Returns a dict with ``kind`` = ``"pose"``, ``text``, ``G``, ``part`` (index),
        ``part_name``, ``score_map`` (float64 (G, G)), ``skeleton`` (int64 (N, 2) cells (x, y)),
        ``types`` (int64 (N,)), ``edges`` (int64 (N − 1, 2) child-parent pairs), ``loss``,
        ``label_text`` (2N strings, one per labelling entry: "node (x,y)", "type t"; the app's
        anatomy lists them) and the app's picture (:mod:`gaplab.core.models.display`): a panel
        with the score map (grey, bright = high) and the skeleton (points at the cells' centres,
        one segment per tree edge, the part ringed), a ``picker`` of the part and a ``legend``.
        """
        from gaplab.core.models.display import image_panel, picker
        i = self._check_i(i)
        y = self._check_y(i, y)
        M = self.arrays
        if part is None:
            part = 6 if M.N > 6 else 0
        if not 0 <= int(part) < M.N:
            raise IndexError(f"part must lie in [0, {M.N}), got {part!r}")
        c = y[0::2]
        sk = np.stack([c % self.G, c // self.G], 1)
        names = self.data.node_names or tuple(str(p) for p in range(M.N))
        edges = np.array([(q, M.parent[q]) for q in range(M.N) if M.parent[q] >= 0], dtype=np.int64)
        loss = self.loss(i, y)
        text = []
        for p in range(M.N):
            text += [f"{names[p]} ({int(sk[p, 0])},{int(sk[p, 1])})", f"type {int(y[2 * p + 1])}"]
        smap = self.score_map(i, part)
        lo, hi = float(smap.min()), float(smap.max())
        grey = (np.zeros(smap.shape, np.uint8) if hi <= lo
                else np.round(255 * (smap - lo) / (hi - lo)).astype(np.uint8))
        wrong_y = bool(np.any(y != self.ground_truth(i)))
        panel = image_panel(grey, "{who}" + (f" (loss {loss:.3f})" if wrong_y else ""), points=sk + 0.5,
                            segments=edges, mark=int(part), pixelated=True)
        return {"kind": "pose", "text": f"image {int(self.data.img_id[i])}, loss {loss:.3f}",
                "label_text": tuple(text),
                "G": self.G, "part": int(part), "part_name": names[int(part)],
                "score_map": smap, "skeleton": sk, "types": y[1::2].copy(),
                "edges": edges, "loss": loss, "panels": [panel],
                "picker": picker("part", "score map of part", names, int(part)),
                "legend": (f"{M.N} parts on a {self.G}×{self.G} grid; ring: the part whose score map is "
                           f"shown ({names[int(part)]}; bright: high score)")}

    # ------------------------------------------------------------------ data-set level
    def predict(self, w, data=None) -> np.ndarray:
        """Plain decoding of every image of ``data`` (default: the training set): int64
        (n, 2N)."""
        from ...datasets.lsp import PoseData

        w = self._check_w(w)
        data = self.data if data is None else data
        if not isinstance(data, PoseData):
            raise TypeError(f"data must be a PoseData, got {type(data).__name__}")
        M = self.arrays if data is self.data else build_pose_arrays(data, self.deform_unit, self.transform)
        if M.d != self.d or M.G != self.G:
            raise ValueError(f"data has d = {M.d}, G = {M.G}; the model expects d = {self.d}, G = {self.G}")
        out = np.empty((M.n, 2 * M.N), dtype=np.int64)
        h = np.empty(self.d + 1)
        sf, si = np.empty(M.scr_f), np.empty(M.scr_i, dtype=np.int64)
        for k in range(M.n):
            pose_decode(M, k, w, h, out[k], sf, si)
        return out

    def error(self, w, data=None) -> float:
        """Mean task loss of the plain decoding over ``data`` (default: training set)."""
        data = self.data if data is None else data
        Y = self.predict(w, data)
        M = self.arrays if data is self.data else build_pose_arrays(data, self.deform_unit, self.transform)
        return float(np.mean([pose_label_loss(M, k, Y[k]) for k in range(M.n)]))


register_model_kind(
    PoseArrays, "pose",
    scores=pose_scores, oracle=pose_oracle, label_dot=pose_label_dot, label_add=pose_label_add,
    label_loss=pose_label_loss, gt_label=pose_gt_label, sqnorm=pose_sqnorm, axpy=pose_axpy,
)
