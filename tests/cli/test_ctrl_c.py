"""Ctrl-C keeps what is done: ``gaplab train`` writes the result so far, ``gaplab path`` and
``gaplab grid`` the finished breakpoints (a path then resumes to the same end, with the same
loader options), ``gaplab sweep`` the finished runs; exit code 130, no traceback, and the last
line says what was kept."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

import pytest

from cli_runs import ENV, run_cli, sigint_after
from gaplab.core.regpath import RegPath


def test_sigint_during_train_writes_the_result_so_far(tmp_path, capsys, monkeypatch):
    """A real SIGINT to this process after the run's 3rd trace record (``gaplab train`` in this
    process: its kernels are compiled here already; the Ctrl-C tests below press it in a child)."""
    from gaplab.core.solver import Solver
    real_run = Solver.run

    def run_pressing_ctrl_c(self, *args, callback=None, **kwargs):
        seen = []

        def cb(solver, rec):
            stop = callback(solver, rec) if callback is not None else False
            seen.append(rec["kind"])
            if len(seen) == 3:
                os.kill(os.getpid(), signal.SIGINT)
            return stop
        return real_run(self, *args, callback=cb, **kwargs)

    monkeypatch.setattr(Solver, "run", run_pressing_ctrl_c)
    out = tmp_path / "r.json"
    rc, _, err = run_cli(capsys, "train", "--dataset", "ocr-small", "--lam", "0.001", "--gap-threshold", "0",
                         "--max-passes", "100000", "--gap-check", "5", "--out", out, "--progress")
    assert rc == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1].startswith("gaplab train: interrupted after")
    res = json.loads(out.read_text())
    assert res["status"] == "interrupted"
    assert 0 < res["effective_passes"] < 100000 and len(res["trace"]) >= 1
    assert isinstance(res["exact_gap_is_current"], bool)


def test_sigint_during_path_then_resume_reaches_the_same_end(tmp_path, capsys):
    """Only the interrupted run is a child process (Ctrl-C is a real SIGINT); the uninterrupted
    reference and the resume run in this process."""
    args = ["--dataset", "ocr-small", "--eps", "0.2", "--lam-min", "1", "--no-test-error"]
    full = tmp_path / "full.npz"
    rc, _, err = run_cli(capsys, "path", *args, "--out", full, "--quiet")
    assert rc == 0, err
    part = tmp_path / "part.npz"
    rc, out, err = sigint_after(["path", *args, "--out", part], "converged", stream="stdout", count=5)
    assert rc == 130 and "Traceback" not in err, err
    assert "--resume" in err.strip().splitlines()[-1]
    p = RegPath.load(part)  # a valid, loadable path
    ref = RegPath.load(full)
    assert p.end_reason == "interrupted" and 5 <= len(p) < len(ref)
    np.testing.assert_array_equal(p.lams, ref.lams[:len(p)])
    rc, _, err = run_cli(capsys, "path", "--resume", part, "--out", tmp_path / "resumed.npz", "--quiet")
    assert rc == 0, err
    done = RegPath.load(tmp_path / "resumed.npz")
    assert done.end_reason == ref.end_reason and len(done) == len(ref)
    np.testing.assert_array_equal(done.lams, ref.lams)
    np.testing.assert_array_equal(done.W, ref.W)
    np.testing.assert_array_equal(done.column("gap"), ref.column("gap"))


def test_sigint_during_grid_writes_the_finished_points(tmp_path):
    out = tmp_path / "g.npz"
    lams = ",".join(f"2^{k}" for k in range(4, -12, -1))
    rc, _, err = sigint_after(["grid", "--dataset", "ocr-small", "--lams", lams, "--eps", "0.05", "--out", out,
                                "--no-test-error"], "converged", stream="stdout", count=2)
    assert rc == 130 and "Traceback" not in err
    g = RegPath.load(out)
    assert g.kind == "grid" and g.end_reason == "interrupted" and 2 <= len(g) < 16


def test_ctrl_c_during_sweep_keeps_the_finished_runs_and_says_so(tmp_path, capsys, monkeypatch):
    from gaplab.core import sweep
    from gaplab.core.sweep import dask_runner
    spec = tmp_path / "s.toml"
    spec.write_text('name = "tiny"\nversion = 1\ndatasets = ["ocr-small[:4]"]\nlams = [0.1]\nseeds = 3\n'
                    '[budgets.laptop]\nmax_passes = 2\ngap_check = 1\n'
                    '[methods.bcfw]\nsampling = "uniform"\nstep = "fw"\n')
    real, calls = sweep.execute_run, []

    def ctrl_c_on_the_second_run(cfg):
        calls.append(cfg["run_id"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(cfg)

    monkeypatch.setattr(dask_runner, "execute_run", ctrl_c_on_the_second_run)
    rc, _, err = run_cli(capsys, "sweep", spec, "--store", tmp_path / "st", "--workers", "0", "--quiet")
    assert rc == 130 and "Traceback" not in err
    assert f"1 of 3 runs are done in {tmp_path / 'st'}" in err.strip().splitlines()[-1]
    assert sweep.Store(tmp_path / "st").is_done(calls[0])


def test_path_resume_keeps_the_loader_options(tmp_path, capsys, monkeypatch):
    """``gaplab path --dataset seg-tiny --option n=5``, Ctrl-C, ``--resume``: the resumed path is
    computed on the same problem (was: resumed with the default options and refused, n=6 != 5)."""
    from gaplab.cli import path as cli_path
    args = ["path", "--dataset", "seg-tiny", "--option", "n=5", "--eps", "0.3", "--lam-min", "0.5",
            "--no-test-error", "--quiet"]
    assert run_cli(capsys, *args, "--store", tmp_path / "full")[0] == 0
    seen = []

    def ctrl_c_at_the_4th_point(self, point):
        seen.append(point.index)
        if len(seen) == 4:
            raise KeyboardInterrupt
        return False

    with monkeypatch.context() as m:
        m.setattr(cli_path._Printer, "__call__", ctrl_c_at_the_4th_point)
        rc, _, err = run_cli(capsys, *args, "--store", tmp_path / "part", "--checkpoint-every", "2")
    assert rc == 130 and "--resume" in err
    # a path whose saved loader options were tampered with is refused naming the file and option
    import shutil
    shutil.copytree(tmp_path / "part", tmp_path / "tampered")
    mp = tmp_path / "tampered" / "manifest.json"
    man = json.loads(mp.read_text())
    assert man["meta"]["options"] == {"n": 5}
    man["meta"]["options"] = {"n": 5, "bogus": 1}
    mp.write_text(json.dumps(man))
    rc, _, err = run_cli(capsys, "path", "--resume", tmp_path / "tampered", "--quiet")
    assert rc == 2 and "tampered" in err and "loader options" in err and "bogus" in err, err
    rc, _, err = run_cli(capsys, "path", "--resume", tmp_path / "part", "--quiet")
    assert rc == 0, err
    full, part = RegPath.open(tmp_path / "full"), RegPath.open(tmp_path / "part")
    assert part.end_reason == full.end_reason and part.meta["options"] == {"n": 5}
    np.testing.assert_array_equal(part.lams, full.lams)


def _block_sigint():  # runs in the child between fork and exec: the mask survives exec
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@pytest.mark.parametrize("delay", [0.01, 0.02, 0.03, 0.05, 0.2])
def test_sigint_while_gaplab_starts_exits_130_and_says_interrupted(delay):
    """Ctrl-C a few hundredths of a second after ``gaplab train`` starts: exit 130 with
    "interrupted", never a finished run (was: exit 0, the run done) nor a traceback from an
    import. The child starts with SIGINT blocked, so a Ctrl-C that lands while the Python
    interpreter itself starts (before any gaplab code exists to answer it; there the signal
    would end the process or be swallowed by a site .pth import) stays pending until gaplab's
    first statement takes it; from then on every delay is gaplab's own code."""
    p = subprocess.Popen([sys.executable, "-m", "gaplab", "train", "--dataset", "ocr-small", "--max-passes", "3",
                          "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                         preexec_fn=_block_sigint)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 130, (p.returncode, err[-1500:])
    assert err.strip().splitlines()[-1].endswith("interrupted"), err[-1500:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-1500:]
