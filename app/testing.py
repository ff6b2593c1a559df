"""Helpers for driving the served app from tests and benchmarks: a free port, a server
subprocess on 127.0.0.1, and the headless Chromium settings (Debian's chromium + Playwright).

Nothing here is imported by the app itself.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["CHROMIUM_ARGS", "find_chromium", "free_port", "AppServer"]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """Path of a Chromium executable ($GAPLAB_CHROMIUM, /usr/bin/chromium, chromium on PATH)."""
    for cand in (os.environ.get("GAPLAB_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).exists():
            return cand
    return None


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


class AppServer:
    """``gaplab.app.serve.serve`` in a subprocess on 127.0.0.1 (stderr to a log file).

    Use as a context manager; ``url`` is ready when ``__enter__`` returns. With ``wait_warm``
    ``__enter__`` also waits (up to ``timeout`` seconds) until the server has compiled its solver
    kernels and loaded the default dataset in the background.
    """

    def __init__(self, log_path, port: int | None = None, *, session_lifetime_ms: int = 1000,
                 timeout: float = 90.0, env: dict | None = None, wait_warm: bool = False):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = Path(log_path)
        self.timeout = timeout
        self.env = dict(os.environ, **(env or {}))
        self.proc: subprocess.Popen | None = None
        self.ready_s = float("nan")
        self.wait_warm = wait_warm
        code = (f"import sys; from gaplab.app.serve import serve; sys.exit(serve(port={self.port}, "
                f"address='127.0.0.1', unused_session_lifetime_ms={session_lifetime_ms}, "
                f"check_unused_sessions_ms={max(200, session_lifetime_ms // 2)}))")
        self.cmd = [sys.executable, "-c", code]

    def __enter__(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, env=self.env)
        deadline = t0 + self.timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app server exited with {self.proc.returncode}:\n{self.log()}")
            log = self.log()
            # "serving on" is printed once the port is bound (no session made); with wait_warm
            # also wait for the background compile of the solver kernels to finish
            if "serving on" in log and (not self.wait_warm or "solver kernels and default dataset ready" in log):
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                        self.ready_s = time.perf_counter() - t0
                        return self
                except OSError:
                    pass
            time.sleep(0.1)
        self.__exit__(None, None, None)
        raise TimeoutError(f"app server not ready after {self.timeout} s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text()
        except OSError:
            return ""

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()
        return False
