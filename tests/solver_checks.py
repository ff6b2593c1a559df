"""Checks shared by the solver tests of several models."""
import numpy as np

from gaplab.core import kernels as kr


def gap_pass_outputs_by_chunking(solver, chunkings):
    """Run the exact gap pass kernel over the solver's state once per number of chunks and assert
    that every chunking gives bitwise the same block gaps, hinge terms, deltas and FW corners.
    Returns those outputs (g, hs, d, labels) of the first chunking."""
    M, S = solver._M, solver.S
    outs = []
    for nchunk in chunkings:
        g, hs, d = np.empty(M.n), np.empty(M.n), np.empty(M.n)
        lab = np.empty_like(S.batch_lab)
        kr.gap_pass_blocks(M, S.w, S.mu, nchunk, S.h.shape[0], S.ybuf.shape[0], True, g, hs, d, lab)
        outs.append((g, hs, d, lab))
    for o in outs[1:]:
        for x, y in zip(outs[0], o):
            np.testing.assert_array_equal(x, y)
    return outs[0]
