"""The pose model of App. I (LSP): parts on a tree with mixture types, a max oracle by max-sum
with generalized distance transforms.

What lives where:

* :mod:`~gaplab.core.models.pose.model`: :class:`PoseModel` (ψ, the loss, the statistics
  space, the differences from the paper's model) and the registration of the pose kind;
* :mod:`~gaplab.core.models.pose.arrays`: :class:`PoseArrays`, the flat arrays the kernels
  read, and :func:`build_pose_arrays`;
* :mod:`~gaplab.core.models.pose.primitives`: the compiled statistics-space primitives
  (scores, ⟨m(y), h⟩, updates, loss);
* :mod:`~gaplab.core.models.pose.oracle`: the compiled max oracle (max-sum on the tree,
  back-tracking without back-pointers) and plain decoding;
* :mod:`~gaplab.core.models.pose.transforms`: the generalized distance transforms (upper
  envelope and direct).

The generated part-score maps (the model's input x) live with the LSP data set, in
:mod:`gaplab.core.datasets.lsp_scoremaps`.

Paper: App. I (LSP model), App. H (box constraints), Eq. (2) (max oracle).
"""
from __future__ import annotations

from ...datasets.lsp_scoremaps import pose_score_map, pose_unary_value
from .arrays import DEFORM_UNIT, PoseArrays, build_pose_arrays
from .model import PoseModel
from .oracle import pose_decode, pose_oracle
from .primitives import (pose_axpy, pose_gt_label, pose_label_add, pose_label_dot, pose_label_loss,
                         pose_scores, pose_sqnorm)
from .transforms import DIRECT_MAX_G, distance_transform_1d, distance_transform_2d

__all__ = [
    "PoseArrays", "PoseModel", "build_pose_arrays", "pose_scores", "pose_oracle", "pose_decode",
    "pose_label_dot", "pose_label_add", "pose_label_loss", "pose_gt_label", "pose_sqnorm",
    "pose_axpy", "pose_score_map", "pose_unary_value", "distance_transform_1d",
    "distance_transform_2d", "DEFORM_UNIT", "DIRECT_MAX_G",
]
