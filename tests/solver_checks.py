"""Checks shared by the solver tests of several models."""
import numpy as np
import pytest

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


def atoms_w(solver):
    """v = Σ_i Σ_y α_i(y) (ψ(x_i, y_i) − ψ(x_i, y)) / (λn), from the atoms and dense ψ."""
    m = solver.model
    v = np.zeros(m.d)
    for i in range(m.n):
        gt = m.joint_feature(i, m.ground_truth(i))
        for y, a, _ in solver.atoms(i):
            v += a * (gt - m.joint_feature(i, y))
    return v / (solver.lam * m.n)


def check_invariants(solver, lb=None, ub=None):
    S = solver.S
    M = solver._M
    n = solver.n
    for i in range(n):
        atoms = solver.atoms(i)
        alphas = np.array([a for _, a, _ in atoms])
        assert np.all(alphas >= 0)
        assert alphas.sum() == pytest.approx(1.0, abs=1e-12)
        # μ_i = Σ α m(y) and ℓ_i = Σ α L / n
        so, se = M.stat_off[i], M.stat_off[i + 1]
        mu = np.zeros(se - so)
        ell = 0.0
        for y, a, loss in atoms:
            kr.label_add(M, i, y, a, mu)
            assert loss == pytest.approx(solver.model.loss(i, y))
            ell += a * loss / n
        assert np.allclose(mu, S.mu[so:se], atol=1e-10)
        assert S.ell[i] == pytest.approx(ell, rel=1e-9, abs=1e-12)
        # active set ⊆ cache; cache within its size unless active atoms fill it
        if solver.config.cache.enabled:
            assert len(atoms) <= max(solver.config.cache.size, int((alphas > 0).sum()))
    v = atoms_w(solver)
    scale = max(1.0, np.abs(v).max())
    assert np.abs(S.v - v).max() <= 1e-9 * scale
    if lb is not None:
        assert np.allclose(S.w, np.clip(v, lb, ub), atol=1e-9 * scale)
        assert np.all(S.w >= lb) and np.all(S.w <= ub)


def check_log(solver, n_steps):
    log = solver.S.log[:n_steps]
    gam, gmax, imp = log[:, kr.L_GAMMA], log[:, kr.L_GAMMA_MAX], log[:, kr.L_IMPROVE]
    assert np.all(gam >= 0)
    assert np.all(gam <= gmax * (1 + 1e-12))
    assert np.all(np.isfinite(gmax))
    assert np.all(imp >= 0)
