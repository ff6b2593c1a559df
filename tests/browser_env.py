"""What the browser test modules need: Playwright and a Chromium executable, a server and a page,
a polling wait and the artifacts folder."""
import contextlib
import time
from pathlib import Path

import pytest

from gaplab.app.testing import find_chromium


def require_browser():
    """Skip the calling test module (at import) without Playwright or a Chromium executable.
    Returns (playwright.sync_api, the Chromium path)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (PyPI) is not installed")
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium executable (apt-get install chromium, or set GAPLAB_CHROMIUM)",
                    allow_module_level=True)
    return sync_api, chromium


def launched_browser(sync_api, chromium):
    """Generator for a module-scoped ``browser`` fixture: a headless Chromium driven by
    Playwright, closed afterwards; the module is skipped when Chromium does not start."""
    from gaplab.app.testing import CHROMIUM_ARGS
    pw = sync_api.sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000)
    except Exception as exc:  # pragma: no cover - depends on the machine
        pw.stop()
        pytest.skip(f"Chromium at {chromium} does not start: {exc}")
    yield b
    b.close()
    pw.stop()


def warm_app_server(log_path, env=None):
    """Generator for a module-scoped ``server`` fixture: ``gaplab app`` on 127.0.0.1 with its
    kernels compiled before the first page (pages opened during the background compile of every
    model kind made the browser tests flaky), unused sessions closed after 1 s. ``log_path``:
    the server's log (its folder is made); ``env``: extra environment variables."""
    from gaplab.app.testing import AppServer
    log_path.parent.mkdir(exist_ok=True)
    with AppServer(log_path, session_lifetime_ms=1000, env=env, timeout=900, wait_warm=True) as srv:
        yield srv


ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def wait_until(fn, timeout, what, poll=0.25):
    """``fn()``'s first truthy value, polled every ``poll`` seconds; an AssertionError naming
    ``what`` after ``timeout`` seconds."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@contextlib.contextmanager
def one_page(log_name, chromium, sync_api, viewport=(1400, 900)):
    """A page on a ``gaplab app`` server of its own (no warm-up wait; unused sessions closed
    after 1 s), the server's log in ``artifacts/<log_name>``. Yields (server, page)."""
    from gaplab.app.testing import CHROMIUM_ARGS, AppServer
    ARTIFACTS.mkdir(exist_ok=True)
    with AppServer(ARTIFACTS / log_name, session_lifetime_ms=1000, timeout=600) as srv:
        pw = sync_api.sync_playwright().start()
        try:
            b = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000)
            try:
                page = b.new_page(viewport={"width": viewport[0], "height": viewport[1]})
                page.set_default_timeout(60_000)
                yield srv, page
            finally:
                b.close()
        finally:
            pw.stop()
