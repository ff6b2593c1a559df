"""Whether the solver's numba kernels are compiled in this process, and a background compile.

The numba kernels are compiled on first use (about a minute on a fresh install, seconds when
the on-disk cache of ``cache=True`` is present). A page whose buttons answer only after that
minute looks broken, so the app compiles them in a background thread as soon as the server
starts (:func:`start`), keeps the buttons that need them disabled and shows the progress
(:func:`state`) until they are ready. The kernels of a Step compile in a child process whose
progress is read line by line (numba's on-disk cache carries the machine code over), so that the
server's thread keeps drawing the page.

The state is per process on purpose: compiled kernels are shared by every session of the
process (a second browser tab never compiles again). No Panel import.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from gaplab.core.warmup import CompileProgress

__all__ = ["KernelState", "start", "state", "wait", "yield_to_page", "page_loaded", "COMPILE_NOTE",
           "FAKE_BACKGROUND_ENV"]

#: Test-only: with this environment variable set to "1" in the server's environment, once the
#: kernels are ready :func:`state` reports the background phase ("background", 50 %), so the page
#: shows the background-compile note while every button works (the projector's fit with the
#: note is checked this way; a real background compile ends at a time a test cannot choose).
FAKE_BACKGROUND_ENV = "GAPLAB_TEST_FAKE_BACKGROUND_COMPILE"

#: what the page says while the kernels compile
COMPILE_NOTE = "compiling solver kernels (once per install, about a minute)"

#: Compile work (:attr:`gaplab.core.warmup.CompileProgress.work`: numba's compiler passes and
#: LLVM lock acquisitions) of the kernels a first Step needs on a cold cache; the fraction shown
#: while they compile is the work done over this (at most 99 % until they are ready). A count of
#: the code, not of seconds: a cold-cache test checks it stays within 30 % of the real count.
FIRST_STEP_WORK = 5000.0


@dataclass(frozen=True)
class KernelState:
    """A moment of the background compile.

    Attributes
    ----------
    status : str
        "not started" (nobody asked for a compile: the buttons compile on first use),
        "compiling" (the kernels of the default settings: Step, Run and exact gaps with FW
        steps and gap sampling), "background" (those are ready; the other step kinds, the cache,
        box constraints and the path still compile: choosing them may make the first step
        wait), "ready" or "failed".
    fraction : float
        Progress in [0, 1]: while "compiling", the compile work done over
        :data:`FIRST_STEP_WORK`; in the background phase, warm-up jobs done over all jobs (not
        seconds).
    message : str
        What is being compiled now: the warm-up job and numba's current function and compiler
        pass (or the error, when failed).
    elapsed_s : float
        Seconds since the compile started (its total once ready).
    work : float
        Compile work done so far in this process (see :data:`FIRST_STEP_WORK`).
    exact_gaps_ready : bool
        The kernels of an exact gap pass are compiled (or nobody compiles them in the
        background): "Compute exact gaps" runs in the page's own thread, so it waits for them
        with its button disabled rather than freezing the page.
    """

    status: str
    fraction: float
    message: str
    elapsed_s: float
    work: float = 0.0
    exact_gaps_ready: bool = True

    @property
    def ready(self) -> bool:
        """The buttons may run the solver without a compile pause ("not started" counts as
        ready: nobody is compiling in the background, a first Step compiles what it needs)."""
        return self.status in ("ready", "background", "not started", "failed")


class _Warmup:
    def __init__(self):
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = None
        self._status = "not started"
        self._fraction = 0.0
        self._message = ""
        self._t0 = 0.0
        self._t1 = None
        self._yield_until = 0.0   # the background phase waits until then (a page is being built)
        self._watch = None        # gaplab.core.warmup.CompileWatch while the compile thread runs
        self._first_work = None   # compile work of the first phase (the Step kernels)
        self._gaps_ready = False  # the exact gap pass kernels are compiled
        self._child = None        # the compile child's last CompileProgress while it runs
        self._child_work = 0.0    # its compile work once it has ended
        self._after = None        # after(phase) blocks until another process has compiled the phase

    def start(self, *, log=True, extra=None, after=None) -> bool:
        """Start the compile thread (idempotent: False if it was already started)."""
        with self._lock:
            if self._thread is not None:
                return False
            self._status = "compiling"
            self._message = "starting"
            self._t0 = time.perf_counter()
            self._after = after
            self._thread = threading.Thread(target=self._job, args=(log, extra), name="gaplab-warmup",
                                            daemon=True)
            self._thread.start()
        return True

    def _progress(self, fraction, message):
        with self._lock:
            self._fraction = float(fraction)
            self._message = str(message)
            background = self._status == "background"
        # Between two background jobs: let a page that is being built have the CPU (on two
        # cores the warm-up of the other model kinds had doubled the first page's load time)
        while background and time.perf_counter() < self._yield_until:
            time.sleep(0.05)

    def yield_to_page(self, seconds: float) -> None:
        with self._lock:
            self._yield_until = max(self._yield_until, time.perf_counter() + float(seconds))

    def page_loaded(self) -> None:
        with self._lock:
            self._yield_until = 0.0

    def _first(self):
        """The kernels a Step of the default settings needs (:func:`step_kernels`): compiled in a
        child process, then loaded here from numba's on-disk cache. A compile in this process
        holds the GIL in turns with the server's thread, and on a busy machine the thread
        holding it is often descheduled, so the page's progress stood still for seconds; the
        child leaves this process free to draw it. Without the child (it failed, or the cache
        cannot be written) the kernels compile here."""
        from gaplab.core.problems import warmup_plan
        job = warmup_plan(["ocr-small"])[0]
        self._wait_for_other("first")
        self._progress(0.0, f"{job.model_class} (ocr-small, ocr-large) / fw, gap sampling: a block step")
        self._compile_in_child()
        step_kernels()
        return job

    def _wait_for_other(self, phase):
        """Wait until another process (the lecturer's, for a classroom's students' process) has
        compiled ``phase`` ("first": the kernels of a Step; "rest": all), so that this process
        loads them from numba's on-disk cache instead of compiling them a second time at once.
        The status stays "compiling" meanwhile: the pages' Steps go to the reference solver."""
        if self._after is None:
            return
        self._progress(0.0, "waiting for the lecturer's server to compile them (then loaded from the cache)")
        self._after(phase)

    def _compile_in_child(self):
        code = f"from gaplab.app.kernels import _child_main; _child_main({os.getpid()})"
        try:
            proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        try:
            for line in proc.stdout:
                try:
                    d = json.loads(line)
                    p = CompileProgress(**{k: d[k] for k in ("compiles", "passes", "llvm_locks", "function",
                                                             "stage", "idle_s")})
                except (ValueError, KeyError, TypeError):
                    continue
                with self._lock:
                    self._child = p
        finally:
            proc.wait()
            with self._lock:
                if self._child is not None:
                    self._child_work = self._child.work
                self._child = None

    def _first_rest(self, job):
        """The rest of the default settings: whole passes with their exact gap checks."""
        from gaplab.core import Solver
        from gaplab.core.models import max_oracle
        self._progress(0.0, f"{job.model_class} / fw, gap sampling: passes and exact gap checks")
        s = Solver(job.model, lam=0.1, step="fw", sampling="gap", gap_check=1, max_passes=3)
        s.run()
        s.exact_gap(count=True)
        max_oracle(job.model, 0, s.w)
        job.model.predict(s.w)

    def _job(self, log, extra):
        from gaplab.core.warmup import CompileWatch
        with CompileWatch() as watch:
            with self._lock:
                self._watch = watch
            try:
                self._job_watched(log, extra)
            finally:
                with self._lock:
                    self._watch = None

    def _job_watched(self, log, extra):
        try:
            from gaplab.core.warmup import warmup
            job = self._first()
            here = self._watch.progress().work
            with self._lock:
                work = max(self._child_work, here)
                self._status = "background"
                self._fraction = 0.0
                self._first_work = work
                self._t_first = time.perf_counter()
            if log:
                print(f"gaplab app: default solver kernels ready in {self._t_first - self._t0:.1f} s "
                      f"({work:.0f} units of compile work; {here:.0f} in the server process)",
                      file=sys.stderr, flush=True)
            self._wait_for_other("rest")
            self._first_rest(job)
            with self._lock:
                self._gaps_ready = True
            warmup(progress=self._progress)
            if extra is not None:
                self._progress(1.0, "loading the default dataset")
                extra()
        except Exception as exc:  # the sessions then compile on first use and report errors
            with self._lock:
                self._status = "failed"
                self._message = f"{type(exc).__name__}: {exc}"
                self._t1 = time.perf_counter()
            if log:
                print(f"gaplab app: warm-up failed: {exc}", file=sys.stderr, flush=True)
        else:
            with self._lock:
                self._status = "ready"
                self._fraction = 1.0
                self._message = "ready"
                self._t1 = time.perf_counter()
            if log:
                print(f"gaplab app: solver kernels and default dataset ready in "
                      f"{self._t1 - self._t0:.1f} s", file=sys.stderr, flush=True)
        finally:
            self._done.set()

    def state(self) -> KernelState:
        with self._lock:
            end = self._t1 if self._t1 is not None else time.perf_counter()
            elapsed = end - self._t0 if self._thread is not None else 0.0
            status, fraction, message = self._status, self._fraction, self._message
            watch = self._watch
            gaps = self._gaps_ready or status in ("not started", "ready", "failed")
            child, child_work = self._child, self._child_work
        if watch is None:
            return KernelState(status, fraction, message, elapsed, exact_gaps_ready=gaps)
        here = watch.progress()
        p = here if child is None else child   # what to name: the child's compile while it runs
        if status == "compiling":   # (the largest of the counts: never backwards)
            work = max(child_work, here.work, 0.0 if child is None else child.work)
            fraction = min(0.99, work / FIRST_STEP_WORK)
        if p.function:
            # a stage with no event for seconds (LLVM optimising a big kernel) says for how long
            stage = f"{p.stage}, {p.idle_s:.0f} s" if p.stage and p.idle_s >= 2 else p.stage
            message = f"{message} — now: {p.function} ({stage})" if stage else f"{message} — now: {p.function}"
        return KernelState(status, fraction, message, elapsed, p.work, gaps)

    def first_step_work(self) -> float | None:
        """Compile work the first phase (the kernels of a Step) took, once it has ended."""
        with self._lock:
            return self._first_work

    def wait(self, timeout=None) -> bool:
        if self._thread is None:
            return True
        return self._done.wait(timeout)


def step_kernels():
    """Compile (or load from numba's cache) the kernels a Step of the default settings needs: a
    block step with FW steps and gap sampling, a pass end without an exact gap check, and what
    the page shows of a step, on a tiny chain model (OCR's model class)."""
    from gaplab.core import Solver
    from gaplab.core.problems import warmup_plan
    job = warmup_plan(["ocr-small"])[0]
    # no exact gap check at the pass end (those kernels compile in the background phase)
    s = Solver(job.model, lam=0.1, step="fw", sampling="gap", gap_check=1000, max_passes=3)
    s.sampling_probabilities()
    s.step()
    s.steps(job.model.n)   # across a pass end
    s.last_steps(1)
    s.block_gap_now(0)
    s.step_counts()
    s.dual_objective()
    s.copy()   # the history's checkpoint (Back)


def _child_main(parent: int):
    """The compile child (:meth:`_Warmup._first`) of the process ``parent``: :func:`step_kernels`
    under a CompileWatch, whose progress goes to stdout as one JSON object per line every 0.1 s;
    ends early when its parent has gone (also before it could start)."""
    if os.getppid() != parent:
        os._exit(1)
    from gaplab.core.warmup import CompileWatch
    done = threading.Event()

    def report(watch):
        d = dataclasses.asdict(watch.progress())
        try:
            sys.stdout.write(json.dumps(d) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):   # the parent has closed the pipe: it has gone
            os._exit(1)

    with CompileWatch() as watch:
        def reporter():
            while not done.wait(0.1):
                if os.getppid() != parent:
                    os._exit(1)
                report(watch)
        t = threading.Thread(target=reporter, daemon=True)
        t.start()
        step_kernels()
        done.set()
        t.join()
        report(watch)


_WARMUP = _Warmup()


def start(*, log: bool = True, extra=None, after=None) -> bool:
    """Compile every solver kernel (:func:`gaplab.core.warmup.warmup`) in a background thread
    of this process, then call ``extra()`` (e.g. load the default dataset). Idempotent.

    ``after(phase)``, when given, blocks until another process has compiled ``phase`` into
    numba's on-disk cache: "first" (the kernels of a Step) before they are loaded here, "rest"
    (every kernel) before the rest is; meanwhile the status is "compiling" (a classroom's
    students' process waits so for the lecturer's, :mod:`gaplab.app.students`)."""
    return _WARMUP.start(log=log, extra=extra, after=after)


def state() -> KernelState:
    """The compile's current :class:`KernelState` (never blocks; see :data:`FAKE_BACKGROUND_ENV`)."""
    ks = _WARMUP.state()
    if ks.status == "ready" and os.environ.get(FAKE_BACKGROUND_ENV) == "1":
        return dataclasses.replace(ks, status="background", fraction=0.5,
                                   message=f"a test's stand-in for a compile ({FAKE_BACKGROUND_ENV}=1)")
    return ks


def yield_to_page(seconds: float = 10.0) -> None:
    """A page is being built: the background phase of the compile (the kernels the default
    settings do not need) pauses between two jobs for at most ``seconds``, or until
    :func:`page_loaded`. The kernels of the default settings never wait."""
    _WARMUP.yield_to_page(seconds)


def page_loaded() -> None:
    """The page has loaded: the background compile goes on."""
    _WARMUP.page_loaded()


def wait(timeout: float | None = None) -> bool:
    """Block until the background compile has ended (True) or ``timeout`` seconds passed."""
    return _WARMUP.wait(timeout)
