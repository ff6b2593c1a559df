"""The live race of uniform against gap sampling: lockstep by oracle calls
does not change the mathematics, both sides get the same oracle calls, and on the App. C toy
gap sampling's advantage grows with n."""
import math

import numpy as np
import pytest

from gaplab.app.race import SIDES, Race, calls_to_reach


def _math(trace):
    """A trace without its wall times (nan as None: nan != nan)."""
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()
             if "wall_time" not in k} for r in trace]


def _outside(race, side, steps):
    from gaplab.core import Solver
    s = Solver(race.model, lam=race.lam, seed=race.seed, sampling=side, gap_check=race.gap_check,
               max_passes=1e12)
    visits = np.zeros(race.n, dtype=np.int64)
    for _ in range(steps):
        s.step()
        visits[s.last_steps(1)[-1].block] += 1
    return s, visits


@pytest.mark.parametrize("passes", [0.05, 0.5, 1.3])
def test_lockstep_traces_equal_runs_outside_the_race(passes):
    race = Race("toy", n=12, K=30, seed=4, gap_check=2, passes_per_tick=passes)
    for _ in range(30):
        race.tick()
    for side in SIDES:
        s = race.solvers[side]
        out, visits = _outside(race, side, s.iteration)
        assert _math(out.trace()) == _math(s.trace())
        assert len(s.trace()) > 1
        np.testing.assert_array_equal(out.w, s.w)
        np.testing.assert_array_equal(out.gap_estimates, s.gap_estimates)
        np.testing.assert_array_equal(visits, race.visits[side])
        assert out.oracle_calls == s.oracle_calls


def test_state_after_n_ticks_has_equal_oracle_calls():
    race = Race("toy", n=10, K=20, seed=1, gap_check=1, passes_per_tick=0.3)
    assert race.calls_per_tick == 3
    for k in range(1, 41):
        race.tick()
        calls = race.oracle_calls
        if not any(race.stopped(side) for side in SIDES):
            assert calls["uniform"] == calls["gap"] >= 3 * k   # a gap pass (n calls) may end a tick
            assert len(race.curves["gap"]) == k + 1
        assert race.ticks == k
        for side in SIDES:
            # each step drew one block: the visits add up to the steps taken
            assert race.visits[side].sum() == race.solvers[side].iteration
            if race.reached[side] is not None:   # a side that reached ε stays there
                assert calls[side] == race.reached[side] == race.curves[side][-1][0]
                assert calls[side] <= calls[SIDES[0] if side == SIDES[1] else SIDES[1]]
    g = race.gaps()
    if g["gap"] > 0:
        assert race.ratio() == pytest.approx(g["uniform"] / g["gap"])
    else:   # K = 20 < the hard block's steps here: gap sampling solved the toy exactly
        assert race.ratio() == math.inf
    assert "oracle calls" in race.readout()
    assert "gap sampling reached ε" in race.readout() and "ratio" not in race.readout()   # other clocks


def test_gap_sampling_gain_grows_with_n():
    """App. C: uniform needs about n·t oracle calls, gap sampling about n + t (t = min(K, 1/(2nε)))."""
    gains = []
    for n in (4, 8, 16):
        race = Race("toy", n=n, K=40, seed=0, gap_check=10, eps=1e-4)
        reached = calls_to_reach(race, max_calls=100 * n * 40)
        assert reached["gap"] is not None and reached["uniform"] is not None
        assert race.oracle_calls == reached   # each side stopped where it reached ε
        gains.append(reached["uniform"] / reached["gap"])
    assert gains[0] > 1.0 and gains[0] < gains[1] < gains[2], gains


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="problem"):
        Race("mnist")
    with pytest.raises(ValueError, match="passes_per_tick"):
        Race("toy", n=4, K=2, passes_per_tick=0)
    with pytest.raises(ValueError, match="seed"):
        Race("toy", n=4, K=2, seed=-1)
    race = Race("toy", n=4, K=2)
    with pytest.raises(ValueError, match="calls"):
        race.tick(0)


def test_race_on_ocr_small_ticks_in_lockstep():
    race = Race("ocr-small", seed=2, passes_per_tick=0.05)
    assert race.n == 626 and race.calls_per_tick == 31
    for _ in range(3):
        race.tick()
    assert race.oracle_calls == {"uniform": 93, "gap": 93}
    g = race.gaps()
    assert all(0 < v < math.inf for v in g.values()) and g["uniform"] != g["gap"]
    # gap sampling's first pass visits every block once (unvisited blocks have ĝ = ∞)
    assert race.visits["gap"].max() == 1 and race.visits["gap"].sum() == 93


def test_race_view_runs_from_the_apps_refresh():
    pytest.importorskip("panel")
    from gaplab.app.main import RACE, build_app
    app = build_app(periodic=False)
    try:
        app.tabs.active = RACE
        app.refresh(force=True)
        v = app.race_view
        assert v.race.problem == "toy" and v.race.ticks == 0
        app.refresh()
        assert v.race.ticks == 0            # paused: refreshes do not step
        v.b_run.value = True               # Start
        assert v.b_run.label == "❚❚ Pause"
        for _ in range(5):
            app.refresh()
        assert v.race.ticks == 5
        calls = v.race.oracle_calls
        assert calls["uniform"] == calls["gap"] >= 5 * v.race.calls_per_tick
        assert v.hsrc["gap"].data["visits"] == v.race.visits["gap"].tolist()
        assert len(v.csrc["uniform"].data["x"]) == 6
        assert "ratio uniform / gap" in v.readout.object
        v.w_speed.value = 1.0              # speed: one effective pass per tick
        assert v.race.calls_per_tick == v.race.n
        v.b_run.value = False              # Pause
        app.refresh()
        assert v.race.ticks == 5 and "paused" in v.readout.object
        v.b_run.value = True
        app.refresh()
        v.w_n.value = 8                    # a new setting: a new race, paused
        assert v.race.n == 8 and v.race.ticks == 0 and len(v.hsrc["uniform"].data["x"]) == 8
        assert not v.race.running and v.b_run.label == "▶ Start"
        v.race.tick()
        v.b_reset.clicks += 1              # New race: the same settings from α⁰
        assert v.race.n == 8 and v.race.ticks == 0 and v.race.oracle_calls == {"uniform": 0, "gap": 0}
    finally:
        app.close()


def test_race_at_defaults_freezes_each_map_at_eps_as_app_c_teaches():
    """App. C: gap sampling visits every easy block once (after one easy step every easy block
    gap is 0, so ĝ = 0 once visited), then only the hard block; uniform sampling visits
    each easy block about as often as the hard one (t visits, t ≈ min(K, 1/(2nε)) hard steps).
    The race stops each side at ε, so its map shows the visits up to ε (past ε every gap of the
    toy is 0 and gap sampling falls back to uniform draws)."""
    race = Race()                                   # the race's defaults: toy n = 20, K = 50
    assert race.problem == "toy" and race.eps == 1e-4
    for _ in range(100_000):
        if race.over:
            break
        race.tick()
    assert race.over
    rg, ru = race.reached["gap"], race.reached["uniform"]
    assert rg is not None and ru is not None
    for side in SIDES:                              # each side stopped where it reached ε
        assert race.oracle_calls[side] == race.reached[side]
        assert race.visits[side].sum() == race.solvers[side].iteration   # (gap passes: no visits)
        assert race.curves[side][-1] == (race.reached[side], race.gaps()[side])
        assert race.gaps()[side] <= race.eps
    gv, uv = race.visits["gap"], race.visits["uniform"]
    hard_steps = int(gv[0])
    # every easy block once; the paper's "exactly once" up to one revisit: ĝᵢ is the gap measured
    # at the visit, before the step, so the first easy block visited keeps ĝᵢ = 1/n until a
    # second visit (the one easy block whose gap was not already 0) finds 0
    first_easy = next(r.block for r in race.solvers["gap"].last_steps(race.solvers["gap"].iteration)
                      if r.block != 0)
    assert np.all(gv[1:] >= 1) and np.all(gv[1:] <= 2), gv
    assert set(np.flatnonzero(gv[1:] == 2) + 1) <= {first_easy}, (gv, first_easy)
    assert gv[1:].sum() <= race.n                   # n − 1 easy blocks, at most n easy steps
    assert rg < 10 * race.n                         # before the first exact gap pass (10 passes)
    assert rg <= race.n + hard_steps                # O(n + t) oracle calls: <= n easy + t hard
    assert uv[1:].mean() >= 0.5 * hard_steps >= 10, uv   # uniform: about t visits per easy block
    assert ru >= 5 * rg
    # a stopped side does not move while the other runs on, and the first call at ε is exact:
    # one call fewer from the start leaves the gap above ε
    from gaplab.core import Solver
    s = Solver(race.model, lam=race.lam, seed=race.seed, sampling="gap", gap_check=race.gap_check,
               max_passes=1e12)
    s.steps(rg - 1)
    assert s.exact_gap(count=False).gap > race.eps
    assert "gap sampling reached ε" in race.readout() and "race is over" in race.readout()


def test_toy_size_inputs_are_disabled_with_a_reason_on_ocr_small():
    pytest.importorskip("panel")
    from gaplab.app.race import RaceView
    v = RaceView(Race("toy", n=6, K=5))
    assert not v.w_n.disabled and not v.w_K.disabled and not v.size_note.visible
    v.w_problem.value = "ocr-small"
    assert v.race.problem == "ocr-small" and v.race.n == 626
    assert v.w_n.disabled and v.w_K.disabled          # they do nothing on a data set
    assert v.size_note.visible and "toy only" in v.size_note.object and "626" in v.size_note.object
    assert "toy only" in v.w_n.description and "toy only" in v.w_K.description
    v.w_problem.value = "toy"
    assert not v.w_n.disabled and not v.w_K.disabled and not v.size_note.visible
    assert v.race.problem == "toy" and v.race.n == 6


@pytest.mark.parametrize("n, K, eps", [(20, 50, 1e-4), (20, 50, 1e-2)])
def test_reaching_eps_solves_the_hard_block_only_when_eps_le_1_over_2nK(n, K, eps):
    """Issue 34 item 15: "past ε every block gap is 0 and gap sampling draws uniformly" holds
    when reaching ε means the hard block is solved, ε <= 1/(2nK) (after t < K steps its gap is
    at least 1/(2nt), App. C): true at the defaults; with ε = 1e-2 > 1/(2nK) the gap-sampling
    side reaches ε with the hard block unsolved, and the readout says so."""
    race = Race(n=n, K=K, eps=eps)
    solves = eps <= 1 / (2 * n * K)
    assert race.eps_solves_hard_block() is solves
    calls_to_reach(race, 200 * n)
    assert race.reached["gap"] is not None
    s = race.solvers["gap"]
    hard = s.block_gap_now(0)
    if solves:
        assert hard <= 1e-12 and race.visits["gap"][0] >= K
        assert max(s.block_gap_now(i) for i in range(n)) <= 1e-12       # every block gap is 0
        s.exact_gap(count=True)                                          # the estimates too: ...
        np.testing.assert_allclose(s.sampling_probabilities(), 1 / n)   # ... uniform draws
        assert "before the hard block is solved" not in race.readout()
    else:
        assert hard >= 1 / (2 * n * race.visits["gap"][0]) * (1 - 1e-9) and race.visits["gap"][0] < K
        assert "before the hard block is solved" in race.readout()
