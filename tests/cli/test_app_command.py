"""``gaplab app`` refuses a port it cannot listen on with one line naming the cause, a non-zero
exit and no traceback: a port outside [0, 65535] and a port already in use."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _gaplab_app(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "gaplab", "app", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_one_line(port):
    r = _gaplab_app("--port", port)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "port" in lines[0] and port.lstrip("-") in lines[0] and "[0, 65535]" in lines[0]


def test_a_port_in_use_is_one_line():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = _gaplab_app("--port", str(port))
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"port {port}" in lines[0] and "already in use" in lines[0]
    assert "serving on" not in r.stderr


def test_check_port_names_the_argument():
    from gaplab.app.serve import check_port
    assert check_port(0) == 0 and check_port("5006") == 5006
    for bad in (-1, 65536, 99999, "x", 1.5, True, None):
        with pytest.raises(ValueError, match=r"port must be an integer in \[0, 65535\]"):
            check_port(bad)
