"""The app live inside JupyterLab (headless Chromium): open examples/gaplab_tour.ipynb, run its
app cell, and check that the app renders (status "ready") and that Step changes the anatomy.

Skipped cleanly without JupyterLab (PyPI, the ``test`` extra), Playwright, a Chromium executable
or a ``python3`` kernel.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gaplab.app.testing import CHROMIUM_ARGS, find_chromium, free_port

pytestmark = pytest.mark.browser

pytest.importorskip("jupyterlab", reason="JupyterLab (PyPI) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (PyPI) is not installed")
CHROMIUM = find_chromium()
if CHROMIUM is None:
    pytest.skip("no Chromium executable (apt-get install chromium, or set GAPLAB_CHROMIUM)",
                allow_module_level=True)

if not os.environ.get("GAPLAB_JUPYTERLAB_TEST"):
    # a known failure (see the xfail below) that costs about 2.5 minutes: run it on request
    pytest.skip("live JupyterLab test: set GAPLAB_JUPYTERLAB_TEST=1 to run it (known failure, issue 16 "
                "item 10)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
NOTEBOOK = ROOT / "examples" / "gaplab_tour.ipynb"


def _kernel_available() -> bool:
    from jupyter_client.kernelspec import KernelSpecManager
    return "python3" in KernelSpecManager().find_kernel_specs()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not _kernel_available():
        pytest.skip("no 'python3' Jupyter kernel (python -m ipykernel install --sys-prefix)")
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)     # JupyterLab may save the notebook: not ours
    port, token = free_port(), "gaplab-test"
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "jupyterlab.log", "w")
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".jupyter"),
               JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"),
               JUPYTER_RUNTIME_DIR=str(root / ".runtime"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
         "--allow-root",
         "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        if proc.poll() is not None:
            log.close()
            pytest.fail("JupyterLab exited:\n" + (ARTIFACTS / "jupyterlab.log").read_text()[-3000:])
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=3)
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.terminate()
        log.close()
        pytest.fail("JupyterLab did not start within 90 s")
    yield f"{base}/lab/tree/{NOTEBOOK.name}?token={token}"
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "issue 16 item 10, open: in JupyterLab 4 the app renders but stays on 'loading ocr-small': "
    "the session's snapshots never reach the page (the periodic callback's updates, or the "
    "callback itself, do not run there). The app used to render nothing at all: the background "
    "kernel compile is now off in notebooks (BokehJS 'reference ... isn't known')."))
def test_app_runs_live_in_jupyterlab(lab):
    pw = sync_api.sync_playwright().start()
    try:
        try:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        except Exception as exc:  # pragma: no cover - depends on the machine
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {exc}")
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(lab, timeout=90_000)
        page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=90_000)
        # wait until the kernel is connected, then run the app cell (the first code cell)
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=90_000)
        cell = page.locator(".jp-Notebook .jp-CodeCell").first
        cell.locator(".jp-InputArea-prompt").first.click()     # select the cell (command mode)
        time.sleep(0.3)
        page.keyboard.press("Shift+Enter")
        status = page.locator(".gaplab-status").first
        try:
            status.wait_for(timeout=int(os.environ.get('GAPLAB_LAB_TIMEOUT_MS', 45_000)))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "jupyterlab_failed.png"))
            raise
        deadline = time.time() + 120
        while time.time() < deadline and not re.search(r"ready.*ocr-small.*iteration 0\b", status.inner_text()):
            time.sleep(0.2)
        text = status.inner_text()
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_app.png"))
        assert re.search(r"ready.*ocr-small.*iteration 0\b", text), text   # not stuck on "loading"
        page.get_by_role("button", name="Step", exact=True).first.click()
        page.locator(".gaplab-block").first.wait_for(timeout=30_000)
        deadline = time.time() + 30
        while time.time() < deadline and not re.search(r"iteration 1\b", status.inner_text()):
            time.sleep(0.1)
        assert re.search(r"iteration 1\b", status.inner_text()), status.inner_text()
        assert "What just happened" in page.locator(".gaplab-sentence").first.inner_text() or \
            page.get_by_text("What just happened").count() > 0
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_step.png"))
        browser.close()
    finally:
        pw.stop()
