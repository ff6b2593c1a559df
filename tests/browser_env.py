"""What the browser test modules need: Playwright and a Chromium executable."""
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
