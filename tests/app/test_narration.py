"""The step narration, the anatomy's labels and the status line say exactly what the solver did,
in the cases that used to produce wrong sentences: a step with γ = 0, a cache hit, the first
pass of gap sampling (unvisited blocks), gap sampling with power p = 2, a box dataset, and
CoNLL's chunk F1 (Paper: Alg. 2, Alg. 5, App. H)."""
from __future__ import annotations

import dataclasses
import functools
import html
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from app_session import idle_session

from gaplab.app.session import Session
from gaplab.app.views import AnatomyView, StatusView, status_test_words, step_sentence


_session = functools.partial(idle_session, 120)


def _text(html_: str) -> str:
    return re.sub(r"<[^>]+>", "", html_)


@pytest.fixture
def ocr():
    s = _session(max_passes=1e6)
    yield s
    s.close()


def test_first_pass_of_gap_sampling_is_uniform_over_unvisited_blocks(ocr):
    s = ocr
    assert s.sampling == "gap" and s.gap_power == 1
    n = s.snapshot.n
    for k in range(3):
        unvisited = int(np.sum(np.isposinf(s.snapshot.gap_estimates)))
        snap = s.step()
        st = snap.last_step
        assert st.unvisited == unvisited == n - k
        assert st.probability == pytest.approx(1.0 / unvisited)
        text = _text(step_sentence(snap, st))
        assert f"uniformly among the {unvisited:,} blocks not visited yet" in text
        assert "ĝᵢ = +∞" in text and "Alg. 2 line 1" in text
        assert "drawn with probability" not in text      # no claim that P ∝ ĝᵢ chose it


def test_gap_power_two_says_p_and_matches_the_draw(ocr):
    s = ocr
    s.gap_power = 2.0
    n = s.snapshot.n
    s.step_n(n)                                 # every block visited once (uniform over unvisited)
    assert s.wait_idle(60)
    est = np.array(s.snapshot.gap_estimates)
    assert np.all(np.isfinite(est))
    snap = s.step()
    st = snap.last_step
    p = np.maximum(est, 0.0) ** 2
    assert st.probability == pytest.approx(p[st.block] / p.sum())
    text = _text(step_sentence(snap, st))
    assert "gap sampling with power p = 2 (P ∝ ĝᵢp)" in text
    assert "(P ∝ ĝᵢ)" not in text


def test_cache_hit_says_the_estimate_is_unchanged_and_names_the_cache_corner():
    s = _session(max_passes=1e6, cache=True, gap_check=1.0, sampling="uniform")
    try:
        n = s.snapshot.n
        s.step_n(n + 5)                         # past the first exact gap pass: hits are possible
        assert s.wait_idle(60)
        for _ in range(400):
            before = np.array(s.snapshot.gap_estimates)
            snap = s.step()
            st = snap.last_step
            if st.cache_hit:
                break
        else:
            pytest.fail("no cache hit in 400 steps after the first gap pass")
        i = st.block
        # Alg. 5: a hit leaves the stored estimate as it was; that is what gap_before shows
        assert snap.gap_estimates[i] == before[i] == st.gap_before
        text = _text(step_sentence(snap, st))
        assert "cache hit" in text and "stays unchanged" in text
        assert "cache corner's gap gic at the step was" in text
        assert "(at the step)" not in text and "(estimate)" not in text
        assert "the cache corner" in text and "FW corner differs" not in text
        view = AnatomyView()
        view.update(snap)
        assert "cache corner y<sup>c</sup>" in view.word.object and "FW corner y*" not in view.word.object
        assert "stored estimate" in view.table.object and "cache corner&#39;s gap" in view.table.object
        assert "block gap before g<sub>i</sub>" not in view.table.object
    finally:
        s.close()


def test_a_step_with_gamma_zero_moves_nothing():
    """The toy problem: after one step on an easy block every easy block is optimal (App. C), so
    the next step on another easy block has γ = 0."""
    s = _session(dataset="toy", sampling="uniform", max_passes=1e6)
    try:
        for _ in range(300):
            w0 = s.solver.w
            snap = s.step()
            st = snap.last_step
            if st.gamma == 0.0:
                break
        else:
            pytest.fail("no step with γ = 0 on the toy problem")
        assert np.array_equal(s.solver.w, w0)        # indeed nothing moved
        text = _text(step_sentence(snap, st))
        assert "moved nothing" in text and "moved the block" not in text
        # old: "the gap towards the FW corner is ≤ 0, so block 9 is already optimal for that
        # direction": g_i is a max over the whole simplex (Eq. (6)), so g_i = 0 is optimality
        assert "for that direction" not in text
        assert f"so block {st.block} is optimal" in text and "whole simplex (Eq. (6))" in text
        if math.isinf(st.gap_prev) and tuple(st.fw_corner) == tuple(st.truth):
            assert "the FW corner is the block's current point αᵢ" in text     # α⁰ᵢ is that corner
        else:
            assert "every labelling with αᵢ(y) > 0 is a maximizer of Hᵢ (Eq. (7))" in text
        # a pairwise step with γ = 0 because the FW corner is the away corner
        pw = dataclasses.replace(st, kind="pairwise", away_corner=st.fw_corner)
        text = _text(step_sentence(snap, pw))
        assert "moved nothing: the FW corner is the away corner" in text and "moved mass" not in text
        # old: "the pairwise direction does not decrease f (its gap ⟨−∇ᵢf, d⟩ ≤ 0)": the pairwise
        # gap is g^FW + g^A with both terms >= 0, so γ = 0 means the block is optimal (Eq. (7))
        pw = dataclasses.replace(st, kind="pairwise", away_corner=tuple("9" * len(st.fw_corner)), direction_gap=0.0)
        text = _text(step_sentence(snap, pw))
        assert "pairwise gap ⟨−∇ᵢf, d⟩ = giFW + giA is 0" in text and "the block is optimal (Eq. (7))" in text
        assert "does not decrease f" not in text
    finally:
        s.close()


def test_box_dataset_labels_the_improvement_a_lower_bound():
    """With a box (w = clip(v), App. H) the reported γg − γ²λ‖d‖²/2 is the decrease of f at
    fixed β: the true increase of the dual value is at least that."""
    s = _session(dataset="seg-tiny", max_passes=1e6)
    try:
        checked = 0
        for _ in range(40):
            d0 = s.snapshot.dual
            snap = s.step()
            st = snap.last_step
            assert st.box
            assert snap.dual - d0 >= st.improvement - 1e-12 * max(1.0, abs(d0))
            checked += st.improvement > 0
        assert checked
        view = AnatomyView()
        view.update(snap)
        assert "dual improvement (≥, box)" in view.table.object and "lower bound" in view.table.object
    finally:
        s.close()
    s = _session(max_passes=1e6)              # OCR has no box: the plain label
    try:
        snap = s.step()
        assert not snap.last_step.box
        view = AnatomyView()
        view.update(snap)
        assert "dual improvement (≥, box)" not in view.table.object
    finally:
        s.close()


def test_status_line_shows_the_headline_metric_not_the_test_error():
    snap = SimpleNamespace(test_metric_name="chunk F1", test_metric=0.9312, test_metric_passes=10.4,
                           exact_test_error=0.5737)
    words = status_test_words(snap)
    assert "chunk F1" in words and "93.12%" in words and "10.4 passes" in words
    assert "test error" not in words and "57.37" not in words
    snap = SimpleNamespace(test_metric_name="test error", test_metric=math.nan,
                           test_metric_passes=math.nan, exact_test_error=0.25)
    assert status_test_words(snap) == " · test error 25.00%"


def test_session_publishes_the_problems_metric_at_gap_checks():
    """seg-tiny's headline metric is pixel accuracy: the status line shows it after a check."""
    s = _session(dataset="seg-tiny", max_passes=1e6)
    try:
        s.step_n(3)
        assert s.wait_idle(60)
        assert math.isnan(s.snapshot.test_metric)           # no exact check yet
        s.compute_exact_gaps()
        snap = s.snapshot
        assert snap.test_metric_name == "pixel accuracy" and 0.0 <= snap.test_metric <= 1.0
        spec = s.problem.spec
        assert snap.test_metric == pytest.approx(spec.test_metric(s.problem.model, s.solver.w, s.problem.test)[0])
        view = StatusView()
        view.update(snap)
        assert "test pixel accuracy" in view.panel.object and "test error" not in view.panel.object
    finally:
        s.close()


def test_tooltips_say_what_the_paper_covers():
    """The Step button does not claim every step goes towards the FW corner; the gap power's
    tooltip says the paper (and Theorem 2) use p = 1 only, and the page it names mentions p."""
    from gaplab.app.lessons import LESSONS
    from gaplab.app.main import LESSON_OF, SETTING_NOTES, TOOLTIPS
    step = TOOLTIPS["step"]
    assert "away corner" in step and "nothing moves" in step
    assert "p = 1 only" in SETTING_NOTES["gap_power"] and "Theorem 2" in SETTING_NOTES["gap_power"]
    page = LESSONS[LESSON_OF["gap_power"] - 1]
    assert r"\hat g_i^{\,p}" in page.text and "p = 1" in page.text


def test_heuristic_path_points_are_not_counted_as_certified():
    """A heuristic path stops on stale sums (no certificate, App. K): its summary counts those
    points apart from the certified ones; an ε-path's points are all certified."""
    from gaplab.core import ChainModel
    from gaplab.core.datasets.ocr import load_ocr
    from gaplab.core.regpath import regularization_path
    train, _ = load_ocr("small")
    model = ChainModel(train.subset(range(60)))
    heur = regularization_path(model, eps=0.1, kappa=0.7, heuristic=True, lam_min=1e-2)
    stale = int(np.sum(heur.column("status") == "converged_heuristic"))
    assert stale > 0
    summ = heur.summary()
    assert summ["accepted_on_stale_gaps"] == stale
    assert summ["certified"] == int(heur.column("certified").sum()) - stale
    eps = regularization_path(model, eps=0.1, kappa=0.9, lam_min=1e-2).summary()
    assert eps["accepted_on_stale_gaps"] == 0 and eps["certified"] == eps["points"]


def _conll_dir():
    import os
    from pathlib import Path
    env = os.environ.get("GAPLAB_DATA", "").strip()
    shared = Path(__file__).resolve().parents[3] / "shared" / "data" / "conll2000"
    for d in ([Path(env), Path(env) / "conll2000"] if env else []) + [shared]:
        if (d / "train.txt").exists() and (d / "test.txt").exists():
            return d
    return None


@pytest.mark.skipif(_conll_dir() is None, reason="CoNLL-2000 not found ($GAPLAB_DATA or ../shared/data)")
def test_conll_status_line_shows_chunk_f1(monkeypatch):
    monkeypatch.setenv("GAPLAB_DATA", str(_conll_dir()))
    s = Session(max_passes=1e6, dataset="conll2000")
    try:
        assert s.wait_idle(300) and s.status == "idle", s.messages()
        s.step_n(200)
        assert s.wait_idle(60)
        s.compute_exact_gaps()
        snap = s.snapshot
        assert snap.test_metric_name == "chunk F1" and 0.0 < snap.test_metric <= 1.0
        view = StatusView()
        view.update(snap)
        assert "test chunk F1" in view.panel.object and "test error" not in view.panel.object
    finally:
        s.close()


def test_segmentation_anatomy_names_the_cache_corner_on_a_hit():
    s = _session(dataset="seg-tiny", cache=True, gap_check=1.0, sampling="uniform", max_passes=1e6)
    try:
        s.step_n(2 * s.snapshot.n)              # past the first exact gap pass
        assert s.wait_idle(60)
        for _ in range(300):
            st = s.step().last_step
            if st.cache_hit:
                break
        else:
            pytest.fail("no cache hit on seg-tiny")
        names = [cap for _, cap, _ in st.panels]
        fw = [cap for key, cap, _ in st.panels if key == "fw"]
        assert fw[0].startswith("cache corner") and all(c.startswith("cache corner") for c in fw)
        loss = s.problem.model.loss(st.block, np.array([int(t) for t in st.fw_corner]))
        assert any(c.startswith("cache corner loss per superpixel") for c in fw) == (loss > 0)
        assert not any(n.startswith("FW corner") for n in names)
        view = AnatomyView()
        view.update(s.snapshot)
        assert "blue: cache corner" in view.word.object
    finally:
        s.close()


# ----------------------------------------------------------------- issue 24 item 5: exact sentences
@pytest.fixture(scope="module")
def away_run():
    """OCR-small with away steps (Alg. 4) and uniform sampling: the first away step (γ > 0)
    after which the block's FW gap rose, its snapshot, and the first FW step with a gap at the
    step that is round-off (a block already at its FW corner)."""
    s = _session(max_passes=1e6, step_kind="away", sampling="uniform")
    found = {}
    try:
        for _ in range(3000):
            snap = s.step()
            st = snap.last_step
            if "rise" not in found and st.kind == "away" and st.gamma > 0 and st.gap_after > 2 * st.gap_before:
                found["rise"] = (snap, st)
            if "roundoff" not in found and st.kind == "fw" and 0 < abs(st.gap_before) < 1e-15:
                found["roundoff"] = (snap, st)
            if len(found) == 2:
                break
        yield found
    finally:
        s.close()


def test_away_step_names_the_away_and_fw_gaps_and_why_the_fw_gap_rose(away_run):
    """Old: "an away step with γ = 0.012 moved mass away from the away corner …; its block gap
    went from 0.00045 (the stored estimate ĝᵢ) / 2.6e-05 (computed at the step) to 0.00034".
    Alg. 4 takes the away step because g_i^A > g_i^FW; the record holds g_i^A (direction_gap)
    and g_i^FW (the block gap at the step)."""
    snap, st = away_run["rise"]
    assert st.direction_gap > st.gap_before                       # Alg. 4's choice: g^A > g^FW
    text = _text(step_sentence(snap, st))
    assert f"away gap giA = {st.direction_gap:.2g} exceeds the FW gap giFW = {st.gap_before:.2g}" in text
    assert "Alg. 4 takes the away step" in text
    assert "not monotone" in text and f"f fell by {st.improvement:.2g}" in text
    assert "(computed at the step)" not in text
    # the reviewer's numbers
    rev = dataclasses.replace(st, gamma=0.012, gap_prev=0.00045, block_gap_estimate=2.6e-05, direction_gap=0.0011,
                              gap_after=0.00034, drop=False)
    text = _text(step_sentence(snap, rev))
    assert "away gap giA = 0.0011 exceeds the FW gap giFW = 2.6e-05" in text
    assert "was 2.6e-05 at the step and is 0.00034 after it" in text and "last exact gap pass, a cache hit sets none, was 0.00045" in text
    assert "the gap rose although f fell" in text
    # the combined rule chooses by dual improvement, not by comparing the gaps
    comb = SimpleNamespace(**{**snap.__dict__, "config": dict(snap.config, step_kind="combined")})
    text = _text(step_sentence(comb, rev))
    assert "gaplab's combined rule, not one of the paper's algorithms, took it for the largest dual improvement" in text and "exceeds" not in text
    fw = dataclasses.replace(rev, kind="fw", away_corner=None)
    assert "gaplab's combined rule, not one of the paper's algorithms, took it for the largest dual improvement" in _text(step_sentence(comb, fw))
    # on a cache hit the stored g_i is stale: the away gap was compared with the cache corner's gap
    hit = dataclasses.replace(rev, cache_hit=True)
    text = _text(step_sentence(snap, hit))
    assert "away gap giA = 0.0011 exceeds the cache corner's gap" in text and "giFW = 2.6e-05" not in text


def test_round_off_is_one_rule_and_gamma_one_reaches_the_corner(away_run):
    """Old: "a FW step with γ = 1 moved the block towards the FW corner; its block gap went from
    7.1e-19 to 1.4e-18" (round-off shown as numbers, and "towards" for γ = 1)."""
    snap, st = away_run["roundoff"]
    from gaplab.app.wording import block_gap_tol, gap_words
    tol = block_gap_tol(snap)
    assert 0 < abs(st.gap_before) <= tol < 1e-9 / snap.n        # the rule: 1e-12 of the scale per block
    text = _text(step_sentence(snap, st))
    assert f"{st.gap_before:.2g}" not in text and "0 (round-off)" in text
    assert "towards" not in text and "already optimal" in text
    rev = dataclasses.replace(st, gamma=1.0, gamma_max=1.0, block_gap_estimate=7.1e-19, direction_gap=7.1e-19,
                              gap_after=1.4e-18)
    text = _text(step_sentence(snap, rev))
    assert "7.1e-19" not in text and "1.4e-18" not in text
    assert "was 0 (round-off) at the step and is 0 (round-off) after it" in text and "towards" not in text
    # the same rule in the anatomy's table and for a small negative gap; a real small gap is a number
    assert gap_words(-3e-19, tol) == "0 (round-off)" and gap_words(1e-9, tol) == "1e-09"
    view = AnatomyView()
    view.update(dataclasses.replace(snap, last_step=rev))
    assert "0 <span" in view.table.object and "(round-off: 7.1e-19)" in view.table.object
    # γ = 1 with a real gap on a block not at its corner: moved *to* the FW corner
    far = dataclasses.replace(st, gamma=1.0, gamma_max=1.0, block_gap_estimate=0.05, direction_gap=0.05, gap_after=0.0,
                              gap_prev=0.07, fw_corner=tuple("z" * len(st.truth)), active_set_size=2)
    text = _text(step_sentence(snap, far))
    assert "moved the block to the FW corner" in text and "towards" not in text
    far = dataclasses.replace(far, gamma=0.5)
    assert "moved the block towards the FW corner" in _text(step_sentence(snap, far))


def test_count_formatter_is_the_same_on_every_line():
    """Old: "8916 block(s) never visited" and "block i 515 of 8936" next to "n = 8,936"."""
    from gaplab.app.views.blocks import _info_line
    from gaplab.app.wording import count
    assert count(8936) == "8,936" and count(12) == "12"
    snap = SimpleNamespace(heuristic_gap=math.inf, exact_gap=math.nan, chi_cubed=math.nan, iteration=20)
    assert "8,916 block(s) never visited" in _info_line(snap, 8916)
    s = _session(max_passes=1e6)
    try:
        big = dataclasses.replace(s.step(), n=8936)
        big = dataclasses.replace(big, last_step=dataclasses.replace(big.last_step, block=5150))
        view = AnatomyView()
        view.update(big)
        assert "5,150 of 8,936" in view.table.object
        status = StatusView()
        status.update(big)
        assert "n = 8,936" in status.panel.object
        assert "block 5,150" in _text(step_sentence(big, big.last_step))
    finally:
        s.close()


def test_cache_miss_before_the_first_gap_pass_says_no_hit_was_possible():
    """Alg. 5 line 2: g^(0) = +∞, so the threshold max(F g_i^(k_i), (ν/n) g^(k_0)) is infinite
    until the first exact gap pass: every step misses. Old: "the cache missed, so the max oracle
    was called" with no reason (students expected hits as the cache fills)."""
    s = _session(max_passes=1e6, cache=True, gap_check=1.0, sampling="uniform")
    try:
        for _ in range(5):
            snap = s.step()
            st = snap.last_step
            assert not st.cache_hit and math.isnan(snap.exact_gap)
            text = _text(step_sentence(snap, st))
            assert "no hit is possible before the first exact gap pass" in text and "Alg. 5 line 2" in text
        s.compute_exact_gaps()
        n = s.snapshot.n
        seen = set()
        for _ in range(3 * n):
            snap = s.step()
            st = snap.last_step
            if st.cache_hit:
                continue
            text = _text(step_sentence(snap, st))
            assert "before the first exact gap pass" not in text
            seen.add("not visited yet" in text)
        assert False in seen
    finally:
        s.close()


@pytest.mark.parametrize("sampling", ["maxgap", "permutation"])
def test_first_pass_draw_of_maxgap_and_permutation_is_said_exactly(sampling):
    """Old: "was drawn with probability 0.0016 under max-gap sampling (the largest ĝᵢ)" while
    every unvisited ĝᵢ = +∞ ties (the solver draws uniformly among the unvisited blocks), and
    "… under a random permutation" with P = 1/(blocks left in the pass), not 1/n."""
    s = _session(max_passes=1e6, sampling=sampling)
    try:
        n = s.snapshot.n
        for k in range(3):
            snap = s.step()
            st = snap.last_step
            assert st.probability == pytest.approx(1.0 / (n - k))
            text = _text(step_sentence(snap, st))
            if sampling == "maxgap":
                assert f"uniformly among the {n - k:,} blocks not visited yet" in text and "ĝᵢ = +∞" in text
            else:
                assert f"uniformly among the {n - k:,} block(s) not yet drawn in this pass" in text
    finally:
        s.close()


def test_chi_cubed_note_says_what_theorem_2_divides():
    """Old: "χ(ĝ)³ = 3.10 (Thm. 2's gain of gap over uniform sampling if …)": Theorem 2's bound
    is 2n/(k+2n)·(C_f^⊗ χ^⊗ + h₀), so χ(g)³ divides the curvature term only, not the rate."""
    from gaplab.app.views.blocks import _info_line
    snap = SimpleNamespace(heuristic_gap=0.5, exact_gap=math.nan, chi_cubed=3.1, iteration=20)
    line = _info_line(snap, 0)
    assert "χ(ĝ)³ = 3.10" in line and "divides the bound's curvature term, not h₀" in line
    assert "gain of gap over uniform" not in line


# ----------------------------------------------------------------- issue 34: second read
def test_tie_rule_and_combined_are_said_to_be_gaplabs(away_run):
    """Alg. 4 line 12 takes the FW step only when g^FW > g^A; gaplab takes it on a tie too, and
    the combined step kind is gaplab's, not one of the paper's algorithms (item 3)."""
    from gaplab.core.reference.citations import cite
    snap, st = away_run["rise"]
    fw = dataclasses.replace(st, kind="fw", away_corner=None, cache_hit=False)
    text = html.unescape(_text(step_sentence(snap, fw)))
    assert "gaplab takes the FW step when giFW ≥ giA" in text
    assert f"{cite('fw_or_away')} takes it only when giFW > giA" in text and "Alg. 4 line 12" in text
    comb = SimpleNamespace(**{**snap.__dict__, "config": dict(snap.config, step_kind="combined")})
    for rec in (st, fw):
        assert "gaplab's combined rule, not one of the paper's algorithms, took it" in _text(step_sentence(comb, rec))


def test_stored_estimate_says_when_it_was_computed(away_run):
    """The estimate ĝᵢ = g_i^(k_i) is from the last time gap i was computed (its last max-oracle
    call or the last exact gap pass), not from the block's last visit (item 7); an exact gap
    pass sets every estimate to the exact block gap."""
    snap, st = away_run["rise"]
    text = _text(step_sentence(snap, dataclasses.replace(st, gap_prev=0.00045)))
    assert "stored estimate ĝᵢ = gi(ki), from the last time gap i was computed" in text
    assert "last exact gap pass" in text and "last visit" not in text
    s = _session(max_passes=1e6, sampling="uniform")
    try:
        s.step_n(s.snapshot.n // 2)
        assert s.wait_idle(60)
        ex = s.compute_exact_gaps()
        np.testing.assert_allclose(s.snapshot.gap_estimates, ex.block_gaps, rtol=0, atol=0)
    finally:
        s.close()


def test_anatomy_empty_state_names_every_step_kind_and_the_cache():
    """Before the first step the anatomy does not say every step moves towards the FW corner
    after a max-oracle call (item 13)."""
    s = _session(max_passes=1e6)
    try:
        assert s.snapshot.last_step is None
        view = AnatomyView()
        view.update(s.snapshot)
    finally:
        s.close()
    text = _text(view.word.object)
    assert "calls no oracle" in text and "away step" in text and "pairwise step" in text
    assert "call its max oracle, move its dual variables towards the FW corner" not in text


@pytest.fixture(scope="module")
def hit_away():
    """OCR-small, away steps with the cache (Alg. 4 with Alg. 5), exact gap pass every pass,
    uniform sampling: the first cache hit whose step is an away step, with its session."""
    s = _session(max_passes=1e6, cache=True, gap_check=1.0, sampling="uniform", step_kind="away")
    n = s.snapshot.n
    s.step_n(n + 5)
    assert s.wait_idle(60)
    for _ in range(3000):
        snap = s.step()
        st = snap.last_step
        if st.cache_hit and st.kind == "away":
            break
    else:
        s.close()
        pytest.fail("no cache-hit away step in 3000 steps")
    yield s, snap, st
    s.close()


def test_cache_hit_away_step_gives_the_cache_corners_gap(hit_away):
    """Item 6: the narration of a cache-hit away step gives the cache corner's gap g_i^c: at the
    step's iterate it passed the hit rule g_i^c >= max(F g_i^(k_i), (ν/n) g^(k_0)) and is at most
    the block gap (the cache is part of 𝒴_i); item 4: its symbol is g_i^c, not ĝ."""
    s, snap, st = hit_away
    gc = st.cache_gap
    assert math.isfinite(gc)
    pre = s.solver_at(st.iteration)                       # the state before the step
    rec = s.solver_at(st.iteration).step()                # the step again, its raw cache corner
    assert (rec.block, rec.cache_hit, rec.kind) == (st.block, True, "away")
    assert gc == pre.corner_gap(rec.block, rec.fw_corner)
    g0 = next(r["exact_gap"] for r in reversed(snap.trace) if r["kind"] == "gap_check"
              and r["iteration"] <= st.iteration)
    F, nu = s.cache_factor, s.cache_nu
    assert gc >= max(F * st.gap_before, nu / snap.n * g0) * (1 - 1e-12)
    assert gc <= pre.block_gap_now(st.block) + 1e-12
    assert st.direction_gap > gc                            # Alg. 4 took the away step
    text = _text(step_sentence(snap, st))
    assert f"exceeds the cache corner's gap gic = {gc:.2g} (Alg. 5 line 8, in place of giFW)" in text
    view = AnatomyView()
    view.update(snap)
    assert "cache corner&#39;s gap g<sub>i</sub><sup>c</sup>" in view.table.object
    assert "ĝ_i = ⟨" not in view.table.object


def test_back_to_a_checkpoint_step_says_the_same_draw():
    """Item 6: going back to a step that is itself a checkpoint (not replayed) keeps its
    sentence's draw, e.g. 'drawn uniformly among the m blocks not visited yet'."""
    s = _session(max_passes=1e6)
    try:
        said = {}
        for _ in range(40):
            snap = s.step()
            said[snap.iteration] = _text(step_sentence(snap, snap.last_step))
        cks = [c for c in s._history.checkpoints if 0 < c < snap.iteration]
        assert cks, "no checkpoint inside the run"
        for c in cks + [snap.iteration - 3]:
            back = s.go_to(c)
            assert back.iteration == c
            text = _text(step_sentence(back, back.last_step))
            assert text == said[c]
            assert "blocks not visited yet" in text and "drawn under gap sampling" not in text
    finally:
        s.close()


def test_projector_short_form_says_the_steps_numbers_and_opens_to_the_full_sentence(ocr):
    """Projector mode's narration is a short form (a few lines at 18 px) with the same block, draw,
    oracle, γ and block gaps as the full sentence, which is one click away (a details element)
    and its tooltip (escaped: no markup in the attribute)."""
    from gaplab.app.views.narration import step_short
    from gaplab.app.wording import block_gap_tol, gamma_words, gap_words
    s = ocr
    for _ in range(3):
        snap = s.step()
    st = snap.last_step
    short = _text(step_short(snap, st))
    full = _text(step_sentence(snap, st))
    assert len(short) < 0.5 * len(full)
    gtol = block_gap_tol(snap)
    assert f"block {st.block:,} drawn uniformly among the {st.unvisited:,} unvisited blocks" in short
    assert "max oracle" in short and f"γ = {gamma_words(st.gamma)}" in short
    assert f"block gap {gap_words(st.gap_before, gtol)} → {gap_words(st.gap_after, gtol)}" in short
    view = AnatomyView(stacked=True, compact=True)
    view.update(snap)
    obj = view.sentence.object
    summary = re.search(r"<summary title='([^']*)'[^>]*>(.*?)</summary>(.*)</details>", obj, re.S)
    assert summary is not None, obj
    tip, shown, hidden = summary.groups()
    assert _text(shown) == short and _text(hidden) == full
    assert "<" not in tip and html.unescape(tip) == full
    # the numbers: a two-column grid with γ, γ_max, the block gaps and the dual improvement
    table = _text(view.table.object)
    assert "grid-template-columns" in view.table.object
    for word in ("γ", "γmax", "block gap before gi", "block gap after", "dual improvement", "max oracle"):
        assert word in table, table
    assert "block i" not in table
