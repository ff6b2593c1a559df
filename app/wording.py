"""How the app writes its numbers in words: one formatter for counts (thousands separators), the
progress of a dataset load (:func:`load_words`) and one round-off rule for every gap and step
size γ it narrates (no Panel import).

The round-off rule: a quantity that is >= 0 in exact arithmetic and lies within
``ROUND_OFF`` × (its scale) of 0 is narrated as "0 (round-off)". A block gap g_i (Paper:
Eq. (6)) is computed as a difference of block scores H_i(y; w) / n (Eq. (7)), numbers of the size
of the objective per block, so its scale is the problem's objective scale divided by n; the
duality gap g(α) = Σ_i g_i (Eq. (5)) has the objective scale itself; γ is a fraction of the
block's mass (Alg. 1 line 7), scale 1.
"""
from __future__ import annotations

import math

__all__ = ["ROUND_OFF", "count", "objective_scale", "block_gap_tol", "gap_tol", "is_round_off",
           "gap_words", "gamma_words", "load_words"]

#: the one relative threshold: |x| <= ROUND_OFF · scale is round-off (a double has ~16 digits;
#: sums of scores lose a few, so 1e-12 leaves margin and is far below any gap a run aims at)
ROUND_OFF = 1e-12


def count(k) -> str:
    """A count (blocks, iterations, oracle calls) with thousands separators: ``8,936``."""
    return f"{int(k):,}"


def objective_scale(snap) -> float:
    """The problem's objective scale: the largest of |dual objective| now and |primal| at the
    last exact check (gaps are differences of numbers of this size; 0 before the first step)."""
    vals = [getattr(snap, "dual", math.nan), getattr(snap, "exact_primal", math.nan),
            getattr(snap, "exact_dual", math.nan)]
    vals = [abs(float(v)) for v in vals if v is not None and math.isfinite(float(v))]
    return max(vals, default=0.0)


def block_gap_tol(snap) -> float:
    """The round-off threshold of a block gap g_i (Paper: Eq. (6)): ROUND_OFF · scale / n."""
    n = max(int(getattr(snap, "n", 1) or 1), 1)
    return ROUND_OFF * objective_scale(snap) / n


def gap_tol(snap) -> float:
    """The round-off threshold of the duality gap g(α) (Paper: Eq. (5)): ROUND_OFF · scale."""
    return ROUND_OFF * objective_scale(snap)


def is_round_off(v, tol: float) -> bool:
    """True when v is finite, not exactly 0 and |v| <= tol (0 in exact arithmetic)."""
    try:
        fv = float(v)
    except (TypeError, ValueError):
        return False
    return math.isfinite(fv) and fv != 0.0 and abs(fv) <= tol


def gap_words(v, tol: float, spec: str = ".2g") -> str:
    """A gap in plain text: "0 (round-off)" within ``tol`` of 0, "+∞" for an unvisited block's
    estimate, "–" when unknown, else the number."""
    try:
        fv = float(v)
    except (TypeError, ValueError):
        return "–"
    if math.isnan(fv):
        return "–"
    if math.isinf(fv):
        return "+∞" if fv > 0 else "−∞"
    if fv == 0.0:
        return "0"
    if abs(fv) <= tol:
        return "0 (round-off)"
    return format(fv, spec)


def gamma_words(g, spec: str = ".2g") -> str:
    """A step size γ in plain text with the same rule (scale 1)."""
    return gap_words(g, ROUND_OFF, spec)


#: what a loader's stage means to a reader (the horse loader's stages; others are shown as told)
_LOAD_STAGES = {
    "superpixels": "first load: computing superpixels",
    "vocabularies": "first load: fitting the colour and texture vocabularies",
    "word histograms": "first load: computing the features",
}


def load_words(stage: str, done: int, total: int, seconds: float) -> str:
    """The status note of a dataset load in progress: what it does, images done / total when
    the loader counts them, and the seconds so far (never a promise of how long it takes).

    >>> load_words("superpixels", 120, 328, 45.2)
    'first load: computing superpixels, 120 / 328 images · 45 s (cached for later loads)…'
    >>> load_words("", 0, 0, 3.0)
    'reading the data and building the model · 3 s…'
    """
    secs = f"{seconds:.0f} s"
    if not stage:
        return f"reading the data and building the model · {secs}…"
    what = _LOAD_STAGES.get(stage, "building the features" if stage == "features" else stage)
    if stage in _LOAD_STAGES and total > 1:
        return f"{what}, {count(done)} / {count(total)} images · {secs} (cached for later loads)…"
    if stage in _LOAD_STAGES:
        return f"{what} · {secs} (cached for later loads)…"
    if total > 1 and done:
        return f"{what}, {count(done)} / {count(total)} · {secs}…"
    return f"{what} · {secs}…"
