"""Run All in a real JupyterLab, driven by a real Chromium: a fresh stub reaches its last cell.

This is what a learner does first: open lab 00 in JupyterLab, Run → Run All Cells, and read
the end of the notebook. The kernel-level test (``test_runall.py``) shows each cell goes on;
this one shows JupyterLab itself does not stop at the first failed check (the student copies
tag those cells ``raises-exception``), and that the last cell shows the one-line "needs
Exercise 00.x" message rather than a traceback.

Needs Playwright's Python package and a Chromium binary; skipped without them (they are not
in the ``dev`` extra: ``pip install -e ".[browser]"`` and, on Debian or Ubuntu,
``apt-get install chromium``). No browser is downloaded: Playwright drives the system one.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from a2s.notebook import read_notebook
from a2s.syllabus import repo_root

ROOT = repo_root()
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
playwright = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH")

# the flags of a headless browser that talks to nothing but the local JupyterLab
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lab_server(folder: Path, home: Path, port: int, token: str) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        HOME=str(home),
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={folder}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # a container's root (CI, this machine)
        cmd.append("--allow-root")
    # render every cell (JupyterLab 4 draws only the visible ones by default)
    tracker = (
        home / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    )
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}', encoding="utf-8")
    log = (home / "server.log").open("w")
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def _wait_ready(port: int, token: str, proc: subprocess.Popen, home: Path) -> None:
    url = f"http://127.0.0.1:{port}/api/status?token={token}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("jupyter lab exited: " + (home / "server.log").read_text()[-2000:])
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # localhost only
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail("jupyter lab did not start in 60 s: " + (home / "server.log").read_text()[-2000:])


def test_run_all_on_a_fresh_stub_reaches_the_last_cell(tmp_path: Path) -> None:
    folder, home = tmp_path / "work", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    name = "00_orientation.ipynb"
    shutil.copy(ROOT / "labs" / name, folder / name)
    before = (folder / name).read_bytes()
    n = sum(c.cell_type == "code" for c in read_notebook(folder / name).cells)
    port, token = _free_port(), secrets.token_hex(16)
    proc = _lab_server(folder, home, port, token)
    try:
        _wait_ready(port, token, proc, home)
        with playwright.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/lab/tree/{name}?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            # the kernel is up when the status bar says so ("Python 3 (ipykernel) | Idle")
            page.wait_for_function(
                "() => (document.querySelector('#jp-main-statusbar') || {}).innerText"
                "?.includes('| Idle')",
                timeout=60_000,
            )
            page.wait_for_function(
                "(n) => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length >= n",
                arg=n,
                timeout=30_000,
            )
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            item = page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first
            item.wait_for(timeout=10_000)
            item.click()
            code = page.locator(".jp-Notebook .jp-CodeCell")
            assert code.count() == n, f"{code.count()} code cells on the page, {n} in the file"
            last = code.nth(n - 1)
            # the last cell has run when its prompt holds a number, not "*" or nothing
            try:
                page.wait_for_function(
                    """(n) => {
                    const cells = document.querySelectorAll('.jp-Notebook .jp-CodeCell');
                    const p = cells[n - 1].querySelector('.jp-InputPrompt');
                    return p && /\\[\\d+\\]/.test(p.textContent);
                }""",
                    arg=n,
                    timeout=180_000,
                )
            except playwright.Error:
                page.screenshot(path=str(tmp_path / "run-all.png"), full_page=True)
                shot = tmp_path / "run-all.png"
                raise AssertionError(f"the last cell never ran: see {shot}") from None
            prompts = [code.nth(i).locator(".jp-InputPrompt").inner_text() for i in range(n)]
            shown = last.locator(".jp-OutputArea").inner_text()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    ran = [p for p in prompts if any(ch.isdigit() for ch in p)]
    assert len(ran) == n, f"only {len(ran)} of {n} code cells ran: {prompts}"
    assert "⏭ " in shown and "Exercise 00." in shown, shown[:500]
    assert "Traceback" not in shown, shown[:500]
    assert (folder / name).read_bytes() == before  # Run All does not save the learner's file
