"""When an exact duality gap certifies nothing: a max oracle that is not exact.

The exact duality gap g = Σ_i g_i, with block gaps g_i = (1/n)(H_i(y*_i; w) − Σ_y α_i(y) H_i(y; w))
(Paper: Eq. (5)-(7)), is >= 0 for every dual point α when y*_i is the argmax of the loss-augmented
score H_i(y; w) = L_i(y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩: it is then a certificate of
ε-optimality. A gap below zero proves that some labelling in the support of α_i (the ground
truth, or an earlier answer of the oracle) scores more than the oracle's y*_i at the current w:
the oracle is not a max oracle, and a small abs(g) certifies nothing. Such a run ends with status
``oracle_not_exact`` (:class:`~gaplab.core.config.Status`), never ``converged``, and
:func:`diagnose` names the block with the most negative block gap and a labelling that beats
the oracle's there.

Tolerance. The gap is a sum of n block gaps, each a difference of loss-augmented scores that
are dot products of p_i statistics with the scores h_i(w); in float64 each carries a round-off
of a few ulps (2.2e-16) of the magnitudes summed, so the computed gap of an exact oracle can be
below 0 by about eps·√(p·n) times the score scale: under 1e-11 of it for p up to 1e5 statistics
per block and n up to 1e4 blocks (runs of the built-in models that converge to a gap of 0 end
near ±1e-17). :data:`NEGATIVE_GAP_RTOL` = 1e-8 of max(abs(primal), abs(dual)) is three orders of
magnitude above that when the scores are of the objective's size, still above it for scores up
to a thousand times the objective, and far below the
gaps a wrong oracle leaves (a loss-ignoring oracle on the multi-label toy: about −1e-2 of a
primal of 0.1). Paper: Sec. 2.3 (the duality gap as a stopping criterion).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["NEGATIVE_GAP_RTOL", "negative_gap_tolerance", "is_impossible_gap", "OracleNotExact", "diagnose"]

#: An exact gap below −NEGATIVE_GAP_RTOL·max(abs(primal), abs(dual)) proves the oracle is not exact.
NEGATIVE_GAP_RTOL = 1e-8
#: Labellings of the worst block tried by :func:`diagnose` (enumerated when there are at most
#: this many, else this many sampled).
DIAGNOSE_LABELLINGS = 4096


def negative_gap_tolerance(primal: float, dual: float) -> float:
    """How far below 0 round-off can take an exact gap of this primal and dual (see the module
    docstring): NEGATIVE_GAP_RTOL · max(abs(primal), abs(dual)), at least the smallest normal float."""
    scale = max(abs(primal) if math.isfinite(primal) else 0.0, abs(dual) if math.isfinite(dual) else 0.0)
    return max(NEGATIVE_GAP_RTOL * scale, np.finfo(np.float64).tiny)


def is_impossible_gap(gap: float, primal: float, dual: float) -> bool:
    """True when the exact gap is below −tolerance: the max oracle is not exact."""
    return math.isfinite(gap) and gap < -negative_gap_tolerance(primal, dual)


@dataclass(frozen=True)
class OracleNotExact:
    """Why a run's exact duality gap is not a certificate.

    Attributes
    ----------
    gap, primal, tolerance : float
        The exact duality gap (< −tolerance), the primal objective, the round-off tolerance.
    block : int
        The block with the most negative block gap.
    block_gap : float
        Its exact block gap g_i (< 0).
    oracle_labelling : list
        The max oracle's labelling of that block at the current w (the model's own labels).
    oracle_score : float
        Its score L_i(y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩.
    labelling : list or None
        A labelling that scores more (the highest-scoring one found), None if no single one
        was found among those tried.
    source : str
        Where it was found: "ground truth", "active set" (the solver's atoms: active set and
        cache), "enumerated" (every labelling of the block), "sampled".
    score : float
        Its score (NaN when ``labelling`` is None); else the mean score of the labellings
        block i's dual variables weigh, n·δ_i, which beats the oracle's.
    tried : int
        Labellings scored.
    """

    gap: float
    primal: float
    tolerance: float
    block: int
    block_gap: float
    oracle_labelling: list
    oracle_score: float
    labelling: list | None
    source: str
    score: float
    tried: int

    def message(self) -> str:
        """One line: what is wrong, where, and the labelling that beats the oracle's."""
        head = (f"the max oracle is not exact: exact duality gap {self.gap:.3g} < 0 (tolerance "
                f"{self.tolerance:.1g}; primal {self.primal:.4g}), so it certifies nothing; block {self.block} "
                f"has block gap {self.block_gap:.3g}: ")
        if self.labelling is not None:
            what = (f"the labelling {self.labelling} ({self.source}) scores {self.score:.6g} > {self.oracle_score:.6g} "
                    f"of the oracle's {self.oracle_labelling}")
        else:
            what = (f"no single labelling among {self.tried} tried beats the oracle's {self.oracle_labelling} "
                    f"(score {self.oracle_score:.6g}), but the labellings its dual variables weigh score "
                    f"{self.score:.6g} on average")
        return head + what + " (L + ⟨w, ψ⟩ relative to y_i); check the oracle with check_model"

    def to_dict(self) -> dict:
        return asdict(self)


def _labels(model, i, y) -> list:
    from .models.check import show_labelling
    return show_labelling(model, i, y)


def _candidates(solver, i):
    """(labelling, source) pairs of block i: the ground truth, the solver's atoms (active set and
    cache), every labelling when there are few, else sampled ones."""
    model = solver.model
    out = [(np.asarray(model.ground_truth(i), dtype=np.int64), "ground truth")]
    out += [(np.asarray(y, dtype=np.int64), "active set") for y, _, _ in solver.atoms(i)]
    try:
        K = int(model.n_labels(i))
    except (TypeError, ValueError, NotImplementedError):
        K = 0
    if K >= 1:
        every = model.all_labellings(i, DIAGNOSE_LABELLINGS)
        if every:
            out += [(np.asarray(y, dtype=np.int64), "enumerated") for y in every]
        else:
            rng = np.random.default_rng(0)
            out += [(model.random_labelling(i, rng), "sampled") for _ in range(DIAGNOSE_LABELLINGS)]
    return out


def diagnose(solver, ex) -> OracleNotExact:
    """Name the block with the most negative block gap of the exact gap pass ``ex`` (an
    :class:`~gaplab.core.solver_records.ExactGap` at the solver's current w) and the labelling
    that beats the max oracle's there. Costs one oracle call and the scores of up to
    :data:`DIAGNOSE_LABELLINGS` labellings (n more diagnostic oracle calls when ``ex`` is an
    uncounted pass without block gaps)."""
    from . import kernels as kr
    from .models import max_oracle
    model, w, M = solver.model, solver.S.w, solver.model.arrays
    gaps = np.asarray(ex.block_gaps, dtype=np.float64)
    if solver.fresh_exact_gap is not ex or not np.isfinite(gaps).all():  # block gaps at the current w
        gaps = np.array([solver.block_gap_now(i) for i in range(solver.n)])
    i = int(np.argmin(gaps))
    h = np.zeros(int(M.stat_off[i + 1] - M.stat_off[i]))
    kr.block_scores(M, i, w, h)  # ⟨m(y), h⟩ = L_i(y) + ⟨w, ψ(x_i, y)⟩ for every labelling y

    def score(y):
        return float(kr.label_dot(M, i, np.ascontiguousarray(y, dtype=np.int64), h))
    y_or, _ = max_oracle(model, i, w)
    s_gt = score(model.ground_truth(i))
    s_or = score(y_or) - s_gt
    cands = _candidates(solver, i)
    scores = [score(y) - s_gt for y, _ in cands]
    margin = 1e-12 * (1.0 + abs(s_or))
    # a labelling the run itself has seen (ground truth, active set) first, else the best of all
    seen = [j for j, (_, where) in enumerate(cands) if where in ("ground truth", "active set")
            and scores[j] > s_or + margin]
    j = max(seen or range(len(cands)), key=lambda k: scores[k])
    best, best_s, src, tried = cands[j][0], scores[j], cands[j][1], len(cands)
    beats = best_s > s_or + margin
    mean_alpha = float(ex.block_deltas[i]) * solver.n if np.isfinite(ex.block_deltas[i]) else math.nan
    return OracleNotExact(
        gap=float(ex.gap), primal=float(ex.primal), tolerance=negative_gap_tolerance(ex.primal, ex.dual),
        block=i, block_gap=float(gaps[i]), oracle_labelling=_labels(model, i, y_or), oracle_score=float(s_or),
        labelling=_labels(model, i, best) if beats else None, source=src if beats else "",
        score=float(best_s) if beats else mean_alpha, tried=tried)
