"""Loading a dataset in the app: one load per dataset however many sessions ask, its progress
told to each of them (the status line: what it does, images done / total, seconds), a bounded
set of datasets kept for all sessions, and no loading text that promises a duration."""
from __future__ import annotations

import threading

import pytest

from gaplab.app.session import LoadStopped, ProblemCache, Session
from gaplab.app.wording import load_words
from gaplab.core.problems import register_problem, unregister_problem


class Gate:
    """A loader that reports 'superpixels' k / 3 and waits for the test before each image."""

    def __init__(self):
        self.calls = 0
        self.step = threading.Semaphore(0)

    def loader(self, data_home=None, progress=None):
        self.calls += 1
        for k in range(3):
            if progress is not None:
                progress("superpixels", k, 3)
            assert self.step.acquire(timeout=120), "the test never let the loader go on"
        from gaplab.toy_examples.hard_easy import make_hard_easy
        model, _lam, _info = make_hard_easy(4, 3)
        return model, None, {}


@pytest.fixture
def gated():
    gate = Gate()
    name = "slow-test-problem"
    register_problem(name, gate.loader, None, default_lam=0.25, description="a gated loader (tests)")
    yield name, gate
    unregister_problem(name)


def test_load_words_say_what_and_how_far_never_how_long():
    w = load_words("superpixels", 120, 328, 45.4)
    assert "120 / 328 images" in w and "45 s" in w and "superpixels" in w
    assert "few seconds" not in load_words("", 0, 0, 0.0)
    assert load_words("", 0, 0, 7.2).endswith("7 s…")


def test_sessions_asking_at_once_share_one_load_and_hear_its_progress(gated):
    name, gate = gated
    lines = []
    cache = ProblemCache(2, log=lines.append)
    heard, got = [[], []], [None, None]

    def ask(j):
        got[j] = cache.get(name, progress=lambda *a: heard[j].append(a), poll_s=0.02)

    threads = [threading.Thread(target=ask, args=(j,)) for j in range(2)]
    for t in threads:
        t.start()
    for k in range(3):   # each waiter hears the image count advance while the loader waits
        for j in range(2):
            _wait(lambda: any(h[:3] == ("superpixels", k, 3) for h in heard[j]), f"waiter {j} hears image {k}")
        gate.step.release()
    for t in threads:
        t.join(120)
    assert gate.calls == 1 and got[0] is got[1] and got[0].name == name
    assert all(h[3] >= 0 for h in heard[0] + heard[1])
    assert cache.get(name) is got[0] and gate.calls == 1   # kept: not loaded again
    assert lines and name in lines[-1] and "at most 2" in lines[-1]


def test_a_waiter_may_stop_waiting_and_the_load_is_kept(gated):
    name, gate = gated
    cache = ProblemCache(2, log=lambda line: None)
    stop = threading.Event()
    err = []

    def ask():
        try:
            cache.get(name, should_stop=stop.is_set, poll_s=0.02)
        except LoadStopped as exc:
            err.append(exc)

    t = threading.Thread(target=ask)
    t.start()
    stop.set()
    t.join(60)
    assert not t.is_alive() and len(err) == 1
    for _ in range(3):
        gate.step.release()
    problem = cache.get(name, poll_s=0.02)   # the same load, finished in the background
    assert gate.calls == 1 and problem.name == name


def test_the_cache_keeps_the_most_recent_datasets_and_the_log_names_them():
    lines = []
    cache = ProblemCache(2, log=lines.append)
    for name, opts in (("toy", (("K", 3), ("n", 4))), ("toy", (("K", 4), ("n", 4))), ("multilabel-toy", (("n", 5),))):
        cache.get(name, opts)
    kept = cache.kept()
    assert kept == [("toy", (("K", 4), ("n", 4))), ("multilabel-toy", (("n", 5),))]
    assert "toy (K=4, n=4), multilabel-toy (n=5)" in lines[-1] and "at most 2" in lines[-1]
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        ProblemCache(0)


def test_the_status_note_follows_the_load_and_clears_when_it_is_done(gated):
    name, gate = gated
    s = Session(dataset=name)
    try:
        for k in range(3):
            _wait(lambda: f"{k} / 3 images" in s.snapshot.note, f"the note shows image {k} of 3")
            assert s.snapshot.status == "loading" and "few seconds" not in s.snapshot.note
            gate.step.release()
        assert s.wait_idle(120)
        snap = s.snapshot
        assert snap.status == "idle" and snap.note == "" and snap.n == 4 and snap.dataset == name
    finally:
        s.close()


def _wait(fn, what, timeout=60.0):
    import time
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if fn():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting until {what}")
