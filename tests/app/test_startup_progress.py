"""Start-up progress: numba's compile events are counted and named
(gaplab.core.warmup.CompileWatch), the page's banner and status line are redrawn when only the
elapsed seconds change, and the fraction is the compile work done over the work of a Step.

The live page on a cold cache is tested in tests/browser/test_startup_page.py (slow)."""
from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from gaplab.app import kernels, startup
from gaplab.app.kernels import FIRST_STEP_WORK, KernelState
from gaplab.core.warmup import CompileProgress, CompileWatch


def _fresh_function():
    """A numba function that has never been compiled (a new closure each call, no cache)."""
    from numba import njit
    offset = np.random.default_rng().random()

    @njit
    def shifted_sum(x):
        s = 0.0
        for v in x:
            s += v + offset
        return s
    return shifted_sum


def test_compile_watch_counts_and_names_a_compile():
    f = _fresh_function()
    seen = []
    from numba.core import event

    class Peek(event.Listener):   # registered after the watch: sees its state mid-compile
        def on_start(self, ev):
            seen.append(watch.progress())

        def on_end(self, ev):
            pass

    peek = Peek()
    with CompileWatch() as watch:
        event.register("numba:run_pass", peek)
        try:
            assert f(np.ones(3)) == pytest.approx(3 + 3 * f.py_func.__closure__[0].cell_contents)
        finally:
            event.unregister("numba:run_pass", peek)
        done = watch.progress()
    assert done.compiles == 1 and done.passes >= 10 and done.llvm_locks > 0
    assert done.function == "" and done.stage == ""     # nothing compiles any more
    assert done.work == pytest.approx(done.passes + done.llvm_locks / CompileProgress.LOCKS_PER_UNIT)
    names = {p.function for p in seen}
    assert any(n.endswith("shifted_sum") for n in names), names
    assert {"nopython_type_inference", "native_lowering"} <= {p.stage for p in seen}
    works = [p.work for p in seen]
    assert works == sorted(works) and works[-1] > works[0]
    # after the watch has exited, compiles are not counted
    _fresh_function()(np.ones(2))
    assert watch.progress().compiles == 1


def test_progress_key_changes_with_the_seconds_while_compiling():
    """The freeze: the page redrew the banner only when the fraction or the message changed,
    so during one long compile it showed "0 % · 3 s" for a minute."""
    a = KernelState("compiling", 0.25, "x — now: f (nopython_type_inference)", 3.2)
    b = KernelState("compiling", 0.25, "x — now: f (nopython_type_inference)", 4.1)
    assert startup.progress_key(a) != startup.progress_key(b)
    assert ">4.1 s<" in startup.banner_html(b) and "4 s" in startup.status_words(b)
    assert "25%" in startup.banner_html(b) and startup.status_words(b) == "compiling kernels 25% · 4 s"
    # ready: the seconds do not redraw anything
    r1, r2 = KernelState("ready", 1.0, "ready", 50.2), KernelState("ready", 1.0, "ready", 51.7)
    assert startup.progress_key(r1) == startup.progress_key(r2) and startup.banner_html(r1) == ""


def test_banner_escapes_what_is_compiling():
    ks = KernelState("compiling", 0.5, "now: <script>alert(1)</script> & co", 7.0)
    html = startup.banner_html(ks)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&amp; co" in html
    bg = startup.banner_html(KernelState("background", 0.3, "<b>pose</b>", 9.0))
    assert "<b>pose</b>" not in bg and "exact gap check" in bg


class _FixedWatch:
    def __init__(self, p):
        self.p = p

    def progress(self):
        return self.p


def test_fraction_is_the_compile_work_over_that_of_a_step():
    w = kernels._Warmup()
    w._thread = threading.current_thread()   # as if started
    w._status, w._message = "compiling", "ChainModel / fw, gap sampling: a block step"
    w._watch = _FixedWatch(CompileProgress(10, 1000, 15 * 500, "_run_steps_nrt_free", "native_lowering", 0.1))
    ks = w.state()
    assert ks.fraction == pytest.approx(1500 / FIRST_STEP_WORK) and ks.work == pytest.approx(1500)
    assert ks.message.endswith("— now: _run_steps_nrt_free (native_lowering)") and not ks.ready
    # a stage without events for seconds (LLVM optimising the kernel) says for how long
    w._watch = _FixedWatch(CompileProgress(10, 1000, 0, "_run_steps_nrt_free", "native_lowering", 7.4))
    assert w.state().message.endswith("(native_lowering, 7 s)")
    w._watch = _FixedWatch(CompileProgress(99, 10 * int(FIRST_STEP_WORK), 0, "", "", 0.1))
    assert w.state().fraction == 0.99          # never 100 % before the kernels are ready
    # while the compile child runs, its progress is shown (this process only loads the result)
    w._watch = _FixedWatch(CompileProgress(3, 300, 0, "", "", 0.1))   # this process: its session's solver
    w._child = CompileProgress(5, 2000, 15 * 1000, "chain_oracle", "nopython_type_inference", 0.3)
    ks = w.state()
    assert ks.fraction == pytest.approx(3000 / FIRST_STEP_WORK)
    # the child has just started, this process has compiled more (the session's own solver):
    # the larger count, never backwards
    w._child = CompileProgress(0, 10, 0, "_scratch", "translate_bytecode", 0.1)
    assert w.state().fraction == pytest.approx(300 / FIRST_STEP_WORK)
    w._child = CompileProgress(5, 2000, 15 * 1000, "chain_oracle", "nopython_type_inference", 0.3)
    assert ks.message.endswith("— now: chain_oracle (nopython_type_inference)")
    w._child, w._child_work = None, 4000.0   # the child has ended: its work counts
    w._watch = _FixedWatch(CompileProgress(1, 30, 15 * 10, "", "", 0.1))
    assert w.state().fraction == pytest.approx(4000 / FIRST_STEP_WORK)
    w._status, w._fraction = "background", 0.4   # the background phase counts warm-up jobs
    assert w.state().fraction == 0.4 and w.state().ready


def test_app_redraws_the_banner_as_the_seconds_pass(app, monkeypatch):
    """Headless app, a compile that stays at one fraction and one function: the banner and the
    status line still show the new elapsed seconds at each refresh."""
    states = iter([KernelState("compiling", 0.1, "job — now: f (native_lowering)", t) for t in (3.0, 4.0, 5.0)])
    current = {}

    def state():
        current["ks"] = next(states)
        return current["ks"]
    monkeypatch.setattr(kernels, "state", state)
    shown = []
    for _ in range(3):
        app.refresh()
        shown.append((app.banner.object, app.status.panel.object))
    assert [re.search(r"gaplab-startup-seconds'>([\d.]+) s<", b).group(1) for b, _ in shown] == ["3.0", "4.0", "5.0"]
    assert all("compiling kernels 10%" in s for _, s in shown)
    assert "5 s" in shown[-1][1]


def test_exact_gaps_wait_for_their_kernels(app, monkeypatch):
    """The exact gap pass compiles in the background phase, after the kernels of a Step; its
    button runs in the page's thread, so it stays disabled until those kernels are ready while
    Step is already enabled."""
    w = kernels._Warmup()
    w._thread = threading.current_thread()
    w._status = "compiling"
    assert not w.state().exact_gaps_ready
    w._status = "background"
    bg = w.state()
    assert bg.ready and not bg.exact_gaps_ready
    w._gaps_ready = True
    assert w.state().exact_gaps_ready
    assert kernels._Warmup().state().exact_gaps_ready   # nobody compiles: first use compiles
    monkeypatch.setattr(kernels, "state", lambda: bg)
    app.refresh()
    assert not app.b_step.disabled and app.b_exact.disabled
    # the projector bar's copies too (its "Exact gaps" is a button of its own)
    assert not app._bar_copies[app.b_step].disabled and app.b_exact_p.disabled
    monkeypatch.setattr(kernels, "state", lambda: KernelState("ready", 1.0, "ready", 60.0))
    app.refresh()
    assert not app.b_step.disabled and not app.b_exact.disabled and not app.b_exact_p.disabled


def test_compile_child_ends_when_its_parent_has_gone():
    """A server stopped while its compile child still imports must not leave the child
    compiling for a minute: a child whose parent is not the given process exits at once."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", "from gaplab.app.kernels import _child_main; _child_main(1)"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stdout == ""


def test_projector_banner_is_one_short_line_with_the_whole_note_on_hover():
    """Projector mode: the compile banner is one line (the two-line note pushed the Step tab's
    numbers table below 720 px); the whole note, escaped, is the line's tooltip."""
    from gaplab.app import startup
    from gaplab.app.kernels import KernelState
    bg = KernelState("background", 0.72, "compiling PoseModel <lsp> / fw", 51.0)
    normal, short = startup.banner_html(bg), startup.banner_html(bg, projector=True)
    assert "the first exact gap check" in normal and "the first exact gap check" not in short.split(">", 1)[1]
    assert "title='Solver ready. Still compiling in the background: compiling PoseModel &lt;lsp&gt; / fw (72%)" in short
    assert "<lsp>" not in short and "<br>" not in short and "(72%)" in short
    cold = KernelState("compiling", 0.25, "x — now: f", 3.2)
    short = startup.banner_html(cold, projector=True)
    assert "<br>" not in short and ">25%<" in short and ">3.2 s<" in short and "Run, Step ×N" in short
    assert startup.banner_html(KernelState("ready", 1.0, "ready", 50.0), projector=True) == ""


def test_fake_background_compile_shows_the_note_only_once_the_kernels_are_ready(monkeypatch):
    """The test-only switch (kernels.FAKE_BACKGROUND_ENV) turns "ready" into the background
    phase, whose banner is the compile note; a real compile in progress is reported as it is,
    and without the switch "ready" stays ready (no banner)."""
    ready = KernelState("ready", 1.0, "ready", 50.0)
    cold = KernelState("compiling", 0.25, "x", 3.2)
    for real in (ready, cold):
        monkeypatch.setattr(kernels._WARMUP, "state", lambda real=real: real)
        monkeypatch.delenv(kernels.FAKE_BACKGROUND_ENV, raising=False)
        assert kernels.state() == real
        monkeypatch.setenv(kernels.FAKE_BACKGROUND_ENV, "1")
        ks = kernels.state()
        if real is cold:
            assert ks == cold
            continue
        assert ks.status == "background" and ks.ready and ks.exact_gaps_ready
        assert "still compiling more kernels in the background (50%)" in startup.banner_html(ks, projector=True)
    monkeypatch.setattr(kernels._WARMUP, "state", lambda: ready)
    monkeypatch.setenv(kernels.FAKE_BACKGROUND_ENV, "0")
    assert kernels.state() == ready and startup.banner_html(kernels.state()) == ""


def test_a_warmup_after_another_process_waits_for_each_phase(monkeypatch):
    """``start(after=...)`` (a classroom's students' process): nothing is compiled or loaded
    before the other process has passed a phase; meanwhile the status says it waits (the pages'
    Steps go to the reference solver while it is "compiling"), and the exact gap kernels wait
    for the second phase."""
    import time

    import gaplab.core.warmup as core_warmup
    done = []
    monkeypatch.setattr(kernels._Warmup, "_compile_in_child", lambda self: done.append("child compile"))
    monkeypatch.setattr(kernels, "step_kernels", lambda: done.append("step kernels"))
    monkeypatch.setattr(kernels._Warmup, "_first_rest", lambda self, job: done.append("rest"))
    monkeypatch.setattr(core_warmup, "warmup", lambda progress=None: done.append("all kinds"))
    gates = {"first": threading.Event(), "rest": threading.Event()}
    asked = []

    def after(phase):
        asked.append(phase)
        gates[phase].wait(60)
    w = kernels._Warmup()
    assert w.start(log=False, after=after)

    def settle(phase):
        deadline = time.time() + 60
        while time.time() < deadline and asked[-1:] != [phase]:
            time.sleep(0.01)
        return w.state()
    ks = settle("first")
    assert ks.status == "compiling" and not ks.ready and "waiting for the lecturer's server" in ks.message
    assert done == []
    gates["first"].set()
    ks = settle("rest")
    assert ks.status == "background" and ks.ready and not ks.exact_gaps_ready
    assert done == ["child compile", "step kernels"]
    gates["rest"].set()
    assert w.wait(60) and w.state().status == "ready"
    assert done == ["child compile", "step kernels", "rest", "all kinds"]
