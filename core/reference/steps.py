"""The step functions of the reference solver: the state, corners and gaps, the max oracle and
the cache rule, the FW / away / pairwise step candidates, the update of a block and of its
active set, the exact gap pass and block sampling. The drivers in
:mod:`gaplab.core.reference.algorithms` put them together, one per algorithm of the paper.

Storage is the classic BCFW one (Paper: Alg. 1): per block a dense ``w_i`` in R^d and a scalar
``ℓ_i``, with ``w = Σ_i w_i`` and ``ℓ = Σ_i ℓ_i``; when a step kind or the cache needs them, per
block the atoms ``{labelling: α_i(labelling)}`` (the active set S_i = {y : α_i(y) > 0} plus the
cached labellings with α = 0). A labelling is kept as a tuple of ints (a dict key).

With a box lb <= w <= ub (Paper: App. H, Alg. 8/9) the ``w_i`` are the untruncated ``v_i`` of
Alg. 9 and ``v = Σ_i v_i``; the primal point is ``w = clip(v, lb, ub)``.

Notation (Paper: Sec. 2; φ is the feature map, ψ_i the feature difference). For block i and a
labelling y,

    w_y = ψ_i(y) / (λn),  ℓ_y = L_i(y) / n,  ψ_i(y) = φ(x_i, y_i) − φ(x_i, y)     (the "corner" of y)
    H_i(y; w) / n = ℓ_y − λ⟨w_y, w⟩ = −∇_(i,y) f(α)                                 (Eq. (2))
    block gap towards y:  λ⟨w_i − w_y, w⟩ − ℓ_i + ℓ_y                                (Alg. 1 line 6)

The FW corner maximizes H_i over all labellings (the max oracle), the away corner minimizes it
over the active set, the cache corner maximizes it over the cached labellings.

Only the :class:`~gaplab.core.models.protocol.StructuredModel` interface is used: ``n``, ``d``,
``ground_truth``, ``loss``, ``joint_feature``, ``max_oracle`` and ``bounds``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..models.protocol import check_labelling

__all__ = [
    "RefState", "ReferenceStep", "GapPass", "Candidate", "MaxOracle", "MAX_ORACLE",
    "init_state", "truncate", "corner", "scaled_H", "block_gap", "line_search",
    "max_oracle_corner", "cache_corner", "away_corner", "record_oracle_call", "cache_hit_rule",
    "fw_corner", "fw_candidate", "away_candidate", "pairwise_candidate", "choose_step", "apply_step",
    "purge_small_atoms", "trim_cache", "finish_step",
    "exact_gap", "primal_objective", "dual_objective",
    "gap_sampling_probabilities", "sample_block",
]



# ============================================================================ state

@dataclass
class RefState:
    """The dual point of the reference solver and what the step rules remember.

    Attributes
    ----------
    model : StructuredModel
    lam : float
        Regularization λ > 0 (Paper: Eq. (1)).
    w_i : ndarray of float64, shape (n, d)
        Per-block primal parts w_i = Σ_y α_i(y) w_y (the untruncated v_i of Alg. 9 with a box).
    ell_i : ndarray of float64, shape (n,)
        Per-block losses ℓ_i = Σ_y α_i(y) ℓ_y.
    v : ndarray of float64, shape (d,)
        Σ_i w_i = Aα (Paper: Sec. 2, w(α) = Aα).
    ell : float
        Σ_i ℓ_i = bᵀα.
    lb, ub : ndarray of float64, shape (d,), or None
        Box constraints (Paper: App. H); None without a box.
    atoms : list of dict or None
        ``atoms[i]`` maps a labelling (tuple of int) to α_i(labelling) >= 0: the active set
        (α > 0) and the cached labellings (α = 0). None for plain BCFW (Alg. 1 needs no α).
    last_used : list of dict or None
        ``last_used[i][y]``: the iteration at which y was last the FW corner (cache eviction).
    gap_estimates : ndarray of float64, shape (n,)
        g_i^(k_i), the block gap found the last time gap i was computed: the last oracle call on
        block i or the last exact gap pass (+inf: never).
    gap_iteration : ndarray of int64, shape (n,)
        k_i, the iteration of that computation (-1: never).
    global_gap : float
        g^(k_0), the duality gap of the last exact gap pass (+inf before any; Paper: Alg. 5).
    k : int
        Block steps done.
    cache, cache_factor, cache_nu, cache_size, drop_tol
        Cache on/off, F, ν, the maximum number of labellings per block, and the α below which
        an atom is purged (the fast solver's ``drop_tol``).
    """

    model: object
    lam: float
    w_i: np.ndarray
    ell_i: np.ndarray
    v: np.ndarray
    ell: float
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None
    atoms: list | None = None
    last_used: list | None = None
    gap_estimates: np.ndarray = None
    gap_iteration: np.ndarray = None
    global_gap: float = math.inf
    k: int = 0
    cache: bool = False
    cache_factor: float = 0.25
    cache_nu: float = 0.01
    cache_size: int = 100
    drop_tol: float = 1e-12

    @property
    def n(self) -> int:
        return self.w_i.shape[0]

    @property
    def w(self) -> np.ndarray:
        """The primal point w = clip(v, lb, ub) (w = v without a box), float64 (d,)."""
        return truncate(self.v, self.lb, self.ub)


@dataclass
class ReferenceStep:
    """What one block step did: the same fields as :class:`gaplab.core.StepRecord`.

    kind is "fw", "away" or "pairwise"; gamma in [0, gamma_max]; direction_gap is ⟨−∇_i f, d⟩
    of the chosen direction; improvement is the decrease of f; block_gap_estimate is g_i^(k_i)
    after the step (stale on a cache hit).
    """

    block: int
    kind: str
    gamma: float
    gamma_max: float
    direction_gap: float
    improvement: float
    fw_corner: np.ndarray
    away_corner: np.ndarray | None
    cache_hit: bool
    drop: bool
    block_gap_estimate: float


@dataclass
class GapPass:
    """An exact gap pass (n oracle calls): the duality gap g = Σ_i g_i (Paper: Eq. (5)-(7)),
    the primal and dual objectives (g = primal − dual), the block gaps (n,) and the FW corners."""

    gap: float
    primal: float
    dual: float
    block_gaps: np.ndarray
    corners: list = field(default_factory=list)


def init_state(model, lam: float, *, lb=None, ub=None, atoms: bool = False, cache: bool = False,
               cache_factor: float = 0.25, cache_nu: float = 0.01, cache_size: int = 100,
               drop_tol: float = 1e-12) -> RefState:
    """The starting point α_i = e_{y_i}: all mass on the ground truth, so w_i = 0, ℓ_i = 0.

    Paper: Alg. 1 line 1, Alg. 3 lines 1-3 (S_i = {y_i}), Alg. 5 lines 1-3 (C_i = {y_i},
    g = g_i = +inf), Alg. 9 lines 1-2 (w = clip(0)).

    Parameters
    ----------
    model : StructuredModel
    lam : float
        λ > 0.
    lb, ub : array of float64, shape (d,), optional
        Box constraints; when neither is given, ``model.bounds()`` is used (None: no box).
    atoms : bool
        Keep the active sets (needed by pairwise / away / combined steps; forced on by the cache).
    cache : bool
        Use the oracle cache of Alg. 5 with ``cache_factor`` (F), ``cache_nu`` (ν) and
        ``cache_size`` labellings per block.
    drop_tol : float
        Atoms whose α falls to or below this are purged after FW / away steps.

    Returns
    -------
    RefState
    """
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam!r}")
    n, d = int(model.n), int(model.d)
    if lb is None and ub is None and model.bounds() is not None:
        lb, ub = model.bounds()
    if lb is not None or ub is not None:
        lb = np.full(d, -np.inf) if lb is None else np.asarray(lb, dtype=np.float64)
        ub = np.full(d, np.inf) if ub is None else np.asarray(ub, dtype=np.float64)
        if lb.shape != (d,) or ub.shape != (d,):
            raise ValueError(f"lb and ub must have shape ({d},), got {lb.shape} and {ub.shape}")
    atoms = atoms or cache
    state = RefState(model=model, lam=float(lam), w_i=np.zeros((n, d)), ell_i=np.zeros(n),
                     v=np.zeros(d), ell=0.0, lb=lb, ub=ub,
                     gap_estimates=np.full(n, np.inf), gap_iteration=np.full(n, -1, dtype=np.int64),
                     cache=bool(cache), cache_factor=float(cache_factor), cache_nu=float(cache_nu),
                     cache_size=int(cache_size), drop_tol=float(drop_tol))
    if atoms:
        state.atoms = [{_key(model.ground_truth(i)): 1.0} for i in range(n)]
        state.last_used = [{_key(model.ground_truth(i)): -1} for i in range(n)]
    return state


def truncate(v, lb, ub) -> np.ndarray:
    """w = clip(v, lb, ub), the primal point of the box-constrained dual (Paper: App. H,
    Alg. 9 line 12, w = v − (β_u − β_l)); a copy of v without a box."""
    v = np.asarray(v, dtype=np.float64)
    return v.copy() if lb is None else np.clip(v, lb, ub)


def _key(y) -> tuple:
    return tuple(int(t) for t in np.asarray(y).ravel())


# ============================================================================ corners and gaps

def corner(state: RefState, i: int, y) -> tuple[np.ndarray, float]:
    """The corner of labelling y in block i: w_y = ψ_i(y)/(λn) (float64 (d,)) and ℓ_y = L_i(y)/n.

    Paper: Alg. 1 line 5 (w_s, ℓ_s for the FW corner)."""
    m, n = state.model, state.n
    y = np.asarray(y, dtype=np.int64)
    psi = m.joint_feature(i, m.ground_truth(i)) - m.joint_feature(i, y)
    return psi / (state.lam * n), m.loss(i, y) / n


def scaled_H(state: RefState, i: int, y) -> float:
    """H_i(y; w)/n = ℓ_y − λ⟨w_y, w⟩, minus the gradient entry (i, y) of f (Paper: Eq. (2), Sec. 2)."""
    w_y, ell_y = corner(state, i, y)
    return ell_y - state.lam * float(w_y @ state.w)


def block_gap(state: RefState, i: int, y) -> float:
    """The gap towards labelling y: λ⟨w_i − w_y, w⟩ − ℓ_i + ℓ_y = ⟨−∇_i f, e_y − α_i⟩. For the
    FW corner this is the block gap g_i (Paper: Alg. 1 line 6, Eq. (6)); for a cache corner the
    cache corner's gap g_i^c (Alg. 5 line 8; written g_i^c to keep ĝ_i for the stored estimate
    g_i^(k_i))."""
    w_y, ell_y = corner(state, i, y)
    return state.lam * float((state.w_i[i] - w_y) @ state.w) - state.ell_i[i] + ell_y


def line_search(g: float, direction, lam: float, gamma_max: float) -> tuple[float, float]:
    """Exact line search of the quadratic dual along a direction of w.

    γ = g / (λ‖d‖²) clipped to [0, γ_max]; γ = 0 when g <= 0 and γ = γ_max when d = 0.
    Paper: Alg. 1 line 7, Alg. 3 line 11, Alg. 4 line 13, Alg. 4 line 19, Alg. 5 line 18,
    Alg. 9 line 7.

    Parameters
    ----------
    g : float
        ⟨−∇_i f, direction in α⟩, the gap of the direction.
    direction : ndarray of float64, shape (d,)
        The change of w_i for γ = 1 (e.g. w_s − w_i for a FW step).
    lam : float
    gamma_max : float

    Returns
    -------
    gamma : float
    improvement : float
        Decrease of f: γ g − γ² λ‖d‖²/2 (>= 0). With a box (App. H, Alg. 9 line 7) g and d are
        taken on the untruncated v, so γ is exact for the dual f(·, β) with the box multipliers
        β held fixed and this is the decrease at fixed β: re-truncating w = clip(v) afterwards
        (the exact update of β) lowers f further, so it is a lower bound on the true decrease.
    """
    if g <= 0.0:
        return 0.0, 0.0
    q = lam * float(direction @ direction)
    gamma = gamma_max if q <= 0.0 else min(g / q, gamma_max)
    return gamma, gamma * g - 0.5 * gamma * gamma * q


# ============================================================================ finding corners

def max_oracle_corner(state: RefState, i: int) -> np.ndarray:
    """The max oracle's answer y* = argmax_y H_i(y; w), int64 (L_i,) (Paper: Eq. (2), Alg. 1 line 4)."""
    return check_labelling(state.model, i, state.model.max_oracle(i, state.w), "max oracle answer")


def cache_corner(state: RefState, i: int) -> np.ndarray:
    """The cache corner y^c = argmax over the cached labellings C_i of H_i(y; w), int64 (L_i,)
    (Paper: Alg. 5 line 6)."""
    return np.array(max(state.atoms[i], key=lambda y: scaled_H(state, i, y)), dtype=np.int64)


def away_corner(state: RefState, i: int) -> np.ndarray:
    """The away corner y^a = argmin over the active set S_i = {y : α_i(y) > 0} of H_i(y; w)
    (Paper: Alg. 3 line 8, Alg. 4 line 8). Returns y^a, int64 (L_i,)."""
    active = [y for y, a in state.atoms[i].items() if a > 0.0]
    return np.array(min(active, key=lambda y: scaled_H(state, i, y)), dtype=np.int64)


class MaxOracle:
    """The three searches a block step makes (Paper: Eq. (2); the max oracle, Alg. 1 line 4; the
    away corner, Alg. 3 line 8; the cache corner, Alg. 5 line 6): ``argmax`` over all labellings (the model's max oracle), ``argmax_cache``
    over the cached labellings C_i and ``argmin_active`` over the active set S_i, each of
    H_i(y; w), each returning a labelling, int64 (L_i,). The drivers take one as ``oracle``
    (default :data:`MAX_ORACLE`); a subclass may return another labelling among maximizers that
    tie exactly (the tests follow the fast solver through such ties, which round-off decides)."""

    def argmax(self, state: RefState, i: int):
        return max_oracle_corner(state, i)

    def argmax_cache(self, state: RefState, i: int):
        return cache_corner(state, i)

    def argmin_active(self, state: RefState, i: int):
        return away_corner(state, i)


#: The plain max oracle: the default ``oracle`` of every driver.
MAX_ORACLE = MaxOracle()


def record_oracle_call(state: RefState, i: int, y) -> None:
    """After a max-oracle call on block i answered y: remember the block gap g_i^(k_i) it gives
    and k_i = k (Paper: Alg. 2 lines 6, 8; Alg. 5 lines 14-15), and add y to the cache / active
    set store with α = 0 (Alg. 5 line 16, Alg. 3 line 16)."""
    state.gap_estimates[i] = block_gap(state, i, y)
    state.gap_iteration[i] = state.k
    if state.atoms is not None:
        state.atoms[i].setdefault(_key(y), 0.0)
        state.last_used[i][_key(y)] = state.k


def cache_hit_rule(cache_gap: float, block_gap_estimate: float, global_gap: float,
                   F: float, nu: float, n: int) -> bool:
    """Cache hit criterion: the cache corner's gap g_i^c >= max(F·g_i^(k_i), ν/n·g^(k_0)) (Paper:
    Alg. 5 line 9)."""
    return cache_gap >= max(F * block_gap_estimate, nu / n * global_gap)


def fw_corner(state: RefState, i: int, oracle: MaxOracle = MAX_ORACLE) -> tuple[np.ndarray, bool]:
    """The FW corner of block i: the cache corner on a cache hit, else the max oracle's answer
    (Paper: Alg. 5 lines 6-17; without a cache Alg. 1 line 4).

    A hit needs a block whose gap was computed before (k_i known) and a first exact gap pass:
    before that the threshold max(F·g_i^(k_i), ν/n·g^(k_0)) is +inf (Alg. 5 lines 2-3).

    Returns
    -------
    y : ndarray of int64, shape (L_i,)
    cache_hit : bool
    """
    if state.cache and state.gap_iteration[i] >= 0 and state.global_gap < math.inf:
        y_c = oracle.argmax_cache(state, i)                            # Alg. 5 line 6
        g_c = block_gap(state, i, y_c)                                 # lines 7-8: g_i^c
        if cache_hit_rule(g_c, state.gap_estimates[i], state.global_gap, state.cache_factor,
                          state.cache_nu, state.n):                    # line 9: a hit
            state.last_used[i][_key(y_c)] = state.k
            return y_c, True                                           # line 10
    y_s = oracle.argmax(state, i)                                      # line 12: a miss
    record_oracle_call(state, i, y_s)                                  # lines 14-16
    return y_s, False


# ============================================================================ the step candidates

@dataclass
class Candidate:
    """A candidate block step: its kind ("fw", "away", "pairwise"), step size γ in [0, γ_max],
    the gap ⟨−∇_i f, d⟩ of its direction, the decrease of f, and the change of w_i (float64 (d,))
    and of ℓ_i for γ = 1."""

    kind: str
    gamma: float
    gamma_max: float
    gap: float
    improvement: float
    direction: np.ndarray      # change of w_i for γ = 1
    ell_direction: float       # change of ℓ_i for γ = 1


def fw_candidate(state: RefState, i: int, y_s) -> Candidate:
    """The FW step towards the corner y_s: direction w_s − w_i, gap g_i, γ in [0, 1]
    (Paper: Alg. 1 lines 5-7; Alg. 5 line 18 with the cache gap on a hit; Alg. 9 line 7)."""
    w_s, ell_s = corner(state, i, y_s)
    g = block_gap(state, i, y_s)
    direction = w_s - state.w_i[i]
    gamma, imp = line_search(g, direction, state.lam, 1.0)
    return Candidate("fw", gamma, 1.0, g, imp, direction, ell_s - state.ell_i[i])


def away_candidate(state: RefState, i: int, y_a) -> Candidate:
    """The away step from the corner y_a: direction w_i − w_a, gap
    g_i^A = λ⟨w_a − w_i, w⟩ + ℓ_i − ℓ_a, γ in [0, α_a/(1 − α_a)] (Paper: Alg. 4 lines 11, 19).
    With (numerically) all the mass on y_a the direction is zero and γ = 0."""
    w_a, ell_a = corner(state, i, y_a)
    alpha_a = state.atoms[i][_key(y_a)]
    g = state.lam * float((w_a - state.w_i[i]) @ state.w) + state.ell_i[i] - ell_a
    direction = state.w_i[i] - w_a
    single = alpha_a >= 1.0 - 1e-12
    gamma_max = 0.0 if single else alpha_a / (1.0 - alpha_a)
    gamma, imp = (0.0, 0.0) if single or not direction.any() else line_search(g, direction, state.lam, gamma_max)
    return Candidate("away", gamma, gamma_max, g, imp, direction, state.ell_i[i] - ell_a)


def pairwise_candidate(state: RefState, i: int, y_s, y_a) -> Candidate:
    """The pairwise step moving mass from the away corner y_a to the FW corner y_s: direction
    w_s − w_a, gap λ⟨w_a − w_s, w⟩ + ℓ_s − ℓ_a, γ in [0, α_a] (Paper: Alg. 3 lines 10-11)."""
    w_s, ell_s = corner(state, i, y_s)
    w_a, ell_a = corner(state, i, y_a)
    g = state.lam * float((w_a - w_s) @ state.w) + ell_s - ell_a
    direction = w_s - w_a
    gamma_max = state.atoms[i][_key(y_a)]
    gamma, imp = line_search(g, direction, state.lam, gamma_max)
    return Candidate("pairwise", gamma, gamma_max, g, imp, direction, ell_s - ell_a)


def choose_step(kind: str, fw, away=None, pairwise=None) -> Candidate:
    """Which candidate a step kind takes: "fw" the FW step; "pairwise" the pairwise step;
    "away" the away step when its gap is larger (g_i^A > g_i^FW, else FW); "combined" the
    candidate with the largest improvement of f (FW on ties).

    Paper: Alg. 4 line 12 takes the FW step only when g_i^FW > g_i^A, so on a tie it takes the
    away step. Here a tie takes the FW step, a deliberate deviation: when the away atom carries
    all of the block's mass (α_a = 1, e.g. at α⁰) the away direction α_i − e_a is 0, its gap is
    0 and γ_max = α_a/(1 − α_a) is a division by zero, while the FW step is always well defined;
    at a tie both directions promise the same first-order decrease. "combined" is not one of the
    paper's algorithms: App. G mentions in one sentence trying a choice between a FW, a pairwise
    and an away step by the largest progress (no significant speed-up found); the authors' code
    has it as a step type."""
    if kind == "fw":
        return fw
    if kind == "pairwise":
        return pairwise
    if kind == "away":
        return away if away.gap > fw.gap else fw
    best = fw
    for cand in (away, pairwise):
        if cand.improvement > best.improvement:
            best = cand
    return best


def apply_step(state: RefState, i: int, step: Candidate, y_s, y_a=None) -> bool:
    """Move block i: w_i += γ d, ℓ_i += γ d_ℓ, then w and ℓ by the change of block i
    (Paper: Alg. 1 lines 8-11), and the atoms α_i (Alg. 3 lines 16-20, Alg. 4 lines 14-22).
    Returns True for a drop step (the away corner's mass reached 0)."""
    gamma = step.gamma
    if gamma > 0.0:
        new_w_i = state.w_i[i] + gamma * step.direction
        new_ell_i = state.ell_i[i] + gamma * step.ell_direction
        state.v += new_w_i - state.w_i[i]
        state.ell += new_ell_i - state.ell_i[i]
        state.w_i[i], state.ell_i[i] = new_w_i, new_ell_i
    if state.atoms is None or gamma <= 0.0:
        return False
    alpha = state.atoms[i]
    s = _key(y_s)
    if step.kind == "fw":            # α_i ← (1 − γ) α_i + γ e_s
        for y in alpha:
            alpha[y] *= 1.0 - gamma
        alpha[s] += gamma
        return False
    a = _key(y_a)
    if step.kind == "away":          # α_i ← (1 + γ) α_i − γ e_a
        for y in alpha:
            alpha[y] *= 1.0 + gamma
        drop = gamma >= step.gamma_max
        alpha[a] = 0.0 if drop else alpha[a] - gamma
        return drop
    if s == a:                       # pairwise: γ e_s − γ e_a
        return False
    drop = gamma >= step.gamma_max
    alpha[s] += alpha[a] if drop else gamma
    alpha[a] = 0.0 if drop else alpha[a] - gamma
    return drop


# ============================================================================ active-set upkeep

def purge_small_atoms(state: RefState, i: int) -> None:
    """Set α to 0 for atoms with 0 < α <= drop_tol, renormalize α_i to the simplex and recompute
    w_i = Σ α w_y, ℓ_i = Σ α ℓ_y from the atoms (round-off hygiene; not in the paper's pseudocode)."""
    alpha = state.atoms[i]
    small = [y for y, a in alpha.items() if 0.0 < a <= state.drop_tol]
    if not small:
        return
    for y in small:
        alpha[y] = 0.0
    total = sum(alpha.values())
    new_w_i, new_ell_i = np.zeros_like(state.v), 0.0
    for y in alpha:
        alpha[y] /= total
        if alpha[y] > 0.0:
            w_y, ell_y = corner(state, i, y)
            new_w_i += alpha[y] * w_y
            new_ell_i += alpha[y] * ell_y
    state.v += new_w_i - state.w_i[i]
    state.ell += new_ell_i - state.ell_i[i]
    state.w_i[i], state.ell_i[i] = new_w_i, new_ell_i


def trim_cache(state: RefState, i: int) -> None:
    """Forget inactive labellings (α = 0), least recently used first, while block i holds more
    than ``cache_size`` labellings (without a cache: every inactive one). Active atoms stay, so the
    active set is always inside the cache (Paper: Sec. 3.3)."""
    alpha, used = state.atoms[i], state.last_used[i]
    limit = state.cache_size if state.cache else 0
    inactive = sorted((y for y, a in alpha.items() if a == 0.0), key=lambda y: used[y])
    while len(alpha) > limit and inactive:
        y = inactive.pop(0)
        del alpha[y], used[y]


def finish_step(state: RefState, i: int, step: Candidate, y_s, y_a=None, *, hit: bool = False,
                drop: bool = False) -> ReferenceStep:
    """End a block step: purge the atoms whose α fell to round-off after a FW or away step, trim
    the cache, count the step (k += 1) and return what it did (y_s, y_a: its FW and away
    corners; hit: the FW corner came from the cache; drop: the away corner left S_i)."""
    if state.atoms is not None:
        if step.kind != "pairwise" and step.gamma > 0.0 and state.drop_tol > 0.0:
            purge_small_atoms(state, i)
        trim_cache(state, i)
    state.k += 1
    return ReferenceStep(block=i, kind=step.kind, gamma=step.gamma, gamma_max=step.gamma_max,
                    direction_gap=step.gap, improvement=max(step.improvement, 0.0), fw_corner=y_s,
                    away_corner=y_a, cache_hit=hit, drop=drop,
                    block_gap_estimate=float(state.gap_estimates[i]))


# ============================================================================ gaps and objectives

def dual_objective(state: RefState) -> float:
    """The dual objective (maximization form) D(α) = ℓ − λ/2‖w‖², with a box
    − λ(β_uᵀub − β_lᵀlb) at the optimal β_u = [v − ub]_+, β_l = [lb − v]_+ (Paper: Eq. (3)
    negated; App. H, Eq. (52) negated, with the β of Eq. (55)-(56))."""
    w = state.w
    D = state.ell - 0.5 * state.lam * float(w @ w)
    if state.lb is not None:
        beta_u = np.maximum(state.v - state.ub, 0.0)
        beta_l = np.maximum(state.lb - state.v, 0.0)
        D -= state.lam * (float(beta_u[beta_u > 0] @ state.ub[beta_u > 0])
                          - float(beta_l[beta_l > 0] @ state.lb[beta_l > 0]))
    return float(D)


def primal_objective(state: RefState) -> float:
    """The primal objective λ/2‖w‖² + (1/n) Σ_i max_y H_i(y; w) at w, n oracle calls (Paper:
    Eq. (1), the primal)."""
    return exact_gap(state, count=False).primal


def exact_gap(state: RefState, count: bool = True) -> GapPass:
    """The exact duality gap: one max-oracle call per block at w, g = Σ_i g_i = primal − dual
    (Paper: Eq. (5)-(7); with a box, App. H). With ``count`` it is the "update global gap" pass:
    every gap estimate becomes exact (k_i = k) and g^(k_0) = g (Paper: Alg. 2 lines 14-20,
    Alg. 5 "update global gap").

    Returns
    -------
    GapPass
        gap, primal, dual, block_gaps (n,), corners (the n FW corners, for the batch step).
    """
    n, w = state.n, state.w
    block_gaps, corners, hinge = np.zeros(n), [], 0.0
    for i in range(n):
        y = check_labelling(state.model, i, state.model.max_oracle(i, w), "max oracle answer")
        corners.append(y)
        block_gaps[i] = block_gap(state, i, y)
        hinge += scaled_H(state, i, y)      # (1/n) max_y H_i(y; w)
    if count:
        state.gap_estimates[:] = block_gaps
        state.gap_iteration[:] = state.k
        state.global_gap = float(block_gaps.sum())
    primal = 0.5 * state.lam * float(w @ w) + hinge
    return GapPass(gap=float(block_gaps.sum()), primal=float(primal), dual=dual_objective(state),
                   block_gaps=block_gaps, corners=corners)


# ============================================================================ sampling

def gap_sampling_probabilities(state: RefState, power: float = 1.0) -> np.ndarray:
    """p_i ∝ (g_i^(k_i))^p over the blocks (Paper: Alg. 2 line 4, p = 1); while some blocks were
    never visited (g_i = +inf), uniform over those. Negative (round-off) estimates count as 0.
    Returns float64 (n,)."""
    g = state.gap_estimates
    if np.isinf(g).any():
        p = np.isinf(g).astype(float)
    else:
        p = np.maximum(g, 0.0) ** power
    return p / p.sum() if p.sum() > 0 else np.full(state.n, 1.0 / state.n)


def sample_block(state: RefState, rng: np.random.Generator, sampling: str = "gap") -> int:
    """Pick the next block: uniformly (Alg. 1 line 3) or by gap sampling (Alg. 2 line 4)."""
    if sampling == "uniform":
        return int(rng.integers(state.n))
    if sampling == "gap":
        return int(rng.choice(state.n, p=gap_sampling_probabilities(state)))
    raise ValueError(f"sampling must be 'uniform' or 'gap', got {sampling!r}")
