"""Solver state: plain arrays (float64 / int64) handed to the numba kernels.

Everything a run needs to continue lives here, RNG included, so a state can be copied,
snapshotted for the app, or used as a warm start.
"""
from __future__ import annotations

import numpy as np

from . import kernels as kr
from .rng import seed_state

__all__ = ["allocate_state", "config_arrays", "copy_state", "grow_atoms", "state_nbytes"]


def config_arrays(config, has_box: bool, track: bool):
    """The (int64, float64) configuration arrays the kernels read (see kernels.I_* / F_*)."""
    ci = np.zeros(kr.N_CFG_I, dtype=np.int64)
    ci[kr.I_SAMPLING] = int(config.sampling)
    ci[kr.I_STEP] = int(config.step)
    ci[kr.I_CACHE] = int(config.cache.enabled)
    ci[kr.I_CACHE_SIZE] = int(config.cache.size)
    ci[kr.I_TRACK] = int(track)
    ci[kr.I_BOX] = int(has_box)
    cf = np.zeros(kr.N_CFG_F, dtype=np.float64)
    cf[kr.F_LAM] = config.lam
    cf[kr.F_P] = config.gap_power
    cf[kr.F_CACHE_F] = config.cache.factor
    cf[kr.F_CACHE_NU] = config.cache.nu
    cf[kr.F_DROP_TOL] = config.drop_tol
    return ci, cf


def allocate_state(model, config, *, lb=None, ub=None, track: bool, log_size: int = 4096,
                   init_cap: int | None = None, weights=None) -> kr.StateArrays:
    """A fresh state at α_i = e_{y_i} (w = 0, all mass on the ground truth; Paper: Alg. 1 line 1).

    Gap estimates start at +inf with "never computed" iteration -1: gap-based samplers first
    visit every block once in random order (the explicit form of the authors' +inf start).
    """
    M = model.arrays
    n, d = M.n, M.d
    has_box = lb is not None
    w = np.zeros(d)
    if has_box:
        v = np.zeros(d)
        w = np.clip(v, lb, ub)
        lb_a, ub_a = np.ascontiguousarray(lb, dtype=np.float64), np.ascontiguousarray(ub, dtype=np.float64)
    else:
        v = w
        lb_a = ub_a = np.zeros(0)
    mu = np.zeros(int(M.stat_off[-1]))
    lab_total = int(M.lab_off[-1])
    max_lab = int(np.diff(M.lab_off).max())
    max_stat = int(np.diff(M.stat_off).max())
    # μ_i = m(y_i)
    _init_mu(M, mu, max_lab)
    if track:
        cap = init_cap or (min(config.cache.size, 16) + 1 if config.cache.enabled else 4)
    else:
        cap = 1
    size = 1
    while size < n:
        size *= 2
    S = kr.StateArrays(
        w=w, v=v, lb=lb_a, ub=ub_a,
        mu=mu, ell=np.zeros(n),
        gap_est=np.full(n, np.inf), gap_iter=np.full(n, -1, dtype=np.int64), gap_exact=np.full(n, np.nan),
        tree=np.zeros(2 * size), unv=np.arange(n, dtype=np.int64), unv_pos=np.arange(n, dtype=np.int64),
        perm=np.arange(n, dtype=np.int64), rng=seed_state(config.seed),
        counters=np.zeros(kr.N_COUNTERS, dtype=np.int64), scalars=np.zeros(kr.N_SCALARS),
        a_lab=np.zeros(lab_total * cap, dtype=np.int64),
        a_alpha=np.zeros((n, cap)), a_loss=np.zeros((n, cap)),
        a_hash=np.zeros((n, cap), dtype=np.uint64), a_used=np.zeros((n, cap), dtype=np.int64),
        a_count=np.zeros(n, dtype=np.int64),
        h=np.zeros(max_stat), dlt=np.zeros(max_stat), tmp=np.zeros(max_stat),
        ybuf=np.zeros(max_lab, dtype=np.int64), yaway=np.zeros(max_lab, dtype=np.int64),
        vit_f=np.zeros(max_lab * M.K), vit_i=np.zeros(max_lab * M.K, dtype=np.int64),
        zbuf=np.zeros(d), log=np.zeros((log_size, kr.N_LOG)),
        last_fw=np.full(max_lab, -1, dtype=np.int64), last_away=np.full(max_lab, -1, dtype=np.int64),
        batch_lab=np.zeros(lab_total, dtype=np.int64),
        weights=np.zeros(0) if weights is None else np.ascontiguousarray(weights, dtype=np.float64),
        mark=np.zeros(max_stat, dtype=np.int8),
        step_i=np.zeros(8, dtype=np.int64), step_f=np.zeros(4),
    )
    S.counters[kr.C_UNVISITED] = n
    S.counters[kr.C_LAST_CHECK] = -1
    S.scalars[kr.S_GLOBAL_GAP] = np.inf
    S.scalars[kr.S_LAST_PRIMAL] = np.nan
    if track:
        with kr.primitive_errors(M):
            _init_atoms(M, S)
    if weights is not None:
        kr.tree_rebuild(S, np.zeros(kr.N_CFG_F), n)
    return S


def _init_mu(M, mu, max_lab):
    y = np.zeros(max_lab, dtype=np.int64)
    with kr.primitive_errors(M):
        _init_mu_kernel(M, mu, y)


from numba import njit  # noqa: E402


@njit(cache=True)
def _init_mu_kernel(M, mu, y):
    for i in range(M.n):
        kr.gt_label(M, i, y)
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        kr.label_add(M, i, y, 1.0, mu[so:so + p])


@njit(cache=True)
def _init_atoms_kernel(M, S):
    for i in range(M.n):
        L = M.lab_off[i + 1] - M.lab_off[i]
        kr.gt_label(M, i, S.ybuf)
        hsh = kr.label_hash(S.ybuf, L)
        s = kr.atom_insert(M, S, i, S.ybuf, hsh, kr.label_loss(M, i, S.ybuf), -1)
        S.a_alpha[i, s] = 1.0


def _init_atoms(M, S):
    _init_atoms_kernel(M, S)


@njit(cache=True)
def _relayout(lab_off, old_lab, old_cap, new_lab, new_cap, count):
    for i in range(lab_off.shape[0] - 1):
        L = lab_off[i + 1] - lab_off[i]
        for s in range(count[i]):
            ob = lab_off[i] * old_cap + s * L
            nb = lab_off[i] * new_cap + s * L
            for t in range(L):
                new_lab[nb + t] = old_lab[ob + t]


def grow_atoms(M, S: kr.StateArrays, factor: int = 2, cache_size: int = 0) -> kr.StateArrays:
    """A state whose atom pools hold ``factor`` times more slots (same content); while the pools
    are smaller than the cache needs (``cache_size`` + 1 slots: the cache plus the newest FW
    corner), at most that many."""
    n, cap = S.a_alpha.shape
    new_cap = cap * factor
    if cap < cache_size + 1:
        new_cap = min(new_cap, cache_size + 1)
    new_lab = np.zeros(int(M.lab_off[-1]) * new_cap, dtype=np.int64)
    _relayout(M.lab_off, S.a_lab, cap, new_lab, new_cap, S.a_count)

    def widen(a, fill=0):
        out = np.full((n, new_cap), fill, dtype=a.dtype)
        out[:, :cap] = a
        return out

    S2 = S._replace(a_lab=new_lab, a_alpha=widen(S.a_alpha), a_loss=widen(S.a_loss),
                    a_hash=widen(S.a_hash), a_used=widen(S.a_used))
    S2.counters[kr.C_GROW] = 0
    return S2


def copy_state(S: kr.StateArrays) -> kr.StateArrays:
    """Deep copy (w and v stay one array when they were one)."""
    fields = {}
    for name, val in S._asdict().items():
        fields[name] = val.copy()
    if S.v is S.w:
        fields["v"] = fields["w"]
    return kr.StateArrays(**fields)


def state_nbytes(S: kr.StateArrays) -> int:
    seen, tot = set(), 0
    for val in S:
        if id(val) not in seen:
            seen.add(id(val))
            tot += val.nbytes
    return tot
