"""Fixtures of the browser tests: one headless Chromium per test module (``browser``)."""
import pytest

from browser_env import launched_browser, require_browser


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium driven by Playwright for the module's tests, closed afterwards; the
    module is skipped without Playwright or a Chromium executable, or when Chromium does not start."""
    sync_api, chromium = require_browser()
    yield from launched_browser(sync_api, chromium)
