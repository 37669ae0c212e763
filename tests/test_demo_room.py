"""The demo server as ``make demo`` runs it for a room (classroom.voila_room: preheated kernels, a cap, culling,
the demo template at the presentation scale), in a real browser at 1280 x 800 with every request that leaves
loopback aborted:

* closing a page shuts its kernel down: Voila's page-leave beacon is accepted (no ``403 '_xsrf' argument
  missing``) and the kernel is gone;
* past the cap a page says the server is full, and a closed page makes room again;
* every demo, before and after its first interaction: nothing reaches past the screen's 1280 pixels (but a
  formula wider than the page, which scrolls in its own box), no label or text box hides part of its text,
  every picture fits the 800-pixel height, and the controls, labels and tables are at the presentation scale.

Screenshots of every demo at 1280 x 800 (its first view, and scrolled to the end of its widget) are kept in
screenshots/demos/ for a person to look at.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from classroom import demo as demos
from classroom import voila_room
from classroom import voila_serve
from tests.browser_support import chromium, free_port, offline_context, server
from tests.test_demo_browser import _interact, _view

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "screenshots" / "demos"
VIEWPORT = {"width": 1280, "height": 800}
SCALE = float(demos.DEFAULT_SCALE)
RENDER_TIMEOUT_MS = 240_000  # generous: the first pages wait for the preheated kernels on two busy cores
GONE_TIMEOUT_S = 60


def _room(tmp_path_factory, name: str, target: Path, max_kernels: int, pool: int):
    """A Voila server with the room's options on ``target``: (the running server, its URL, its log's path)."""
    voila_serve.refresh_template()
    tmp = tmp_path_factory.mktemp(name)
    port = free_port()
    env = dict(os.environ, **{demos.SCALE_ENV: demos.DEFAULT_SCALE}, BROWSER="true",
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    options = voila_room.room_options(max_kernels, pool, voila_room.CULL_IDLE_MINUTES, demos.DEFAULT_SCALE)
    command = voila_serve.voila_command(target, "127.0.0.1", port, options)
    command[0] = sys.executable
    url = f"http://127.0.0.1:{port}"
    ready = url + "/" + voila_serve.READY_PATH  # not a page: on one notebook, a page takes a kernel
    return server(command, ready, tmp / "voila.log", cwd=REPO, env=env), url, tmp / "voila.log"


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    running, url, log = _room(tmp_path_factory, "room", demos.DEMO_DIR, max_kernels=40, pool=1)
    with running:
        yield url, log


def _kernel_alive(url: str, kernel_id: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/kernels/{kernel_id}", timeout=10):
            return True
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return False
        raise


def _wait_gone(url: str, kernel_id: str) -> bool:
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while _kernel_alive(url, kernel_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _open_demo(browser, url: str):
    context = offline_context(browser, viewport=VIEWPORT)
    page = context.new_page()
    page.goto(url, timeout=RENDER_TIMEOUT_MS)
    page.wait_for_selector(".jupyter-widgets", timeout=RENDER_TIMEOUT_MS)
    page.wait_for_load_state("networkidle")
    return context, page


def _kernel_id(page) -> str:
    return json.loads(page.inner_text("#jupyter-config-data"))["kernelId"]


def test_closing_a_page_shuts_its_kernel_down(browser, room):
    url, log = room
    context, page = _open_demo(browser, f"{url}/voila/render/07_step_inverse.ipynb")
    try:
        kernel = _kernel_id(page)
        assert _kernel_alive(url, kernel)
        assert any(c["name"] == "_xsrf" for c in context.cookies()), "the page has no _xsrf cookie for its beacon"
        page.close(run_before_unload=True)  # as a browser closes a tab: beforeunload sends the shutdown beacon
        assert _wait_gone(url, kernel), f"kernel {kernel} still runs {GONE_TIMEOUT_S} s after its page closed"
        assert "403 POST" not in log.read_text(), log.read_text()[-3000:]
    finally:
        context.close()


def test_past_the_cap_a_page_says_the_server_is_full(browser, tmp_path_factory):
    running, url, log = _room(tmp_path_factory, "cap", demos.DEMO_DIR / "07_step_inverse.ipynb",
                              max_kernels=1, pool=0)
    with running:
        first, page = _open_demo(browser, f"{url}/")
        second = offline_context(browser, viewport=VIEWPORT)
        try:
            kernel = _kernel_id(page)
            turned_away = second.new_page()
            response = turned_away.goto(f"{url}/", timeout=RENDER_TIMEOUT_MS)
            assert response.status == 503
            assert turned_away.locator("#room-full").inner_text() == "The demo server is full"
            assert "All 1 kernels of this demo server are in use" in turned_away.inner_text("body")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            turned_away.screenshot(path=str(SCREENSHOTS / "server-full.png"))
            page.close(run_before_unload=True)
            assert _wait_gone(url, kernel)
            turned_away.reload(timeout=RENDER_TIMEOUT_MS)  # what its refresh does every 30 s
            turned_away.wait_for_selector(".jupyter-widgets", timeout=RENDER_TIMEOUT_MS)
            assert not first.blocked and not second.blocked
        finally:
            second.close()
            first.close()


# Every visible element in the page's outputs that breaks the rules of the module's docstring, as sentences.
PROBLEMS_JS = """
(scale) => {
  const width = innerWidth, height = innerHeight, problems = [];
  const name = e => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} "${(e.innerText || e.value || '')
    .trim().slice(0, 40)}"`;
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  for (const e of document.querySelectorAll('.jp-OutputArea-output *')) {
    if (!shown(e) || e.closest('.widget-htmlmath-content')) continue;
    const r = e.getBoundingClientRect();
    if (r.right > width + 1) problems.push(`${name(e)} reaches x = ${Math.round(r.right)}`);
  }
  for (const e of document.querySelectorAll('.jp-OutputArea-output .widget-label, .jp-OutputArea-output textarea, '
                                            + '.jp-OutputArea-output input[type=text]')) {
    if (shown(e) && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1))
      problems.push(`${name(e)} hides part of its text`);
  }
  for (const e of document.querySelectorAll('.jp-OutputArea-output img')) {
    if (shown(e) && e.getBoundingClientRect().height > height - 20)
      problems.push(`a picture ${Math.round(e.getBoundingClientRect().height)} px high cannot be seen whole`);
  }
  const controls = '.widget-label, button.jupyter-button, .widget-dropdown select, .widget-readout, '
                   + '.widget-text input, .widget-textarea textarea, .widget-html-content td, .widget-html-content th';
  for (const e of document.querySelectorAll(controls)) {
    const size = parseFloat(getComputedStyle(e).fontSize);
    if (shown(e) && size < 0.9 * 13 * scale) problems.push(`${name(e)} is drawn at ${size} px`);
  }
  return problems;
}
"""


def _screenshots(page, stem: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{stem}.png"))
    page.locator(".jupyter-widgets").last.evaluate("e => e.scrollIntoView({block: 'end'})")
    page.screenshot(path=str(SCREENSHOTS / f"{stem}-end.png"))


@pytest.mark.parametrize("demo", demos.DEMOS, ids=lambda d: d.stem)
def test_demo_fits_the_screen_at_the_scale(browser, room, demo):
    url, _ = room
    context, page = _open_demo(browser, f"{url}/voila/render/{demo.stem}.ipynb")
    try:
        assert page.evaluate(PROBLEMS_JS, SCALE) == [], "at first"
        _screenshots(page, demo.stem)
        before = _view(page)
        _interact(page, demo.interaction)
        deadline = time.monotonic() + 60
        while _view(page) == before and time.monotonic() < deadline:
            page.wait_for_timeout(250)
        page.wait_for_load_state("networkidle")
        assert page.evaluate(PROBLEMS_JS, SCALE) == [], f"after {demo.interaction}"
        assert not context.blocked, f"requests left loopback: {context.blocked}"
    finally:
        page.close(run_before_unload=True)
        context.close()
