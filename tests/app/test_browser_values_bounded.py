"""Every value a browser sends is bounded and checked on the server (issue 32 items 1-3, issue 33
item 7): key counts, N of Step ×N, the settings' widgets, the race's controls, URL replays and
typed paths. Hang guards only (generous timeouts), no latency asserts."""
from __future__ import annotations

import os
import threading

import pytest

pytest.importorskip("panel")


def _in_thread(fn, timeout=30.0):
    """fn() in a daemon thread; (finished, result or exception). A hang guard: a call that
    blocks (an open of a FIFO) leaves finished False instead of hanging the test run."""
    out = {}

    def run():
        try:
            out["v"] = fn()
        except BaseException as exc:   # noqa: BLE001 - reported to the test
            out["e"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    return (not t.is_alive()), out.get("e", out.get("v"))


@pytest.fixture
def toy_app():
    from gaplab.app.main import build_app
    a = build_app(dataset="toy", periodic=False)
    assert a.session.wait_idle(120)
    yield a
    a.close()


# ----------------------------------------------------------------------------- keys
def test_counts_are_parsed_strictly():
    from gaplab.app.keys import MAX_COUNT, MAX_COUNTS_LEN, parse_counts
    assert parse_counts("back:63,step:10") == {"back": 63, "step": 10}
    assert parse_counts("") == {}
    for bad in ("step:x", "bogus:3", "step:-5", "step:1,step:2", "step:²", "step:1e9", "step",
                "step:" + "9" * 10, f"step:{MAX_COUNT + 1}", "back:1," * 30, "x" * (MAX_COUNTS_LEN + 1), None, 5):
        assert parse_counts(bad) is None, bad


def test_a_huge_step_count_acts_on_at_most_the_cap(toy_app):
    from gaplab.app.keys import PRESS_CAPS
    from gaplab.app.session.jobs import MAX_KEY_STEPS
    s = toy_app.session
    seen = []
    toy_app.keys.param.watch(lambda e: seen.append(e.new), "press")
    done, _ = _in_thread(lambda: setattr(toy_app.keys, "counts", "step:100000"), 30)
    assert done, "setting counts='step:100000' did not return (stepping on the caller's thread?)"
    assert s.wait_idle(120)
    cap = min(PRESS_CAPS["step"], MAX_KEY_STEPS)
    assert 1 <= s.snapshot.iteration <= cap
    assert len(seen) == 1 and toy_app.keys.dropped == 100000 - PRESS_CAPS["step"]
    texts = [t for _lvl, t in s.messages()]
    assert sum("presses dropped" in t for t in texts) == 1
    # the dropped presses are never acted on later: the next message's one press is one step
    it = s.snapshot.iteration
    toy_app.keys.counts = "step:100001"
    assert s.wait_idle(120) and s.snapshot.iteration == it + 1


def test_a_hostile_press_value_is_capped_too(toy_app):
    from gaplab.app.keys import PRESS_CAPS
    s = toy_app.session
    toy_app.keys.press = "step:1:999999999"    # the page may set press itself
    assert s.wait_idle(120)
    assert 1 <= s.snapshot.iteration <= PRESS_CAPS["step"]


def _record_step_threads(session) -> list:
    """The threads ``session`` takes its single steps in, appended as it takes them."""
    stepped_in = []
    orig = type(session)._single_step

    def spy(self):
        stepped_in.append(threading.current_thread())
        return orig(self)
    session._single_step = spy.__get__(session)
    return stepped_in


def test_key_steps_run_in_the_worker_and_match_single_steps(toy_app):
    from gaplab.app.session import Session
    s = toy_app.session
    main = threading.current_thread()
    stepped_in = _record_step_threads(s)
    toy_app.keys.counts = "step:7"
    assert s.wait_idle(120) and s.snapshot.iteration == 7
    assert stepped_in and all(t is not main for t in stepped_in)
    ref = Session(dataset="toy")
    try:
        assert ref.wait_idle(120)
        for _ in range(7):
            ref.step()
        assert (ref.solver.w == s.solver.w).all()     # the same run, bitwise
        assert s.snapshot.last_step.block == ref.snapshot.last_step.block
    finally:
        ref.close()


def test_step_button_clicks_run_in_the_worker_and_match_a_k_step_run(toy_app):
    """The Step button (the sidebar's and the projector bar's) takes its step in the session's
    worker, never in the thread that handles the click; k clicks are the run of one Step ×k
    with the same seed, bitwise."""
    from gaplab.app.session import Session
    s = toy_app.session
    main = threading.current_thread()
    stepped_in = _record_step_threads(s)
    for k in range(6):
        (toy_app.b_step if k % 2 else toy_app._bar_copies[toy_app.b_step]).clicks += 1
        assert s.wait_idle(120)
    assert s.snapshot.iteration == 6 and len(stepped_in) == 6
    assert all(t is not main for t in stepped_in)
    ref = Session(dataset="toy")
    try:
        assert ref.wait_idle(120)
        ref.step_n(6)
        assert ref.wait_idle(120) and ref.snapshot.iteration == 6
        assert (ref.solver.w == s.solver.w).all()     # the same run, bitwise
        assert (ref.solver.gap_estimates == s.solver.gap_estimates).all()
    finally:
        ref.close()


def test_back_past_the_history_gives_one_notice(toy_app):
    s = toy_app.session
    toy_app.keys.counts = "step:5"
    assert s.wait_idle(120) and s.snapshot.iteration == 5
    before = len(s.messages())
    for k in range(1, 131):          # held ←: 130 presses in as many messages
        toy_app.keys.counts = f"back:{k}"
        assert s.wait_idle(120)
    assert s.snapshot.iteration == 0
    refused = [t for _lvl, t in s.messages(before) if "not reachable" in t]
    assert len(refused) == 1
    # many presses in one message also go as far as the history reaches, with one notice
    toy_app.on_key("step", 5)
    assert s.wait_idle(120) and s.snapshot.iteration == 5
    before = len(s.messages())
    toy_app.on_key("back", 200)
    toy_app.on_key("back", 200)
    assert s.wait_idle(120) and s.snapshot.iteration == 0
    assert len([t for _lvl, t in s.messages(before) if "not reachable" in t]) == 1


def test_run_key_answers_while_key_steps_wait(toy_app):
    s = toy_app.session
    s.max_passes = 1e6
    toy_app.on_key("step", 30)
    toy_app.on_key("run", 1)           # r: Run takes over from the queued Steps
    assert s.status == "running" or s.snapshot.status == "running"
    toy_app.on_key("run", 1)           # r again: Pause
    assert s.wait_idle(60) and s.status == "paused"


# ----------------------------------------------------------------------------- widgets
def test_step_n_refuses_a_huge_n_with_a_notice(toy_app):
    s = toy_app.session
    lo, hi = type(s).param.n_steps.bounds
    s.step_n(hi + 1)
    s.step_n(10 ** 15)
    s.step_n(-3)
    assert s.wait_idle(30) and s.snapshot.iteration == 0 and not s.running
    texts = [t for _lvl, t in s.messages()]
    assert sum("Step ×N: N must be an integer in" in t for t in texts) == 3


@pytest.mark.parametrize("pname, bad", [("n_steps", 10 ** 15), ("n_steps", -4), ("lam", 1e300),
                                        ("lam", float("nan")), ("sampling", "no-such-sampler"),
                                        ("seed", -1), ("seed", 2 ** 70)])
def test_a_widget_value_its_setting_refuses_is_said_and_reverted(toy_app, pname, bad):
    s = toy_app.session
    w = toy_app.widgets[pname]
    before = getattr(s, pname)
    try:
        w.value = bad                     # what a page can send to the widget's model
        reached_the_link = True
    except Exception:   # noqa: BLE001 - the widget's own type check refused it first: fine
        reached_the_link = False
    assert getattr(s, pname) == before
    assert w.value == before, f"the widget still shows the refused value {w.value!r}"
    if reached_the_link:
        texts = [t for _lvl, t in s.messages()]
        assert any("must be" in t and "Kept" in t for t in texts), texts[-3:]


def test_race_refuses_a_huge_toy_and_keeps_its_race():
    from gaplab.app.race import Race, RaceView
    with pytest.raises(ValueError, match="n must be an int in"):
        Race("toy", n=10 ** 9, K=5)
    with pytest.raises(ValueError, match="K must be an int in"):
        Race("toy", n=10, K=10 ** 9)
    v = RaceView(Race("toy", n=10, K=3))
    old = v.race
    try:
        v.w_n.value = 10 ** 9              # a page's value beyond the widget's end
        assert "Race not changed" in v.readout.object
    except ValueError:                     # the widget's own check refused it first: fine
        pass
    assert v.race is old and v.w_n.value == 10


# ----------------------------------------------------------------------------- URL replay
def test_url_restore_returns_at_once_and_replays_in_the_worker():
    from gaplab.app.session import Session
    from gaplab.app.urlstate import parse_query, restore
    req = parse_query("?dataset=ocr-small&steps=3000", Session)
    s = Session(dataset="ocr-small")
    try:
        assert s.wait_idle(300)
        caller = threading.current_thread()
        chunks = []
        orig = type(s)._replay_fast

        def spy(self, left):
            chunks.append((threading.current_thread(), left))
            return orig(self, left)
        s._replay_fast = spy.__get__(s)
        done, _ = _in_thread(lambda: restore(s, req, wait=False), 30)
        assert done
        assert s.wait_idle(600) and s.snapshot.iteration == 3000 and s.status == "paused"
        assert chunks and all(t is not caller for t, _ in chunks)
        assert chunks[-1][1] == 1           # the last step taken as a single Step
        assert s.snapshot.last_step is not None and s.snapshot.last_step.iteration == 2999
        assert s.snapshot.note == ""         # no "replaying" left in the status line
        ref = Session(dataset="ocr-small")   # the same state as 3000 steps taken at once
        try:
            assert ref.wait_idle(300)
            ref.solver.steps(3000)
            assert (ref.solver.w == s.solver.w).all()
        finally:
            ref.close()
    finally:
        s.close()


def test_a_replay_says_what_it_does_and_stops_when_the_session_closes():
    from gaplab.app.session import Session
    s = Session(dataset="ocr-small")
    assert s.wait_idle(300)
    assert s.replay(200_000)
    assert s.status == "loading" and "replaying the URL's steps" in s.snapshot.note
    s.close()
    assert s.wait_idle(30), "the replay went on after the session closed"


@pytest.mark.parametrize("query, word", [("?steps=-5", "steps"), ("?dataset=nonexistent", "dataset"),
                                         ("?lesson=99", "lesson"), ("?steps=200001", "steps")])
def test_bad_url_values_give_a_notice_that_stays(query, word):
    from gaplab.app.main import GapLabApp
    from gaplab.app.session import Session
    from gaplab.app.urlstate import parse_query
    req = parse_query(query, Session)
    assert any(repr(word) in t for t in req.notices)
    app = GapLabApp(Session(dataset="toy"), periodic=False, url=req)
    try:
        assert app.session.wait_idle(120)
        app._apply_url()
        assert req.notices and all(t in app._persistent for t in req.notices)
    finally:
        app.close()


def test_replay_bounds():
    from gaplab.app.session.jobs import MAX_REPLAY_STEPS
    from gaplab.app.urlstate import MAX_URL_STEPS
    from gaplab.app.session import Session
    assert MAX_REPLAY_STEPS == MAX_URL_STEPS
    s = Session(dataset="toy")
    try:
        for bad in (-1, MAX_URL_STEPS + 1, 2.5, True):
            with pytest.raises(ValueError, match="steps must be an int in"):
                s.replay(bad)
    finally:
        s.close()


# ----------------------------------------------------------------------------- typed paths
def test_a_fifo_is_refused_without_opening_it(tmp_path):
    from gaplab.app.typed_paths import TypedPathError, check_typed_path
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done, res = _in_thread(lambda: check_typed_path(str(fifo)), 30)
    assert done, "checking a FIFO blocked (opened it?)"
    assert isinstance(res, TypedPathError) and "not a regular file or folder" in str(res)
    done, res = _in_thread(lambda: check_typed_path(str(fifo), roots=[tmp_path]), 30)
    assert done and isinstance(res, TypedPathError)


def test_a_fifo_store_path_is_refused_by_open_store(tmp_path, sess):
    fifo = tmp_path / "store-fifo"
    os.mkfifo(fifo)
    done, ok = _in_thread(lambda: sess.path.open_store(str(fifo)), 60)
    assert done, "Open store blocked on a FIFO"
    assert ok is False
    assert any("not a regular file" in t for _lvl, t in sess.messages())


def test_devices_and_system_folders_are_refused():
    from gaplab.app.typed_paths import TypedPathError, check_typed_path
    for p in ("/dev/zero", "/dev/stdin", "/proc/self/environ", "/sys/kernel", "/proc"):
        done, res = _in_thread(lambda p=p: check_typed_path(p), 30)
        assert done and isinstance(res, TypedPathError), p


def test_core_regpath_open_refuses_dev_zero_and_a_fifo(tmp_path):
    from gaplab.core.regpath import PathFileError, RegPath
    fifo = tmp_path / "f.npz"
    os.mkfifo(fifo)
    for p in ("/dev/zero", str(fifo)):
        done, res = _in_thread(lambda p=p: RegPath.open(p), 30)
        assert done, f"RegPath.open({p!r}) blocked or read without end"
        assert isinstance(res, PathFileError) and "not a regular file or a directory" in str(res)
    store = tmp_path / "store"
    store.mkdir()
    os.mkfifo(store / "manifest.json")
    done, res = _in_thread(lambda: RegPath.open(str(store)), 30)
    assert done and isinstance(res, ValueError) and "not a regular file" in str(res)


def test_outside_the_roots_the_message_does_not_say_whether_a_path_exists(tmp_path):
    from gaplab.app.typed_paths import TypedPathError, check_typed_path
    root = tmp_path / "lecture"
    root.mkdir()
    (root / "store").mkdir()
    outside = tmp_path / "secret"
    outside.write_text("x")
    msgs = []
    for p in (outside, tmp_path / "missing", "/etc/passwd", "/root/.ssh/id_rsa", "/no/such/file",
              root / ".." / "secret"):
        with pytest.raises(TypedPathError) as ei:
            check_typed_path(str(p), roots=[root])
        msgs.append(str(ei.value))
    assert len(set(msgs)) == 1 and msgs[0].startswith("not allowed: paths must be under")
    # a symbolic link inside the roots that leads outside is outside
    (root / "link").symlink_to(outside)
    with pytest.raises(TypedPathError, match="not allowed"):
        check_typed_path(str(root / "link"), roots=[root])
    assert check_typed_path(str(root / "store"), roots=[root]) == (root / "store").resolve()


def test_reads_are_size_limited(tmp_path):
    from gaplab.app.typed_paths import TypedPathError, read_limited
    f = tmp_path / "big"
    f.write_bytes(b"a" * 1000)
    assert read_limited(f, 1000) == b"a" * 1000
    with pytest.raises(TypedPathError, match="larger than"):
        read_limited(f, 999)
    done, res = _in_thread(lambda: read_limited("/dev/zero", 10), 30)
    assert done and isinstance(res, TypedPathError)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done, res = _in_thread(lambda: read_limited(fifo, 10), 30)
    assert done and isinstance(res, TypedPathError)


def test_the_toy_and_path_tabs_refuse_values_beyond_their_settings(toy_app):
    from gaplab.app.main import PATH, TOY
    toy_app._ensure_tab(TOY)
    toy_app._ensure_tab(PATH)
    for lab, view, name, bad in ((toy_app.toy, toy_app._toy_view, "n", 10 ** 9),
                                 (toy_app.session.path, toy_app._path_view, "eps", 1e9)):
        before = getattr(lab, name)
        view.widgets[name].value = bad
        assert getattr(lab, name) == before and view.widgets[name].value == before
        level, text = toy_app.session.messages()[-1]
        assert level == "error" and "must be" in text and f"Kept {name if name == 'n' else 'ε'}" in text
