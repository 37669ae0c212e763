"""Every chapter runs in a real JupyterLab, driven by headless chromium.

One JupyterLab server (started from this virtual environment, on a free loopback
port with a random token) and one chromium (Debian's, through Playwright's sync API)
serve all chapters; each notebooks/*.ipynb is its own test. The server's root is a
temporary *copy* of notebooks/, so running the cells never touches the committed
files. For each chapter the test clears the outputs, runs Run > Run All Cells, waits
until every code cell has run and the kernel is idle, then checks that

* no cell shows an error (a traceback),
* no widget shows "Error displaying widget" or is stuck at "Loading widget...",
* at least as many widget views render as the notebook file stores widget outputs,

and saves screenshots of the whole chapter (screenshots/<notebook-stem>.png) and of each
widget (screenshots/<notebook-stem>-widget-<k>.png).

Needs chromium (``apt-get install -y chromium``) and playwright (``make install``);
without them the tests are skipped, or fail when CI=true. Environment knobs:
BOOK_CHROMIUM (browser binary), BOOK_BROWSER_NOTEBOOKS (a folder of notebooks to
use instead of notebooks/, for trying the test out), BOOK_BROWSER_TIMEOUT (seconds
per chapter, default 300).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.browser_support import chromium, jupyterlab, write_json

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = Path(os.environ.get("BOOK_BROWSER_NOTEBOOKS") or REPO / "notebooks")
SCREENSHOTS = REPO / "screenshots"
TIMEOUT_S = float(os.environ.get("BOOK_BROWSER_TIMEOUT", "300"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.glob("*.ipynb") if not p.name.startswith("."))



@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of the notebooks: yields (base_url, token)."""
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    shutil.copytree(
        NOTEBOOK_DIR,
        root / "notebooks",
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
    )
    settings = tmp / "settings"
    # No news / update toasts; every cell in the DOM (no virtual scrolling).
    write_json(
        settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings",
        {"fetchNews": "false", "checkForUpdates": False},
    )
    write_json(
        settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings",
        {"windowingMode": "none"},
    )
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        BROWSER="true",  # never open a browser, whatever happens
        PYTHONUNBUFFERED="1",
    )
    with jupyterlab(root, env, tmp / "jupyterlab.log") as lab_server:
        yield lab_server


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _stored_notebook(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    nonempty = ["".join(c["source"]).strip() != "" for c in code]
    widgets = sum(
        1
        for c in code
        for o in c.get("outputs", [])
        if WIDGET_MIME in o.get("data", {})
    )
    return nonempty, widgets


# Runs in the page: the state of the (only) open notebook.
STATE_JS = r"""
(nonempty) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return {ready: false, why: 'no notebook panel'};
  const cells = Array.from(panel.querySelectorAll('.jp-Cell.jp-CodeCell'));
  const prompts = cells.map(c => {
    const p = c.querySelector('.jp-InputPrompt');
    return p ? p.textContent.trim() : '';
  });
  // the status bar reads e.g. "Python 3 (ipykernel) | Idle" or "No Kernel | Initializing"
  const bar = document.querySelector('#jp-main-statusbar') || document.body;
  const m = bar ? bar.innerText.match(
    /\|\s*(Idle|Busy|Starting|Restarting|Initializing|Connecting|Disconnected|Dead|Unknown|Terminating)\b/) : null;
  const status = m ? m[1].toLowerCase() : null;
  const dialog = document.querySelector('.jp-Dialog') !== null;
  const errors = Array.from(panel.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    .map(e => e.textContent)
    .filter(t => /Traceback|Error\b/.test(t));
  const pending = prompts.filter(p => p.includes('*')).length;
  const unrun = prompts.filter((p, i) => nonempty[i] && !/\[\d+\]/.test(p)).length;
  return {ready: true, ncells: cells.length, pending, unrun, status, dialog, errors: errors.length};
}
"""

VIEWS_JS = r"""
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  // Widget outputs are rendered as a .jp-OutputArea-output panel holding the view
  // (JupyterLab sets no data-mime-type on it); skip those nested in another widget.
  const outs = Array.from(panel.querySelectorAll('.jp-OutputArea-output'))
    .filter(o => !o.parentElement.closest('.jupyter-widgets'))
    .filter(o => {
      const mime = o.getAttribute('data-mime-type');
      return mime === null || mime === 'application/vnd.jupyter.widget-view+json';
    });
  const text = panel.innerText;
  const scroller = panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook');
  return {
    outputs: outs.length,
    rendered: outs.filter(o => o.querySelector('.jupyter-widgets')).length,
    loading: (text.match(/Loading widget/g) || []).length,
    errorDisplaying: (text.match(/Error displaying widget/g) || []).length,
    errors: Array.from(panel.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
      .map(e => e.textContent).filter(t => /Traceback|Error\b/.test(t)),
    height: scroller ? scroller.scrollHeight : 0,
  };
}
"""


# Marks each top-level widget view so that it can be photographed on its own; returns the count.
MARK_WIDGETS_JS = r"""
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const views = Array.from(panel.querySelectorAll('.jp-OutputArea-output .jupyter-widgets'))
    .filter(v => !v.parentElement.closest('.jupyter-widgets'));
  views.forEach((v, k) => v.setAttribute('data-book-widget', String(k)));
  const scroller = panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook');
  if (scroller) scroller.scrollTop = 0;
  return views.length;
}
"""


def _save_screenshots(page, stem: str, height: int) -> None:
    """The whole notebook (viewport as tall as the notebook, scrolled to the top, because
    JupyterLab scrolls inside its panel) and each widget on its own, for a person to look at."""
    SCREENSHOTS.mkdir(exist_ok=True)
    for old in SCREENSHOTS.glob(f"{stem}-widget-*.png"):
        old.unlink()
    page.set_viewport_size({"width": 1280, "height": min(max(900, height + 200), 16000)})
    count = page.evaluate(MARK_WIDGETS_JS)
    page.wait_for_timeout(500)
    page.screenshot(path=str(SCREENSHOTS / f"{stem}.png"), full_page=True)
    for k in range(count):
        page.locator(f'[data-book-widget="{k}"]').screenshot(path=str(SCREENSHOTS / f"{stem}-widget-{k}.png"))


def _accept_kernel_dialog(page) -> None:
    dialog = page.locator(".jp-Dialog")
    if dialog.count() and re.search(r"kernel", dialog.first.inner_text(), re.I):
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()


def _menu(page, top: str, item: str) -> None:
    page.keyboard.press("Escape")  # close whatever menu may still be open
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{top}$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).first.click()


def _until(page, predicate, nonempty, seconds: float):
    """Poll the notebook state until predicate(state) holds; return it, or None."""
    deadline = time.monotonic() + seconds
    while True:
        _accept_kernel_dialog(page)
        state = page.evaluate(STATE_JS, nonempty)
        if predicate(state):
            return state
        if time.monotonic() > deadline:
            return None
        page.wait_for_timeout(200)


def _clear_and_run_all(page, nonempty) -> None:
    """Edit > Clear Outputs of All Cells, then Run > Run All Cells, checking each took."""
    total = sum(nonempty)
    for _ in range(3):
        _menu(page, "Edit", "Clear Outputs of All Cells")
        if _until(page, lambda s: s["unrun"] == total, nonempty, 5):
            break
    else:
        raise AssertionError("Edit > Clear Outputs of All Cells did not clear the prompts")
    for _ in range(3):
        _menu(page, "Run", "Run All Cells")
        def started(s):
            return s["unrun"] < total or s["pending"] > 0 or s["status"] == "busy"
        if total == 0 or _until(page, started, nonempty, 15):
            return
    raise AssertionError("Run > Run All Cells did not start the cells")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_chapter_runs_in_jupyterlab(lab, browser, notebook: Path):
    base_url, token = lab
    nonempty, stored_widgets = _stored_notebook(notebook)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    console_errors: list[str] = []
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{base_url}/lab/tree/notebooks/{notebook.name}?reset&token={token}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=120_000)

        # kernel started (accepting a "Select Kernel" dialog if one comes up)
        deadline = time.monotonic() + 120
        while True:
            _accept_kernel_dialog(page)
            state = page.evaluate(STATE_JS, nonempty)
            if (
                state.get("ready")
                and state["status"] == "idle"
                and not state["dialog"]
                and state["ncells"] == len(nonempty)
            ):
                break
            assert time.monotonic() < deadline, (
                f"notebook not loaded with an idle kernel after 120 s: {state}, "
                f"{len(nonempty)} code cells in the file"
            )
            page.wait_for_timeout(250)
        print(f"{notebook.name}: loaded in {time.monotonic() - deadline + 120:.1f} s")

        t0 = time.monotonic()
        _clear_and_run_all(page, nonempty)
        deadline = t0 + TIMEOUT_S
        while True:
            _accept_kernel_dialog(page)
            state = page.evaluate(STATE_JS, nonempty)
            idle = state["status"] == "idle" and state["pending"] == 0
            if idle and (state["unrun"] == 0 or state["errors"]):
                break
            assert time.monotonic() < deadline, (
                f"{notebook.name} did not finish in {TIMEOUT_S:.0f} s: {state}"
            )
            page.wait_for_timeout(250)
        run_s = time.monotonic() - t0

        # give widget views a moment to render
        deadline = time.monotonic() + 30
        while True:
            views = page.evaluate(VIEWS_JS)
            if views["loading"] == 0 and views["rendered"] >= stored_widgets:
                break
            if time.monotonic() > deadline:
                break
            page.wait_for_timeout(250)

        _save_screenshots(page, notebook.stem, views["height"])
        print(f"{notebook.name}: ran in {run_s:.1f} s, {views['rendered']} widget views")

        where = f"{notebook.name} (screenshot: screenshots/{notebook.stem}.png)"
        assert not views["errors"], f"error output in {where}:\n" + "\n---\n".join(views["errors"])
        assert views["errorDisplaying"] == 0, f"'Error displaying widget' in {where}; console: {console_errors}"
        assert views["loading"] == 0, f"{views['loading']} widget(s) stuck at 'Loading widget...' in {where}"
        assert state["unrun"] == 0, f"{state['unrun']} code cell(s) did not run in {where}"
        assert views["rendered"] >= stored_widgets, (
            f"{views['rendered']} widget views rendered in {where}, but the notebook stores "
            f"{stored_widgets} widget outputs; console: {console_errors}"
        )
    except BaseException:
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}.png"), full_page=True)
        raise
    finally:
        context.close()  # never saves: the server's notebooks are a throwaway copy anyway
