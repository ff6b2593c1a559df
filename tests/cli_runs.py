"""Running the ``gaplab`` command in the tests: as a child process (``gaplab``, with the same
gaplab on its path; ``sigint_after`` presses Ctrl-C once a line appears) or in this process
(``run_cli``), and the shared development data (``shared_data``)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the same gaplab in the children


def gaplab(*args, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "gaplab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV, **kw)


def wait_for(stream, needle: str, timeout=120.0) -> str:
    """Read a child's stream until ``needle`` appears (returns what was read)."""
    buf = ""
    t0 = time.time()
    while needle not in buf:
        ch = stream.read(1)
        if not ch:
            raise AssertionError(f"stream ended before {needle!r}: {buf[-500:]!r}")
        buf += ch
        if time.time() - t0 > timeout:
            raise AssertionError(f"{needle!r} did not appear within {timeout} s")
    return buf


def sigint_after(cmd_args, needle, stream="stderr", count=1, timeout=120):
    p = subprocess.Popen([sys.executable, "-m", "gaplab", *map(str, cmd_args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    s = p.stderr if stream == "stderr" else p.stdout
    for _ in range(count):
        wait_for(s, needle)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def run_cli(capsys, *args):
    """``gaplab *args`` in this process: (exit code, stdout, stderr) read from ``capsys``."""
    from gaplab.cli import main
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def shared_data(*parts):
    """A file or directory of the shared development data ($GAPLAB_DATA or ../shared/data), or None."""
    here = Path(__file__).resolve()  # tests/cli_runs.py
    roots = [Path(os.environ["GAPLAB_DATA"])] if os.environ.get("GAPLAB_DATA") else []
    roots += [here.parents[2] / "shared" / "data", here.parents[3] / "shared" / "data"]
    return next((r.joinpath(*parts) for r in roots if r.joinpath(*parts).exists()), None)
