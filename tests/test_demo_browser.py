"""The lecture demos in a real browser, served by Voila as ``make demo`` serves them, with every request that
leaves loopback aborted (a lecture hall without a network). The slides: tests/test_slides_browser.py.

* the gallery links every demo; each demo renders its widget with no error, at the presentation scale its
  pictures are shown pixel for pixel within a 1280-pixel screen (so the axis labels that
  tests/test_demo.py measures at 20 pixels or more stay that large), and its first interaction (a step, a
  run, a slider, a menu) changes what is shown.

Screenshots (screenshots/demo-*.png) are kept for a person to look at.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from classroom import demo as demos
from classroom import voila_serve
from tests.browser_support import chromium, free_port, offline_context, server

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "screenshots"
VIEWPORT = {"width": 1280, "height": 900}
RENDER_TIMEOUT_MS = 180_000


def _voila(tmp_path_factory, name: str, target: Path, extra=()):
    tmp = tmp_path_factory.mktemp(name)
    port = free_port()
    env = dict(os.environ, **{demos.SCALE_ENV: demos.DEFAULT_SCALE}, BROWSER="true",
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    command = voila_serve.voila_command(target, "127.0.0.1", port, list(extra))
    command[0] = sys.executable
    return server(command, f"http://127.0.0.1:{port}/", tmp / "voila.log", cwd=REPO, env=env), port


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    running, port = _voila(tmp_path_factory, "demos", demos.DEMO_DIR)
    with running:
        yield f"http://127.0.0.1:{port}/voila/render"


def _open(browser, url: str):
    context = offline_context(browser, viewport=VIEWPORT)
    page = context.new_page()
    page.goto(url, timeout=RENDER_TIMEOUT_MS)
    return context, page


def _no_errors(page) -> None:
    errors = page.locator('[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output pre')
    texts = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not texts, f"the page shows an error: {texts[0][:2000]}"
    assert page.get_by_text("Error displaying widget").count() == 0


def _view(page) -> str:
    """What the page shows: its text and the pictures' sources (a redrawn figure changes its data URL)."""
    sources = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.src.length + ':' + i.src.slice(-64))")
    return page.inner_text("body") + "\n".join(sources)


def _interact(page, interaction: str) -> None:
    kind, _, which = interaction.partition(":")
    if kind == "button":
        # the button's text (an icon, as on GradientLab's Run, adds no text but can change its accessible name)
        label = re.compile(rf"^\s*{re.escape(which)}\s*$")
        page.locator("button.jupyter-button").filter(has_text=label).first.click()
    elif kind == "slider":
        handle = page.locator(".widget-slider .noUi-handle").nth(int(which))
        handle.focus()
        handle.press("ArrowRight")
    elif kind == "select":
        menu = page.locator(".widget-dropdown select").nth(int(which))
        options = menu.locator("option").all_inner_texts()
        current = menu.evaluate("m => m.selectedIndex")
        menu.select_option(label=options[(current + 1) % len(options)])
    else:
        raise ValueError(interaction)


def test_gallery_links_every_demo(browser, gallery):
    context, page = _open(browser, f"{gallery}/index.ipynb")
    try:
        page.wait_for_selector(".jp-RenderedMarkdown a", state="attached", timeout=RENDER_TIMEOUT_MS)
        links = page.eval_on_selector_all(".jp-RenderedMarkdown a", "as => as.map(a => a.getAttribute('href'))")
        assert [f"{d.stem}.ipynb" for d in demos.DEMOS] == [h for h in links if h.endswith(".ipynb")]
        assert not context.blocked, f"requests left loopback: {context.blocked}"
    finally:
        context.close()


@pytest.mark.parametrize("demo", demos.DEMOS, ids=lambda d: d.stem)
def test_demo_renders_and_answers(browser, gallery, demo):
    context, page = _open(browser, f"{gallery}/{demo.stem}.ipynb")
    try:
        page.wait_for_selector(".jupyter-widgets", timeout=RENDER_TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        _no_errors(page)
        for width, natural in page.eval_on_selector_all(
                ".jupyter-widgets img", "imgs => imgs.map(i => [i.getBoundingClientRect().width, i.naturalWidth])"):
            if natural:
                assert abs(width - natural) <= 1, f"a picture {natural} px wide is shown {width:.0f} px wide"
                assert width <= VIEWPORT["width"], f"a picture {width:.0f} px wide overflows the screen"
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"demo-{demo.stem}.png"), full_page=True)
        before = _view(page)
        _interact(page, demo.interaction)
        deadline_ms, waited = 60_000, 0
        while _view(page) == before and waited < deadline_ms:
            page.wait_for_timeout(250)
            waited += 250
        assert _view(page) != before, f"{demo.interaction} changed nothing on the page"
        _no_errors(page)
        assert not context.blocked, f"requests left loopback: {context.blocked}"
    finally:
        context.close()

