"""The coursework in a real JupyterLab with nbgrader's extensions, driven by headless chromium (offline).

One JupyterLab server, whose root is a temporary copy of course/ with the releases generated
(``python -m classroom.course assignments``), so nbgrader's server extensions read course/nbgrader_config.py:

* a release notebook opens with nbgrader's **Validate** button in its toolbar; clicking it validates the
  untouched notebook and a dialog shows the result (screenshots/course-validate.png);
* the formgrader (``/formgrader``) lists every chapter's assignment (screenshots/course-formgrader.png);
* ``make lab``'s own command (on a checkout of symbolic links with its own copy of course/, at the repository
  root with the start page in work/) opens a Formgrader that finds the course, its assignments and its exchange
  (screenshots/course-lab-formgrader.png).

Every request that leaves loopback is aborted (tests/browser_support.offline_context). Needs chromium and
playwright like tests/test_browser.py: skipped without them, failed when CI=true.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from classroom import assignments, nbgrader_cli, paths
from tests.browser_support import chromium, free_port, jupyterlab, offline_context, server, write_json

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "screenshots"
CHAPTER = "04a_integer_equations"
RUNTIME = ("release", "submitted", "autograded", "feedback", "gradebook.db", "grades.csv", ".ipynb_checkpoints",
           "exchange", "export", "grading_state.json")



@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a copy of course/ with the releases generated: yields (base_url, token)."""
    tmp = tmp_path_factory.mktemp("course-lab")
    root = tmp / "course"
    shutil.copytree(REPO / "course", root, ignore=shutil.ignore_patterns(*RUNTIME, "__pycache__"))
    env = nbgrader_cli.nbgrader_env()
    settings = tmp / "settings"
    write_json(settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_DATA_DIR=str(tmp / "data"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        BROWSER="true",
        PYTHONUNBUFFERED="1",
        **{paths.EXCHANGE_ENV: str(tmp / "exchange")},
    )
    (tmp / "exchange").mkdir()
    proc = subprocess.run([sys.executable, "-m", "classroom.course", "assignments", "--course", str(root)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    with jupyterlab(root, env, tmp / "jupyterlab.log") as lab_server:
        yield lab_server


@pytest.fixture(scope="module")
def context():
    with chromium() as browser:
        ctx = offline_context(browser, viewport={"width": 1280, "height": 900})
        try:
            yield ctx
        finally:
            ctx.close()


def test_release_has_validate_button(lab, context):
    base_url, token = lab
    page = context.new_page()
    page.goto(f"{base_url}/lab/tree/release/{CHAPTER}/{CHAPTER}.ipynb?token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    button = page.locator(".jp-NotebookPanel-toolbar .validate-button").first
    button.wait_for(state="visible", timeout=60_000)
    assert "Validate" in button.inner_text()
    page.locator(".jp-NotebookPanel-toolbar .validate-button button, .jp-NotebookPanel-toolbar .validate-button") \
        .first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(state="visible", timeout=120_000)
    # validating runs the notebook in a kernel: wait for the result rather than "Validating..."
    page.wait_for_function(
        "() => { const d = document.querySelector('.jp-Dialog'); return d && !/Validating\\.\\.\\./.test(d.innerText)"
        " && d.innerText.trim().length > 20; }", timeout=180_000)
    text = dialog.inner_text()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "course-validate.png"))
    # the untouched release fails its tests: the dialog names the failing cells and their assertion
    assert "Validation Results" in text and "The following cell failed" in text, text
    assert "not right yet: see the feedback above" in text, text
    assert not context.blocked, context.blocked
    page.close()


def test_formgrader_lists_assignments(lab, context):
    base_url, token = lab
    page = context.new_page()
    page.goto(f"{base_url}/formgrader?token={token}")
    for assignment in assignments.ASSIGNMENTS:
        page.get_by_text(assignment.stem, exact=True).first.wait_for(state="visible", timeout=60_000)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "course-formgrader.png"), full_page=True)
    assert not context.blocked, context.blocked
    page.close()


def test_make_lab_formgrader_finds_the_course(tmp_path, context):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in (".venv", "Makefile", "pyproject.toml", "notebooks", "classroom", "tensoradbook"):
        (checkout / name).symlink_to(REPO / name)
    shutil.copytree(REPO / "course", checkout / "course", ignore=shutil.ignore_patterns(*RUNTIME, "__pycache__"))
    token, port = secrets.token_hex(24), free_port()
    env = {k: v for k, v in os.environ.items() if k != paths.EXCHANGE_ENV}  # the course's own exchange
    env.update(JUPYTER_TOKEN=token, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), BROWSER="true", DISPLAY="")
    base_url = f"http://127.0.0.1:{port}"
    # -o: the environment counts as installed (this checkout's Makefile is newer than its stamp)
    cmd = ["make", "-s", "-o", ".venv/.installed", "lab", "IP=127.0.0.1", f"PORT={port}"]
    with server(cmd, f"{base_url}/api/status?token={token}", tmp_path / "lab.log", cwd=checkout, env=env,
                start_s=120, shutdown_url=f"{base_url}/api/shutdown", token=token):
        page = context.new_page()
        page.goto(f"{base_url}/formgrader?token={token}")
        for assignment in assignments.ASSIGNMENTS:
            page.get_by_text(assignment.stem, exact=True).first.wait_for(state="visible", timeout=60_000)
        text = page.locator("body").inner_text()
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "course-lab-formgrader.png"), full_page=True)
        page.close()
    log = (tmp_path / "lab.log").read_text()
    assert "No data available" not in text and "does not exist" not in text + log, log[-3000:]
    exchange = checkout / "course" / "exchange"
    assert exchange.is_dir() and exchange.stat().st_mode & 0o077 == 0  # the course's own, private to its owner
    assert (checkout / "work" / "00_start_here.ipynb").exists()  # make lab's start page, the reader's copy
    assert not context.blocked, context.blocked
