"""The command line loses no result: a failed final write keeps the previous file whole (no
truncated JSON, no temporary file left), and an output that cannot be written is refused before
any work, naming the option."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from cli_runs import ENV, gaplab


_FSIZE_CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write beyond the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
sys.argv = ["gaplab"] + sys.argv[1:]
from gaplab.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_failed_write_keeps_the_previous_file(tmp_path):
    """``ulimit -f`` during the final write of ``gaplab train --out``: the old result stays whole
    and no temporary file is left (was: a truncated JSON)."""
    # compile / load the numba kernels first: their on-disk cache must not hit the file size limit
    assert gaplab("train", "--dataset", "ocr-small", "--max-passes", "1", "--quiet").returncode == 0
    out = tmp_path / "result.json"
    good = {"status": "converged", "trace": ["x" * 50] * 200}  # ~10 kB, a previous good result
    out.write_text(json.dumps(good))
    r = subprocess.run([sys.executable, "-c", _FSIZE_CHILD, "train", "--dataset", "ocr-small", "--lam", "0.1",
                        "--max-passes", "12", "--gap-check", "1", "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode != 0 and "File too large" in r.stderr, r.stderr  # the final write failed (EFBIG)
    assert json.loads(out.read_text()) == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


@pytest.mark.parametrize("where", ["dir", "device", "readonly", "missing-dir"])
def test_unwritable_out_is_refused_before_any_work(tmp_path, where):
    out = {"dir": tmp_path, "device": "/dev/full", "readonly": "/proc/gaplab_result.json",
           "missing-dir": tmp_path / "nope" / "r.json"}[where]
    t0 = time.time()
    r = gaplab("train", "--dataset", "ocr-small", "--max-passes", "5", "--out", out)
    assert r.returncode == 2, r.stderr
    assert "--out" in r.stderr and str(out) in r.stderr and "Traceback" not in r.stderr
    assert "primal" not in r.stdout  # no solver work was done
    assert time.time() - t0 < 30


def test_path_and_grid_outputs_are_checked_first(tmp_path):
    r = gaplab("path", "--dataset", "ocr-small", "--out", "/proc/gaplab_path.npz")
    assert r.returncode == 2 and "--out" in r.stderr and "gaplab path:" not in r.stdout
    r = gaplab("grid", "--dataset", "ocr-small", "--json", tmp_path)
    assert r.returncode == 2 and "--json" in r.stderr and "is a directory" in r.stderr


def test_grid_out_prints_the_file_it_wrote(tmp_path):
    r = gaplab("grid", "--dataset", "ocr-small", "--lams", "1,0.5", "--eps", "0.5", "--no-test-error",
               "--out", tmp_path / "name")
    assert r.returncode == 0, r.stderr
    assert f"wrote {tmp_path / 'name.npz'}" in r.stdout and (tmp_path / "name.npz").is_file()
