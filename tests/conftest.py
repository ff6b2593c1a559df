import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for reference_ssvm

from gaplab.core.datasets.base import SequenceData  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"


def random_chain_data(n=6, T_range=(1, 5), K=3, F=4, seed=0, density=0.6) -> SequenceData:
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(T_range[0], T_range[1] + 1))
        x = rng.normal(size=(T, F)) * (rng.random((T, F)) < density)
        X.append(x)
        Y.append(rng.integers(0, K, size=T))
    return SequenceData.from_dense(X, Y, [str(k) for k in range(K)], name="random")


@pytest.fixture
def tiny_chain():
    return random_chain_data(n=5, T_range=(1, 3), K=3, F=3, seed=1)


@pytest.fixture
def app():
    """A headless app (no periodic callback, no background compile) on the default problem,
    idle and drawn once; closed after the test."""
    pytest.importorskip("panel")
    from gaplab.app.main import build_app
    a = build_app(periodic=False)
    assert a.session.wait_idle(60)
    a.refresh(force=True)
    yield a
    a.close()


@pytest.fixture
def sess():
    """An app Session on the default problem, idle (within 60 s); closed after the test."""
    pytest.importorskip("panel")
    from app_session import idle_session
    s = idle_session(60)
    yield s
    s.close()


@pytest.fixture(scope="module")
def module_app():
    """A headless app (no periodic callback, no background compile) on the default problem,
    idle, shared by the tests of one module that only read what it draws or reset what they set;
    closed after them."""
    pytest.importorskip("panel")
    from gaplab.app.main import build_app
    a = build_app(periodic=False)
    assert a.session.wait_idle(120)
    yield a
    a.close()


@pytest.fixture(scope="session")
def ocr_small():
    from gaplab.core.datasets.ocr import load_ocr
    return load_ocr("small")


# ----------------------------------------------------------------------------- suite schedule
# The browser tests' app server compiles every model kind's kernels before its first page (about
# 4 minutes on 2 cores with a cold numba cache, while the test process waits). Instead, a
# background process compiles them from the start of the session (the numba cache on disk is
# shared) while the core tests run on the other core; the app tests (which assume compiled
# kernels: timings, paced runs, waits) run after the core tests and first wait for that
# compile to end; the browser tests run last.
#
# With pytest-xdist (``-n 2``, as the README's test command runs the suite) the compile comes
# first instead: each worker starts a compile process, and the two take the model classes of the
# warm-up plan one at a time (a lock file per class; the second worker from the plan's end), so
# every class is compiled once, on both cores; a worker starts its tests when its compile
# process has no class left to take (the core and CLI tests then load kernels from the cache
# instead of compiling them again in every process), and its app and browser tests wait until
# every worker's compile process has ended. Files go to workers whole (their module fixtures,
# e.g. an app server, are made once), and the browser test files go together to one worker,
# first: one app server and one Chromium at a time, while the other worker runs other tests
# (likewise the textbook's files, which share session fixtures).
_WARMUP: dict = {"proc": None, "done": ()}

#: The compile process of one xdist worker: argv = [folder shared by the run's workers, worker].
_SHARED_WARMUP = """
import os, pathlib, sys, time
from gaplab.core.problems import warmup_plan
from gaplab.core.warmup import warmup
base, worker = pathlib.Path(sys.argv[1]), sys.argv[2]
plan = list(enumerate(warmup_plan()))
if int(worker.lstrip("gw") or 0) % 2:
    plan.reverse()   # odd workers take classes from the other end: the two meet in the middle
try:
    for i, job in plan:
        try:
            os.close(os.open(base / f"gaplab-warmup-job{i}.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue   # another worker's compile process has taken this model class
        t0, c0 = time.perf_counter(), time.process_time()
        warmup(names=list(job.problems))
        print(f"{worker}: {job.model_class} {time.perf_counter() - t0:.1f} s wall "
              f"{time.process_time() - c0:.1f} s CPU", flush=True)
finally:
    (base / f"gaplab-warmup-{worker}.done").touch()
"""


def _stage(item) -> int:
    if item.get_closest_marker("browser") is not None:
        return 2
    return 1 if item.path.parent.name == "app" else 0


def _xdist_worker() -> bool:
    import os
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


def pytest_collection_modifyitems(session, config, items):
    """Core tests first, then the app tests (tests/app/), then the tests marked ``browser``
    (tests/browser/; order otherwise kept: ``sorted`` is stable). Under xdist the browser tests
    come first (the kernels are compiled before any test starts there)."""
    if _xdist_worker():
        items[:] = sorted(items, key=lambda it: (_stage(it) != 2, _stage(it)))
    else:
        items[:] = sorted(items, key=_stage)


#: Folders whose test files an xdist worker takes together: one app server and one Chromium at a
#: time (tests/browser/); the session fixtures of tests/textbook/ (recorded data, exported
#: pages) made once.
_XDIST_FOLDER_UNITS = ("tests/browser/", "tests/textbook/")


def _xdist_unit(nodeid: str) -> str:
    """The unit of work an xdist worker takes whole: the test file, or one of
    :data:`_XDIST_FOLDER_UNITS`."""
    path = nodeid.split("::", 1)[0]
    return next((f for f in _XDIST_FOLDER_UNITS if path.startswith(f)), path)


if importlib.util.find_spec("xdist") is not None:
    def pytest_xdist_make_scheduler(config, log):
        """``-n N`` (or ``--dist loadfile``): whole files (see :func:`_xdist_unit`) in the
        workers' collection order; another ``--dist`` is xdist's own."""
        if config.getvalue("dist") not in ("load", "loadfile"):
            return None
        from xdist.scheduler import LoadScopeScheduling

        class _Units(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                return _xdist_unit(nodeid)

        config.option.loadscopereorder = False
        return _Units(config, log)


def _shared_warmup(tmp_path_factory):
    """Under xdist: this worker's share of the compile (see above), waited for; returns the done
    files of every worker's compile process."""
    import os
    import subprocess
    worker = os.environ["PYTEST_XDIST_WORKER"]
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    base = tmp_path_factory.getbasetemp().parent   # the run's folder, parent of every worker's own
    with open(base / f"gaplab-warmup-{worker}.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-c", _SHARED_WARMUP, str(base), worker],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            proc.wait(900)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return tuple(base / f"gaplab-warmup-gw{k}.done" for k in range(count))


@pytest.fixture(scope="session", autouse=True)
def _warm_kernels_in_background(request, tmp_path_factory):
    """Start ``gaplab.core.warmup.warmup()`` in a subprocess when the session has app or browser
    tests (``GAPLAB_TEST_BACKGROUND_WARMUP=0`` turns it off); stopped at the end if still
    running. Under xdist: this worker's share of the compile first (:func:`_shared_warmup`)."""
    import os
    import subprocess
    wanted = os.environ.get("GAPLAB_TEST_BACKGROUND_WARMUP", "1") != "0"
    if not wanted or not any(_stage(it) > 0 for it in request.session.items):
        yield
        return
    if _xdist_worker():
        _WARMUP["done"] = _shared_warmup(tmp_path_factory)
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "from gaplab.core.warmup import warmup; warmup()"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _WARMUP["proc"] = proc
    yield
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_for_the_compile() -> None:
    """Until the background compile has ended (at most 15 minutes)."""
    import subprocess
    import time
    proc = _WARMUP["proc"]
    if proc is not None and proc.poll() is None:
        try:
            proc.wait(900)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + 900   # xdist: every worker's compile process has ended
    while not all(f.exists() for f in _WARMUP["done"]) and time.monotonic() < deadline:
        time.sleep(0.5)


@pytest.fixture(scope="module", autouse=True)
def _kernels_compiled_for_app_modules(request):
    """An app or browser test module's fixtures (its app server, its app) are made once the
    background compile has ended: made earlier, they would compile the kernels themselves."""
    if _stage(request.node) > 0:
        _wait_for_the_compile()
    yield


@pytest.fixture(autouse=True)
def _kernels_compiled_for_app_tests(request):
    """App and browser tests start once the background compile has ended (at most 15 minutes)."""
    if _stage(request.node) > 0:
        _wait_for_the_compile()
    yield
