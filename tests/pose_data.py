"""Pose test data shared by the pose tests: where the LSP joints are (``LSP_DIR``, or None),
the ``needs_lsp`` skip mark, and random poses on a small tree for brute-force enumeration."""
import os
from pathlib import Path

import numpy as np
import pytest

from gaplab.core.datasets.lsp import PoseData, ScoreMapSpec


def _lsp_dir():
    here = Path(__file__).resolve()
    cands = []
    if os.environ.get("GAPLAB_DATA"):
        cands += [Path(os.environ["GAPLAB_DATA"]), Path(os.environ["GAPLAB_DATA"]) / "lsp"]
    cands += [here.parents[2] / "shared" / "data" / "lsp", here.parents[3] / "shared" / "data" / "lsp"]
    return next((d for d in cands if (d / "joints.mat").is_file()), None)


LSP_DIR = _lsp_dir()
needs_lsp = pytest.mark.skipif(LSP_DIR is None, reason="LSP joints.mat not found ($GAPLAB_DATA or ../shared/data/lsp)")


def tiny_data(G=3, parent=(-1, 0, 1), T=2, n=2, seed=0, noise=0.3):
    """Random poses on a small tree (for brute-force enumeration)."""
    rng = np.random.default_rng(seed)
    parent = np.asarray(parent, dtype=np.int64)
    N = parent.size
    ntype = np.where(parent < 0, 1, T)
    return PoseData(
        G=G, parent=parent, pos=rng.integers(0, G, size=(n, N, 2)),
        types=rng.integers(0, T, size=(n, N)) * (parent >= 0), anchors=rng.normal(0, 1.0, size=(N, T, 2)),
        n_types=ntype, scale=rng.uniform(1.0, 2.0, size=n), img_id=np.arange(n) + 7,
        occluded=np.zeros((n, N), bool), mirror=np.full(N, -1), seed=seed,
        spec=ScoreMapSpec(noise=noise, sigma=8.0), name="tiny")
