"""What the app says in words: the step sentence ("what just happened"), how a block was drawn,
the anatomy's row labels with their hover notes, and the status line's test number."""
from __future__ import annotations

import math

from gaplab.core.reference.citations import cite

from ..safe_html import esc
from ..wording import ROUND_OFF, block_gap_tol, count, gamma_words, gap_words
from .figures import _fmt

#: the combined step kind is gaplab's: not one of the paper's Alg. 1-5 (App. G mentions trying it)
COMBINED = "gaplab's combined rule, not one of the paper's algorithms,"

SAMPLER_WORDS = {"gap": "gap sampling (P ∝ ĝᵢ)", "uniform": "uniform sampling",
                 "permutation": "a random permutation", "maxgap": "max-gap sampling (the largest ĝᵢ)"}


def _sampler_words(snap, st) -> str:
    """The sampler in words; gap sampling with its power p (P ∝ ĝᵢᵖ) when p ≠ 1."""
    name = st.sampling or snap.config.get("sampling", "")
    if name == "gap":
        p = float(snap.config.get("gap_power", 1.0) or 1.0)
        if p == 1.0:
            return "gap sampling (P ∝ ĝᵢ)"
        return f"gap sampling with power p = {p:g} (P ∝ ĝᵢ<sup>p</sup>)"
    return SAMPLER_WORDS.get(name, name or "the sampler")


def _drawn_words(snap, st) -> str:
    """How the block was drawn. Under gap (and max-gap) sampling a block not visited yet has
    ĝᵢ = +∞ (Paper: Alg. 2 line 1), so while unvisited blocks remain the draw is uniform over
    them; a random permutation draws uniformly among the blocks not yet drawn in its pass."""
    samp = _sampler_words(snap, st)
    name = st.sampling or snap.config.get("sampling", "")
    unvisited = getattr(st, "unvisited", -1)
    if name in ("gap", "maxgap") and (math.isinf(getattr(st, "gap_prev", math.nan)) or unvisited > 0):
        m = unvisited if unvisited > 0 else (round(1 / st.probability) if st.probability > 0 else 0)
        prob = f" (probability <b>{st.probability:.2g}</b>)" if math.isfinite(st.probability) else ""
        among = f"the <b>{count(m)}</b> blocks not visited yet" if m else "the blocks not visited yet"
        return (f"was drawn uniformly among {among}{prob}: under {samp} an unvisited block has "
                f"ĝᵢ = +∞ ({cite('gap_init')}), so the first draws ignore the gaps")
    if name == "permutation" and math.isfinite(st.probability) and st.probability > 0:
        m = round(1 / st.probability)
        return (f"was drawn with probability <b>{st.probability:.2g}</b> under {samp}: uniformly among the "
                f"<b>{count(m)}</b> block(s) not yet drawn in this pass over the data")
    if math.isfinite(st.probability):
        return f"was drawn with probability <b>{st.probability:.2g}</b> under {samp}"
    return f"was drawn under {samp}"


def corner_name(st) -> str:
    """What the step used as its FW corner: the cache corner y^c on a cache hit (Alg. 5)."""
    return "cache corner" if st.cache_hit else "FW corner"


def _fw_row_label(st) -> str:
    """The anatomy's label of the corner the step moved towards: on a cache hit that is the
    cache corner y^c, not the max oracle's FW corner y* (no oracle was called)."""
    if st.cache_hit:
        return ("<span title='A cache hit: the best labelling in the cache (Alg. 5), used in place of "
                "the FW corner; the max oracle was not called'>cache corner y<sup>c</sup></span>")
    return "FW corner y*"


def _at_corner_words(st, cname: str) -> str:
    """Why a step with γ = 0 moved nothing, when the record shows αᵢ sits at the FW corner: the
    block was not visited before (αᵢ = α⁰ᵢ, the ground-truth corner) and the FW corner is the
    ground truth, or its one active atom is the FW corner. Else ""."""
    same = tuple(st.fw_corner) == tuple(st.truth)
    if same and math.isinf(getattr(st, "gap_prev", math.nan)):
        return (f"the {cname} is the block's current point αᵢ (not visited before, all its mass is on "
                "the ground truth, which is the FW corner)")
    if st.active_set_size == 1 and st.away_corner is not None and tuple(st.away_corner) == tuple(st.fw_corner):
        return f"the {cname} is the block's current point αᵢ (its one active atom)"
    return ""


def _cache_gap_words(st, gtol: float) -> str:
    """The cache corner's gap g_i^c of a cache-hit step, with its value when the session
    recorded it (``st.cache_gap``, Paper: Alg. 5 line 8)."""
    gc = getattr(st, "cache_gap", math.nan)
    name = "the cache corner's gap g<sub>i</sub><sup>c</sup>"
    return f"{name} = <b>{gap_words(gc, gtol)}</b>" if math.isfinite(gc) else name


def _move_words(snap, st, cname: str, gtol: float) -> str:
    """What the step did to αᵢ (Paper: Alg. 1 lines 8-11, Alg. 3, Alg. 4 lines 12-23)."""
    g = f"γ = <b>{gamma_words(st.gamma)}</b>"
    mode = snap.config.get("step_kind", st.kind)
    if not st.gamma > ROUND_OFF:
        if st.kind == "pairwise":
            same = st.away_corner is not None and tuple(st.away_corner) == tuple(st.fw_corner)
            why = (f"the {cname} is the away corner" if same else
                   f"the pairwise gap ⟨−∇ᵢf, d⟩ = g<sub>i</sub><sup>FW</sup> + g<sub>i</sub><sup>A</sup> is "
                   f"{gap_words(st.direction_gap, gtol)}; both terms are ≥ 0 (the {cname} maximizes Hᵢ, the "
                   "away corner is the worst active labelling), so both are 0: every labelling with αᵢ(y) > 0 "
                   "is a maximizer of Hᵢ and the block is optimal (Eq. (7))")
            return f"a pairwise step with {g} moved nothing: {why}"
        if st.kind == "away":
            return (f"an away step with {g} moved nothing: its away gap g<sub>i</sub><sup>A</sup> = "
                    f"{gap_words(st.direction_gap, gtol)} ({cite('away_gap')}) gives no decrease of f, or "
                    f"γ<sub>max</sub> = α<sub>a</sub>/(1 − α<sub>a</sub>) = {gamma_words(st.gamma_max)}")
        at = _at_corner_words(st, cname)
        return (f"a FW step with {g} moved nothing: the block gap gᵢ, the largest ⟨−∇ᵢf, s − αᵢ⟩ over "
                f"the block's whole simplex (Eq. (6)), is ≤ 0, so block {st.block} is optimal: no change "
                f"of αᵢ alone lowers f (Eq. (5)-(7))" + (f"; {at}" if at else
                "; every labelling with αᵢ(y) > 0 is a maximizer of Hᵢ (Eq. (7))"))
    why = []
    if st.kind == "pairwise":
        move = f"a pairwise step with {g} moved mass γ from the away corner to the {cname} (Alg. 3)"
    elif st.kind == "away":
        ga, gfw = gap_words(st.direction_gap, gtol), gap_words(st.gap_before, gtol)
        move = f"an away step with {g} moved mass away from the away corner onto the other atoms of the active set"
        ga = f"the away gap g<sub>i</sub><sup>A</sup> = <b>{ga}</b>"
        # on a cache hit the stored g_i is stale: the comparison was with the cache corner's gap
        gfw = (_cache_gap_words(st, gtol) + f" ({cite('cache_gap')}, in place of g<sub>i</sub><sup>FW</sup>)"
               if st.cache_hit else f"the FW gap g<sub>i</sub><sup>FW</sup> = <b>{gfw}</b>")
        why.append(f"{COMBINED} took it for the largest dual improvement; {ga}, {gfw}" if mode == "combined"
                   else f"Alg. 4 takes the away step because {ga} exceeds {gfw}")
    elif _at_corner_words(st, cname):
        move = (f"a FW step with {g} left the block where it was: {_at_corner_words(st, cname)}")
    elif st.gamma >= 1.0 and st.gamma_max == 1.0:
        move = f"a FW step with {g} moved the block to the {cname} (all of αᵢ's mass is now on it)"
    else:
        move = f"a FW step with {g} moved the block towards the {cname}"
    if st.drop:
        move += " and, with γ = γ<sub>max</sub>, dropped the away atom from the active set"
    if mode == "combined" and st.kind in ("fw", "pairwise"):
        why.append(f"{COMBINED} took it for the largest dual improvement of the FW, away and pairwise steps")
    if st.kind == "fw" and mode == "away" and not st.cache_hit:
        why.append("gaplab takes the FW step when g<sub>i</sub><sup>FW</sup> ≥ g<sub>i</sub><sup>A</sup>; "
                   f"{cite('fw_or_away')} takes it only when g<sub>i</sub><sup>FW</sup> &gt; "
                   "g<sub>i</sub><sup>A</sup>, gaplab breaks a tie in favour of FW")
    if abs(st.direction_gap) <= gtol:
        why.append("the gap of its direction was 0 up to round-off, so the block was already optimal "
                   "(Eq. (6)): γ is a ratio of round-off-sized numbers and f changed by round-off only")
    return move + (" (" + "; ".join(why) + ")" if why else "")


def _gap_words(snap, st, gtol: float) -> str:
    """What happened to the block gap (Paper: Eq. (6); Alg. 2 and 5 for the stored estimate)."""
    after = f"<b>{gap_words(st.gap_after, gtol)}</b>"
    if st.cache_hit:
        est = (f"its stored estimate g<sub>i</sub><sup>(k<sub>i</sub>)</sup> = {gap_words(st.gap_before, gtol)} "
               "stays unchanged (a hit updates neither it nor k<sub>i</sub>)")
        comp = {"fw": "the cache corner's gap g<sub>i</sub><sup>c</sup> at the step was",
                "pairwise": "the step's direction gap ⟨−∇ᵢf, d⟩ (cache corner minus away corner) was",
                }.get(st.kind, "the step's direction gap ⟨−∇ᵢf, d⟩ was")
        return f"{est}; {comp} {gap_words(st.direction_gap, gtol)}; after the step the block gap is {after}"
    before = gap_words(st.gap_before, gtol)
    fw = " g<sub>i</sub><sup>FW</sup>" if st.kind != "fw" else ""
    text = f"its block gap{fw} (Eq. (6)) was {before} at the step and is {after} after it"
    prev = getattr(st, "gap_prev", math.nan)
    if math.isfinite(prev):
        text += (f" (its stored estimate ĝᵢ = g<sub>i</sub><sup>(k<sub>i</sub>)</sup>, from the last time gap i was "
                 f"computed: its last max-oracle call or the last exact gap pass, a cache hit sets none, was "
                 f"{gap_words(prev, gtol)})")
    rose = (math.isfinite(st.gap_after) and st.gap_after > gtol and st.gap_after > st.gap_before
            and st.gamma > ROUND_OFF)
    if rose:
        along = {"away": "the away direction", "pairwise": "the pairwise direction"}.get(st.kind, "the FW direction")
        text += (f"; the gap rose although f fell by {_fmt(st.improvement, '.2g')}: the line search lowers f "
                 f"along {along} only, the step changed w and with it the scores Hᵢ(y; w) of the block's "
                 "labellings, so the block gap gᵢ (Eq. (7)) is not monotone")
    return text


def _miss_words(snap, st) -> str:
    """Why a cache miss was certain, when it was: the hit threshold max(F·g_i^(k_i), (ν/n)·g^(k_0))
    is +∞ before the first exact gap pass (g^(0) = +∞) and for a block whose gap was never
    computed (g_i^(0) = +∞; Paper: Alg. 5 line 2)."""
    if not math.isfinite(getattr(snap, "exact_gap", math.nan)):
        return (" (no hit is possible before the first exact gap pass: g<sup>(k<sub>0</sub>)</sup> = +∞ "
                "makes the hit threshold max(F g<sub>i</sub><sup>(k<sub>i</sub>)</sup>, (ν/n) "
                f"g<sup>(k<sub>0</sub>)</sup>) infinite, {cite('cache_init')})")
    if math.isinf(getattr(st, "gap_prev", math.nan)):
        return (" (the block was not visited yet: g<sub>i</sub><sup>(k<sub>i</sub>)</sup> = +∞ makes the hit "
                f"threshold infinite, {cite('cache_init')})")
    return ""


def step_sentence(snap, st) -> str:
    """One sentence saying what the last block step did ("what just happened"), as HTML.

    Exact in the cases students ask about: a step with γ = 0 moves nothing and its block is
    optimal (Paper: Eq. (5)-(7)); an away step names the away gap g_i^A and the FW gap g_i^FW
    it was chosen on (Alg. 4) and says why the FW gap may rise; γ = 1 moves the block *to* its
    FW corner; gaps and γ within round-off of 0 read "0 (round-off)" by one rule
    (:mod:`gaplab.app.wording`); on a cache hit the stored estimate g_i^(k_i) is unchanged
    (Alg. 5) and the gap computed at the step is the cache corner's; on the first pass of gap
    sampling the draw is uniform over the unvisited blocks (ĝ = +∞, Alg. 2 line 1); with gap
    power p, P ∝ ĝᵢᵖ."""
    drawn = _drawn_words(snap, st)
    if st.cache_hit:
        how = ("the cache hit: the best cached labelling, the cache corner y<sup>c</sup>, served as FW "
               "corner (no oracle call)")
    elif snap.config.get("cache"):
        how = "the cache missed, so the max oracle was called" + _miss_words(snap, st)
    else:
        how = "the max oracle was called"
    cname = corner_name(st)
    wrong = sum(a != b for a, b in zip(st.fw_corner, st.truth)) + abs(len(st.fw_corner) - len(st.truth))
    corner = (f"the {cname} is the ground truth itself" if wrong == 0 else
              f"the {cname} differs from the ground truth in {count(wrong)} of {count(len(st.truth))} "
              "position(s)")
    gtol = block_gap_tol(snap)
    move = _move_words(snap, st, cname, gtol)
    gaps = _gap_words(snap, st, gtol)
    return (f"<b>What just happened:</b> block <b>{count(st.block)}</b> {drawn}; {how}; {corner}; {move}; "
            f"{gaps}.")


# the anatomy's row labels, with what students get wrong on hover
_TIP_BEFORE = (
    "<span title='The block gap g_i computed by this step&#39;s oracle call. The estimate stored for "
    "gap sampling, ĝ_i = g_i^(k_i), is this gap *before* the step: the step usually lowers the "
    "block&#39;s gap, so the estimate usually overestimates it, but the step also moves w, and after "
    "a long step (γ &gt; 0.5) the gap is more often higher than lower (see the sentence&#39;s "
    "&#39;the gap rose&#39;). The sum of the stored estimates bounds nothing (Fig. 1b).'>"
    "block gap before g<sub>i</sub></span>")
_TIP_BEFORE_HIT = (
    "<span title='A cache hit updates neither g_i^(k_i) nor k_i (Alg. 5 updates them only on a miss): "
    "gap sampling with a cache draws from staler estimates.'>stored estimate "
    "g<sub>i</sub><sup>(k<sub>i</sub>)</sup></span>")
_TIP_DIRECTION_HIT = (
    "<span title='The cache corner&#39;s gap g_i^c = ⟨−∇_i f, e_c − α_i⟩ (Alg. 5 line 8; ĝ_i is the "
    "stored estimate g_i^(k_i)): the cache hit rule compares it with max(F g_i^(k_i), (ν/n) g^(k_0)).'>"
    "cache corner&#39;s gap g<sub>i</sub><sup>c</sup></span>")
_TIP_IMPROVEMENT_BOX = (
    "<span title='Box constraints (App. H): w = clip(v); the gap and γ use the untruncated v_i. γ is "
    "exact for the dual with the box multipliers β held fixed, and γg − γ²λ‖d‖²/2 is the decrease at "
    "fixed β: re-clipping w afterwards lowers f further, so this is a lower bound on the true "
    "decrease.'>dual improvement (≥, box)</span>")


def status_test_words(snap) -> str:
    """The status line's test number: the problem's headline metric (CoNLL: chunk F1, with the
    pass it was evaluated at) when it has one, else the test error at the last exact check."""
    name = getattr(snap, "test_metric_name", "test error")
    value = getattr(snap, "test_metric", math.nan)
    if name != "test error":
        if not math.isfinite(value):
            return ""
        at = getattr(snap, "test_metric_passes", math.nan)
        when = f" @ {at:.1f} passes" if math.isfinite(at) else ""
        return f" · test {esc(name)} <b>{100 * value:.2f}%</b>{when}"
    if math.isfinite(snap.exact_test_error):
        return f" · test error {100 * snap.exact_test_error:.2f}%"
    return ""



def _short_drawn(snap, st) -> str:
    """How the block was drawn, in a few words (the full form: :func:`_drawn_words`)."""
    name = st.sampling or snap.config.get("sampling", "")
    unvisited = getattr(st, "unvisited", -1)
    if name in ("gap", "maxgap") and (math.isinf(getattr(st, "gap_prev", math.nan)) or unvisited > 0):
        m = unvisited if unvisited > 0 else (round(1 / st.probability) if st.probability > 0 else 0)
        among = f"the <b>{count(m)}</b> unvisited blocks" if m else "the unvisited blocks"
        return f"drawn uniformly among {among} (ĝᵢ = +∞)"
    samp = _sampler_words(snap, st)
    if math.isfinite(st.probability):
        return f"drawn with P = <b>{st.probability:.2g}</b> under {samp}"
    return f"drawn under {samp}"


def _short_move(snap, st) -> str:
    """The step kind and γ, in a few words (the full form: :func:`_move_words`)."""
    kind = {"fw": "FW", "away": "away", "pairwise": "pairwise"}.get(st.kind, st.kind)
    text = f"{kind} step, γ = <b>{gamma_words(st.gamma)}</b>"
    if not st.gamma > ROUND_OFF:
        text += " (moved nothing)"
    elif st.drop:
        text += " (dropped the away atom)"
    return text


def step_short(snap, st) -> str:
    """The step sentence in a form that fits a projector screen's few lines (as HTML): the block,
    how it was drawn, the oracle or the cache, how far the corner is from the ground truth, the
    step kind with γ and the block gap before → after. The same facts as :func:`step_sentence`
    (which explains them), in the same words."""
    gtol = block_gap_tol(snap)
    if st.cache_hit:
        how = "cache hit (no oracle call)"
    elif snap.config.get("cache"):
        how = "cache miss → max oracle"
    else:
        how = "max oracle"
    cname = corner_name(st)
    wrong = sum(a != b for a, b in zip(st.fw_corner, st.truth)) + abs(len(st.fw_corner) - len(st.truth))
    corner = (f"{cname} = ground truth" if wrong == 0 else
              f"{cname} wrong in {count(wrong)} of {count(len(st.truth))}")
    after = f"<b>{gap_words(st.gap_after, gtol)}</b>"
    if st.cache_hit:
        gaps = f"stored ĝᵢ unchanged; block gap after {after}"
    else:
        gaps = f"block gap {gap_words(st.gap_before, gtol)} → {after}"
    return (f"<b>What just happened:</b> block <b>{count(st.block)}</b> {_short_drawn(snap, st)} · {how} · "
            f"{corner} · {_short_move(snap, st)} · {gaps}")
