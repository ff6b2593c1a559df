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
