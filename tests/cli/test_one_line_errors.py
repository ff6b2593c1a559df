"""One line, never a traceback, from ``gaplab train`` and the problem registry: a full disk,
Ctrl-C while gaplab starts, an empty ``--out``, a loader that cannot
take its options; and results that report numba's compile time apart from the solver's."""
from __future__ import annotations

import errno
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from gaplab.cli import main
from gaplab.core import Solver
from gaplab.core import kernels as kr
from gaplab.core.problems import ProblemOption, load_problem, problem_names, register_problem

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


# ============================================================ full disk
def test_a_full_disk_is_one_line_and_keeps_the_old_file(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text('{"old": true}')

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # the data reaches the disk at fsync: there the disk is full
    code = main(["train", "--dataset", "toy", "--max-passes", "2", "--quiet", "--out", str(out)])
    line = _one_line(capsys.readouterr().err)
    assert code == 1
    assert "No space left on device" in line and str(out) in line and line.startswith("gaplab train: error:")
    assert json.loads(out.read_text()) == {"old": True}
    assert sorted(os.listdir(tmp_path)) == ["r.json"]  # no temporary file left behind


# ============================================================ empty --out
def test_an_empty_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["train", "--dataset", "toy", "--max-passes", "2", "--quiet", "--out", ""])
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and "--out" in line and "empty" in line
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv", [
    ["path", "--out", ""], ["path", "--store", ""], ["path", "--json", ""],
    ["grid", "--lams", "1,0.1", "--out", ""], ["grid", "--lams", "1,0.1", "--json", ""]])
def test_an_empty_path_or_grid_output_is_refused_before_any_work(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code = main(argv[:1] + ["--dataset", "toy", "--quiet"] + argv[1:])
    line = _one_line(capsys.readouterr().err)
    flag = argv[-2]
    assert code == 2 and flag in line and "empty" in line
    assert os.listdir(tmp_path) == []


def test_eps_bounds_in_the_error_survive_a_tiny_kappa(capsys):
    """κ·λ_min underflows to 0 at κ = 1e-308: the message's bounds are computed without it."""
    code = main(["path", "--dataset", "toy", "--quiet", "--no-test-error", "--kappa", "1e-308"])
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and "eps must lie in" in line and "κ = 1e-308" in line


# ============================================================ Ctrl-C while gaplab starts
@pytest.fixture(scope="module")
def python_startup():
    """Seconds a bare ``python -c pass`` takes here. Before CPython has imported ``site`` a
    SIGINT is a fatal error of the interpreter itself ("init_import_site"), which no package
    can turn into a message; the signals below land after that, in the first 0.2 s of gaplab
    (importing the solver core, building the commands, loading the problem, compiling)."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=ENV, check=True)
        times.append(time.perf_counter() - t0)
    return sorted(times)[1]


def _block_sigint():  # runs in the child between fork and exec: the mask survives exec
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as from a terminal, also when the tests run under nohup
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _ignore_sigint():  # as nohup or a script's background job start a command
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_command_started_with_sigint_ignored_leaves_it_ignored(tmp_path):
    """``nohup gaplab train ...`` or ``gaplab train &`` in a script: SIGINT stays ignored from the
    first statement to the end (it used to be taken over: a SIGINT while gaplab started was lost,
    a later one stopped the run), so the command runs to its end and exits 0."""
    out = tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--max-passes", "3",
                          "--quiet", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=ENV, preexec_fn=_ignore_sigint)
    sent = 0
    while p.poll() is None:
        p.send_signal(signal.SIGINT)
        sent += 1
        time.sleep(0.02)
    _, err = p.communicate(timeout=300)
    assert sent >= 1 and p.returncode == 0, (sent, p.returncode, err)
    assert json.loads(out.read_text())["status"]


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.15, 0.2])
def test_ctrl_c_in_the_first_moments_is_one_line(tmp_path, delay, python_startup):
    """A SIGINT in gaplab's first moments is one line and exit 130. The child starts with SIGINT
    blocked, so a signal sent while CPython itself starts (before any code of gaplab exists: an
    editable install's .pth import can turn it into a traceback) waits until the console
    script's first statement takes it; on a loaded machine that start-up can outlast any delay."""
    out = tmp_path / "r.json"
    delay += python_startup
    p = subprocess.Popen([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--max-passes", "3",
                          "--quiet", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=ENV, preexec_fn=_block_sigint)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300)
    if p.returncode == 0:  # it finished before the signal: nothing to check but the file
        assert json.loads(out.read_text())["status"]
        return
    assert err.strip(), f"exit status {p.returncode} with nothing on stderr"
    line = _one_line(err)
    assert p.returncode == 130 and "interrupted" in line, (p.returncode, err)
    if out.exists():  # written whole (the result so far) or not at all
        json.loads(out.read_text())


# ============================================================ register_problem checks at once
def _toy_loader(data_home=None, n=5):
    return load_problem("toy").model, None


@pytest.mark.parametrize("loader,options,match", [
    (lambda: (None, None), None, "data_home"),
    (lambda data_home=None: (None, None), {"n": ProblemOption(default=5, bounds=(1, 9))}, "n"),
    (lambda data_home=None, *, path: (None, None), None, "requires the argument.*path"),
    (_toy_loader, [("n", ProblemOption(default=5, bounds=(1, 9)))], "options must be a dict"),
    (_toy_loader, "n", "options must be a dict"),
])
def test_register_problem_checks_the_loader_and_options_when_called(loader, options, match):
    before = problem_names()
    with pytest.raises(TypeError, match=match):
        register_problem("bad-loader", loader, default_lam=0.1, description="a bad loader", options=options)
    assert problem_names() == before


def test_register_problem_accepts_a_loader_that_takes_its_options(monkeypatch):
    from gaplab.core import problems
    monkeypatch.setattr(problems, "_REGISTRY", dict(problems._REGISTRY))  # leave the registry as it was
    opts = {"n": ProblemOption(default=5, bounds=(1, 9))}
    spec = register_problem("good-loader", _toy_loader, default_lam=0.1, description="toy again", options=opts)
    spec2 = register_problem("good-loader-kw", lambda **kw: _toy_loader(), default_lam=0.1,
                             description="any keywords", options=opts)
    assert spec.load().model is not None and spec2.load().model is not None


# ============================================================ compile time apart
def _fake_compile(monkeypatch, name, seconds):
    """Make the first call of kernels.<name> hold numba's compiler lock for ``seconds`` (as a
    compile on a cold cache does) before the real call."""
    from numba.core.compiler_lock import global_compiler_lock
    real = getattr(kr, name)
    calls = []

    def wrapped(*args, **kw):
        if not calls:
            with global_compiler_lock:
                time.sleep(seconds)
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(kr, name, wrapped)


def test_compile_time_is_reported_apart_from_the_solver_time(monkeypatch):
    model = load_problem("toy").model
    Solver(model, lam=0.1, max_passes=2, gap_check=1).run()  # compiled for real, outside the test
    _fake_compile(monkeypatch, "run_steps", 0.4)
    _fake_compile(monkeypatch, "exact_gap_pass", 0.3)
    t0 = time.perf_counter()
    res = Solver(model, lam=0.1, max_passes=4, gap_check=1).run()
    elapsed = time.perf_counter() - t0
    assert res.compile_time_s >= 0.7
    assert res.wall_time_s <= elapsed - 0.7 + 0.05
    assert res.wall_time_s < 0.3  # toy passes take microseconds; the time axis has no compile in it
    times = [r["wall_time_s"] for r in res.trace]
    assert times == sorted(times) and times[-1] <= res.wall_time_s
    assert res.to_dict()["compile_time_s"] == res.compile_time_s


@pytest.mark.slow
def test_cli_reports_compile_time_and_says_compiling_on_a_cold_cache(tmp_path):
    env = dict(ENV, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))  # a cold cache: everything compiles
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--max-passes", "3",
                        "--progress", "--out", str(out)], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "compiling" in p.stderr
    r = json.loads(out.read_text())
    assert r["compile_time_s"] > 1.0 > r["wall_time_s"]  # the toy's 3 passes are milliseconds of work
    assert all(rec["wall_time_s"] <= r["wall_time_s"] for rec in r["trace"])
    assert "numba compile (s)" in p.stdout


def test_a_failing_compile_watcher_does_not_fail_the_compile():
    from numba.core.compiler_lock import global_compiler_lock

    from gaplab.core.solver import watch_compiles

    def broken(active):
        raise RuntimeError("a closed progress bar")

    seen = []
    with watch_compiles(broken), watch_compiles(seen.append):
        with global_compiler_lock:  # what numba does around a compile
            pass
    assert seen == [True, False]


def test_a_store_folder_that_cannot_be_written_names_the_users_store(tmp_path, monkeypatch, capsys):
    """A read-only --store folder: the one line names the store (was: gaplab's internal
    ``.gaplab-store-check`` file), before any work; the same for a store that cannot be created."""
    import tempfile
    store = tmp_path / "ro_store"
    store.mkdir()
    real = tempfile.mkstemp

    def read_only(*a, dir=None, **kw):
        if dir is not None and str(dir).startswith(str(store)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))
        return real(*a, dir=dir, **kw)
    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    for target in (store, store / "new"):
        rc = main(["path", "--dataset", "ocr-small", "--store", str(target), "--quiet"])
        line = _one_line(capsys.readouterr().err)
        assert rc == 2 and f"--store {str(target)!r}" in line and "Read-only file system" in line, line
        assert ".gaplab-store-check" not in line and "gaplab path: " in line
    assert list(store.iterdir()) == []


def test_warmup_of_a_dataset_whose_files_are_missing_says_so_before_compiling(tmp_path, capsys, monkeypatch):
    """``gaplab warmup --dataset horse-small`` prepares a lecture: a data folder without the
    images is said at once (exit 2, where it looked), not after minutes of compiling."""
    import gaplab.core.warmup as wu

    def no_compile(*a, **k):
        raise AssertionError("compiled before checking the data folder")
    monkeypatch.setattr(wu, "warmup", no_compile)
    rc = main(["warmup", "--dataset", "horse-small", "--data-home", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert rc == 2 and "Weizmann Horse Database not found" in err and str(tmp_path / "nowhere") in err
    assert "Traceback" not in err
