"""The busy-laptop condition (gaplab.app.testing.busy_machine, scripts/busy.py): its processes
spin while it is entered, are gone after it, and one left behind by a killed parent stops."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gaplab.app.testing import busy_machine

ROOT = Path(__file__).resolve().parents[2]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_busy_machine_spins_two_processes_and_stops_them():
    with busy_machine() as busy:
        assert busy.n == 2 and busy.running() == 2
        pids = busy.pids
        t0 = [_cpu_seconds(p) for p in pids]
        deadline = time.time() + 60      # a hang guard: each process gets CPU time
        while time.time() < deadline and not all(_cpu_seconds(p) > c + 0.2 for p, c in zip(pids, t0)):
            time.sleep(0.2)
        assert all(_cpu_seconds(p) > c + 0.2 for p, c in zip(pids, t0))
    assert busy.running() == 0 and not any(_alive(p) for p in pids)


@pytest.mark.parametrize("n", [0, 65, 1.5, True, "2"])
def test_busy_machine_refuses_a_bad_count(n):
    with pytest.raises(ValueError, match=r"n must be an integer in 1 … 64, got"):
        busy_machine(n)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_spinning_process_stops_when_its_parent_is_killed():
    """scripts/busy.py killed with SIGKILL (no exit handler runs): its children stop by themselves."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "busy.py")], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    pids = [int(x) for x in line.split("[", 1)[1].rstrip("]\n").split(",")]
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    deadline = time.time() + 30
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def test_busy_script_stops_after_its_seconds_and_refuses_bad_input():
    ok = subprocess.run([sys.executable, str(ROOT / "scripts" / "busy.py"), "--seconds", "0.5"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("busy: 2 CPU-bound processes")
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "busy.py"), "--n", "0"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "n must be an integer in 1 … 64, got 0" in bad.stderr
