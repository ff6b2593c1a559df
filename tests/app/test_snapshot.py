"""One set of numbers on screen, headless: the status line, the anatomy and the
per-block bars drawn in one refresh come from one published snapshot; the steps/s rate is
measured between snapshots without counting a step twice; the session's trace stays bounded."""
from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest

pytest.importorskip("panel")

from gaplab.app.session import Session  # noqa: E402


def _int(text):
    return int(text.replace(",", ""))


def _record_snapshots(monkeypatch, session):
    """Every snapshot the app reads, by version (the app reads ``Session.snapshot``)."""
    seen = {}
    prop = Session.snapshot

    def read(self):
        snap = prop.fget(self)
        seen[snap.version] = snap
        return snap

    monkeypatch.setattr(Session, "snapshot", property(read))
    return seen


def _check_frame(app, seen):
    """The numbers on the Step tab after one refresh: one snapshot, or a stated lag."""
    status = app.status.panel.object
    it = _int(re.search(r"iteration <b>([\d,]+)</b>", status).group(1))
    table = app.anatomy.table.object
    step = _int(re.search(r"#([\d,]+) &nbsp;", table).group(1))
    lag = re.search(r"last drawn step: #([\d,]+), ([\d,]+) steps? ago", table)
    if step != it:
        # the anatomy shows an earlier step: it must say so, in steps
        assert lag is not None, (it, step)
        assert _int(lag.group(1)) == step and _int(lag.group(2)) == it - step
    # the bars: drawn from the snapshot whose iteration the status line shows
    snap = seen[app.blocks._version]
    assert snap.iteration == it, (snap.iteration, it)
    g = np.asarray(snap.gap_estimates, dtype=np.float64)
    bars = np.asarray(app.blocks.src.data["gap"], dtype=np.float64)
    assert bars.shape == g.shape
    assert np.array_equal(np.isfinite(bars), np.isfinite(g))
    assert np.allclose(bars[np.isfinite(g)], g[np.isfinite(g)], rtol=0, atol=0)
    # the same heuristic gap in the status line and above the bars
    h_status = re.search(r"heuristic gap <b>([^<]+)</b>", status).group(1)
    h_bars = re.search(r"heuristic gap</b> Σᵢ ĝᵢ = ([^ ]+)", app.blocks.info.object).group(1)
    assert h_status == h_bars, (h_status, h_bars)
    return it


def _watch(app, seconds, until_idle=False):
    """Refresh the app as its periodic callback would (every ~30 ms) and check every frame."""
    s = app.session
    frames = set()
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end and not (until_idle and not s.running):
        app.refresh()
        if s.snapshot.iteration:
            frames.add(_check_frame(app, app._seen))
        time.sleep(0.03)
    return frames


@pytest.fixture
def step_tab(app, monkeypatch):
    s = app.session
    s.param.update(speed=math.inf, max_passes=1e6, sampling="gap", step_kind="fw", cache=False)
    s.reset()
    app.tabs.active = 0
    app._seen = _record_snapshots(monkeypatch, s)
    app.blocks.MAX_BARS = s.snapshot.n              # one bar per block (compared value by value)
    s.step()                                        # compiled before any timing
    app.refresh(force=True)
    yield app
    s.pause()


def test_a_run_at_unlimited_speed_shows_one_snapshot_per_frame(step_tab):
    app = step_tab
    s = app.session
    s.run()
    frames = _watch(app, 2.0)
    s.pause()
    assert len(frames) >= 3                          # the numbers moved while watched
    app.refresh()
    _check_frame(app, app._seen)
    assert s.snapshot.iteration > 1000


def test_step_n_shows_one_snapshot_per_frame(step_tab):
    app = step_tab
    s = app.session
    s.step_n(2_000_000)
    frames = _watch(app, 1.5)
    s.pause()
    assert len(frames) >= 3
    s.param.update(speed=20.0)
    s.step_n(30)
    _watch(app, 5.0, until_idle=True)
    assert s.wait_idle(10)
    app.refresh()
    assert _check_frame(app, app._seen) == s.snapshot.iteration


@pytest.mark.parametrize("projector", [False, True])
def test_a_run_refreshes_the_step_tab_at_least_four_times_per_second(step_tab, projector):
    """While a run goes, the app's periodic refresh (every REFRESH_MS = 100 ms) draws a frame of
    the Step tab (bars, anatomy and status line, one snapshot) at least 4 times per second:
    the bars and the numbers stay live during Run. The clock is the frame's (``now``), so
    the count does not depend on the machine's load."""
    from gaplab.app.main import REFRESH_MS
    app = step_tab
    if projector:
        app.set_projector(True)
    s = app.session
    s.run()
    try:
        frame = app._frame
        t0 = frame.t
        drawn = []
        for k in range(1, 21):   # two seconds of ticks
            time.sleep(0.01)
            snap = s.snapshot
            if frame.draw(snap, app.visible_views(), app.status, running=True, now=t0 + k * REFRESH_MS / 1e3):
                drawn.append(snap.version)
                # every visible view and the status line show the frame's snapshot
                assert all(v._version == snap.version for v in app.visible_views())
                assert app.status._version == snap.version
        assert len(drawn) >= 8, drawn
    finally:
        s.pause()


def test_rate_of_step_n_at_two_steps_per_second(step_tab):
    """Step ×N at 2 steps/s: the rate shown is 2 (within 25 %) from the moment it is shown; it
    is not shown before the run has published two snapshots."""
    app = step_tab
    s = app.session
    s.param.update(speed=2.0)
    s.step_n(6)
    shown, first = [], None
    t0 = time.perf_counter()
    while s.running and time.perf_counter() - t0 < 10:
        app.refresh()
        snap = s.snapshot
        m = re.search(r"([\d,.]+) steps/s", app.status.panel.object)
        if m:
            shown.append(float(m.group(1).replace(",", "")))
            first = snap.iteration if first is None else first
        time.sleep(0.02)
    assert s.wait_idle(10) and s.snapshot.iteration == 7
    assert shown, "the rate was never shown during the run"
    assert all(1.5 <= r <= 2.5 for r in shown), shown
    # the first snapshot of the run (one step done) has no rate yet: two are needed
    assert first is not None and first >= 3          # iteration 1 before the run, 2 after its first step


# ------------------------------------------------------------------------ the session's trace memory
def test_a_long_run_keeps_the_session_trace_bounded():
    """Thousands of passes at unlimited speed: the session keeps a bounded number of trace
    records (about 8 × 1024 at most), with the first and the last record and every gap check."""
    s = Session(dataset="toy")
    try:
        assert s.wait_idle(60)
        s.param.update(max_passes=12_000, speed=math.inf, gap_check=10)
        s.run()
        assert s.wait_idle(120) and s.status == "budget"
        snap = s.snapshot
        made = s.solver.n_trace_records
        kept = snap.trace
        assert made > 12_000 and len(kept) <= 8_200, (made, len(kept))
        # the first record and the solver's last one (a run that ends on its pass budget may
        # stop a few steps after the last pass record)
        assert kept[0]["effective_passes"] <= 1.0
        assert kept[-1]["iteration"] == s.solver.trace()[-1]["iteration"] <= snap.iteration
        checks = [r for r in kept if r["kind"] == "gap_check"]
        # every gap check kept (a check pass counts as one effective pass: one every 11)
        assert len(checks) == int(snap.effective_passes // 11) > 1000
        assert len(snap.active_history) <= 8_200
    finally:
        s.close()


def test_thinned_trace_draws_the_same_curves_at_plot_resolution():
    """The kept records span, in every bucket of passes, the same range of heuristic gaps
    between the same first and last records as all the records: a plot whose pixels are
    at least a bucket wide draws the same line."""
    from gaplab.app.session.tracekeep import TraceKeeper
    from gaplab.core import Solver, SolverConfig
    from gaplab.core.problems import get_problem  # noqa: F401  (registers the toy problem)
    from gaplab.app.session import load_problem
    prob = load_problem("toy")
    sv = Solver(prob.model, SolverConfig(lam=prob.default_lam, sampling="gap", gap_check=7,
                                         max_passes=1e9), trace_limit=10**9)
    keep = TraceKeeper(buckets=16)
    for _ in range(60):
        sv.steps(10 * sv.n)
        keep.fetch(sv)
    full = sv.trace()
    assert len(full) > 8 * 16 >= len(keep) and keep.width > 0
    kept = keep.records
    assert kept[0] == full[0] and kept[-1] == full[-1]
    for kind, key in (("pass", "heuristic_gap"), ("gap_check", "exact_gap")):
        def buckets(rs):
            out = {}
            for r in rs:
                if r["kind"] == kind:
                    out.setdefault(math.floor(r["effective_passes"] / keep.width), []).append(r[key])
            return out
        a, b = buckets(full), buckets(kept)
        assert a.keys() == b.keys()
        for j in a:
            assert (a[j][0], a[j][-1], min(a[j]), max(a[j])) == (b[j][0], b[j][-1], min(b[j]), max(b[j]))


def test_step_info_is_built_from_the_core_step_record():
    """The anatomy of a step is the core's StepRecord (one field list) plus what the app draws:
    every record field is carried over under its own name, the corners as the model's display
    labellings, and ``gap_before`` is the record's block gap estimate."""
    from dataclasses import fields

    from gaplab.app.session import StepInfo
    from gaplab.core.solver_records import StepRecord
    rec = StepRecord(iteration=7, block=3, kind="pairwise", cache_hit=True, drop=False, oracle_called=False,
                     gamma=0.25, gamma_max=0.5, block_gap_estimate=0.125, direction_gap=0.0625,
                     improvement=0.03125, active_set_size=2, fw_corner=np.array([1, 2]),
                     away_corner=np.array([0, 2]))
    st = StepInfo.from_record(rec, gap_after=0.1, truth=(1, 1), fw_corner=(1, 2), away_corner=(0, 2))
    record_names = [f.name for f in fields(StepRecord)]
    assert [f.name for f in fields(StepInfo)][:len(record_names)] == record_names
    for name in record_names:
        if name not in ("fw_corner", "away_corner"):
            assert getattr(st, name) == getattr(rec, name), name
    assert (st.fw_corner, st.away_corner, st.truth, st.gap_after) == ((1, 2), (0, 2), (1, 1), 0.1)
    assert st.gap_before == rec.block_gap_estimate


# ------------------------------------------------------------------------ frames the page has painted
class _View:
    RUNNING_MIN_INTERVAL_S = 0.15

    def __init__(self):
        self.seen = []

    def update(self, snap, force=False):
        self.seen.append(snap)


def test_a_running_frame_waits_until_the_page_has_painted_the_last_one():
    """While a run goes a new frame is sent only once the page says it painted the previous one
    (one frame in flight; the newest snapshot when it is sent), or after ACK_TIMEOUT_S without
    an answer; a page that never answered (headless, no page) gets frames at the views' pace;
    a frame that is not a run's (a Step, Pause, the end of a run) is sent at once."""
    from gaplab.app.views.frame import ACK_TIMEOUT_S, Frame
    view, status = _View(), _View()
    f = Frame(ack=True)

    def draw(snap, now, running=True):
        return f.draw(snap, [view], status, running=running, now=now)
    assert draw("a", 0.0) and f.ack.sent == 1
    assert not draw("b", 0.1)                      # the views' pace (0.15 s)
    assert draw("b", 0.2) and f.ack.sent == 2      # no answer from the page yet: not waited for
    f.ack.applied = 2                              # the page painted frame 2
    assert draw("c", 0.4) and f.ack.sent == 3
    assert not draw("d", 0.6) and not draw("e", 1.0)   # frame 3 not painted yet
    assert view.seen[-1] == "c" and status.seen[-1] == "c"
    f.ack.applied = 3
    assert draw("f", 1.1)                          # the newest snapshot, not the ones skipped
    assert view.seen == ["a", "b", "c", "f"] and status.seen == view.seen
    assert not draw("g", 1.1 + ACK_TIMEOUT_S - 0.01)
    assert draw("g", 1.1 + ACK_TIMEOUT_S)          # a page that stopped answering still gets frames
    assert draw("h", 1.2 + ACK_TIMEOUT_S, running=False)   # paused: drawn at once, painted or not
    assert view.seen[-1] == "h"
    # without an acknowledging page (Frame() as before): the views' pace only
    g = Frame()
    assert g.draw("a", [view], status, running=True, now=0.0) and g.ack is None
    assert g.draw("b", [view], status, running=True, now=0.2)
