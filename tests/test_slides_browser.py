"""Every slide of every chapter fits a 1280 x 720 screen, and the keys visit them all in order, offline.

Fits: nothing is taller or wider than its slide, no line of text and no formula is cut at the slide's edges, no
formula is wider than the block it is in (the fit rule scales it), and no prose scrolls in a frame (the fit rule
carries it on to a next slide after a sentence); only code and outputs may scroll in their own frames.

Measured on the static decks of classroom.deck (the chapters' committed outputs, widgets drawn from their stored
state; seconds a chapter) for all chapters, and on the live slides Voila serves (``make slides``: the chapter
executed, seconds on a warm Numba cache, a minute and more on a cold one) for the chapter with the largest widget,
GradientLab, with its Run pressed: the live page's widgets, MathJax and kernel output are what a lecture shows,
and the static ones differ from them in detail (the stored widget pictures are at scale 1, not the presentation
scale), so the live chapter checks that the static measurement stands for it, keys and speaker view included.
Screenshots of each deck's fullest slide (before the fit rule framed anything) go to screenshots/slides/, for a
person to look at.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from classroom import deck
from classroom import demo as demos
from classroom import voila_serve
from tests.browser_support import free_port, launch_chromium, offline_context, server

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "screenshots" / "slides"
VIEWPORT = {"width": deck.WIDTH, "height": deck.HEIGHT}
LIVE_CHAPTER = "06a_kernels"  # GradientLab: its Run button was off the slide, its tables 9-13 px
LIVE_RENDER_MS = 600_000  # the chapter executes before the page shows (a minute or two on 2 busy cores)
#: The smallest text a table on a slide may have (the widgets' result tables were 9-13 px).
TABLE_MIN_PX = 16
#: The speaker view shows a slide's notes: here, the setup code that runs unseen.
NOTES_CHAPTER = "04a_integer_equations"


@pytest.fixture(scope="module")
def browser():
    pw, b = launch_chromium()
    try:
        yield b
    finally:
        b.close()
        pw.stop()


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    directory = tmp_path_factory.mktemp("decks")
    deck.build(deck.chapters(), directory)
    with deck.serve(directory) as base:
        yield base


def _open(browser, url: str, timeout_ms: int = deck.LOAD_TIMEOUT_MS):
    context = offline_context(browser, viewport=VIEWPORT)
    page = context.new_page()
    page.goto(url, timeout=timeout_ms)
    deck.settle(page, timeout_ms)
    return context, page


def _check_fit(page, name: str) -> None:
    slides = deck.measure(page)
    assert len(slides) > 1, f"{name} is not a talk of several slides"
    wrong = [f"slide {s['h']}.{s['v']} {s['title']!r}: {', '.join(deck.overflows(s))}"
             for s in slides if deck.overflows(s)]
    assert not wrong, f"{name}: slides that do not fit {VIEWPORT}:\n" + "\n".join(wrong)
    small = [s for s in slides if s["table_px"] is not None and s["table_px"] < TABLE_MIN_PX]
    assert not small, f"{name}: tables in {TABLE_MIN_PX - 1} px text or less on {[(s['h'], s['v']) for s in small]}"
    fullest = max(slides, key=lambda s: s["natural"])
    page.evaluate(f"window.tensoradbookReveal.slide({fullest['h']}, {fullest['v']})")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _walk(page, key: str, start: str, goal: list[int]) -> list[list[int]]:
    """The slides that pressing ``key`` visits from the first one (``start`` "first") or from the last with all
    its fragments shown ("last"), in order, until it moves no more."""
    # reveal.js resumes a stack at the sub-slide last shown in it; back at the first slide it forgets them in a
    # timer, which a loaded machine runs late: the walk forgets them itself, as a fresh audience's deck has none
    page.evaluate("""start => { const R = window.tensoradbookReveal;
      if (start === "first") { R.slide(0, 0, -1); } else {
        const last = window.tensoradbookFit.leaves().pop(), i = R.getIndices(last);
        R.slide(i.h, i.v); while (R.nextFragment()) {} }
      document.querySelectorAll("[data-previous-indexv]").forEach(s => s.removeAttribute("data-previous-indexv")); }""",
                  start)
    where = "() => { const i = window.tensoradbookReveal.getIndices(); return [i.h, i.v || 0, i.f ?? -1]; }"
    # Each press is awaited until the slide or fragment changes (on a loaded machine, presses not awaited landed two
    # between two readings), up to ``goal``, the slide where the walk ends, with its fragments all shown or hidden.
    done = "() => !window.tensoradbookReveal.availableFragments()." + ("prev" if key == "ArrowLeft" else "next")
    seen, now = [], page.evaluate(where)
    for _ in range(2000):
        if not seen or seen[-1] != now[:2]:
            seen.append(now[:2])
        if now[:2] == goal and page.evaluate(done):
            break
        page.keyboard.press(key)
        try:
            page.wait_for_function(f"prev => JSON.stringify(({where})()) !== JSON.stringify(prev)", arg=now,
                                   timeout=30_000)
        except PlaywrightTimeoutError:
            break  # the key moves no more: the order seen so far is what the assertion compares
        now = page.evaluate(where)
    return seen


def _check_keys(page, name: str) -> None:
    page.evaluate("document.activeElement && document.activeElement.blur()")  # Space on a button presses it
    order = page.evaluate("() => window.tensoradbookFit.leaves().map(s => {"
                          " const i = window.tensoradbookReveal.getIndices(s); return [i.h, i.v || 0]; })")
    for key in ("Space", "ArrowRight"):
        assert _walk(page, key, "first", order[-1]) == order, f"{key} does not visit every slide of {name} in order"
    assert _walk(page, "ArrowLeft", "last", order[0]) == order[::-1], f"ArrowLeft does not go back through {name}"


@pytest.mark.parametrize("chapter", deck.chapters())
def test_every_slide_fits_and_the_keys_visit_each_in_order(browser, decks, chapter):
    context, page = _open(browser, f"{decks}/{chapter}.html")
    try:
        _check_fit(page, chapter)
        _check_keys(page, chapter)
        assert not context.blocked, f"requests left loopback: {context.blocked}"
    finally:
        context.close()


def test_speaker_view_shows_the_notes(browser, decks):
    context, page = _open(browser, f"{decks}/{NOTES_CHAPTER}.html")
    try:
        notes = page.evaluate("""() => { const R = window.tensoradbookReveal;
          const s = window.tensoradbookFit.leaves().find(s => s.querySelector('aside.notes'));
          if (!s) return ''; const i = R.getIndices(s); R.slide(i.h, i.v); return R.getSlideNotes(); }""")
        assert "import" in notes, f"no slide of {NOTES_CHAPTER} has its setup code as notes"
        with context.expect_page() as opened:
            page.keyboard.press("s")
        shown = "() => (document.querySelector('.speaker-controls-notes .value') || {}).textContent || ''"
        opened.value.wait_for_function(f"({shown})().includes('import')", timeout=60_000)
        assert not context.blocked, f"requests left loopback: {context.blocked}"
    finally:
        context.close()


def test_live_slides_fit(browser, tmp_path_factory):
    from classroom.assets import SLIDES_TEMPLATE_DIR

    if not (SLIDES_TEMPLATE_DIR / "static" / "revealjs").exists():
        pytest.fail("the slides template is not installed: run `make install`")
    voila_serve.refresh_template()  # this checkout's style sheet and fit rule, as make slides serves them
    tmp = tmp_path_factory.mktemp("live-slides")
    port = free_port()
    env = dict(os.environ, **{demos.SCALE_ENV: demos.DEFAULT_SCALE}, BROWSER="true",
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    options = voila_serve.slides_options(LIVE_CHAPTER)
    command = voila_serve.voila_command(voila_serve.chapter_path(LIVE_CHAPTER), "127.0.0.1", port, options)
    command[0] = sys.executable
    # ready when it serves a static file: "/" itself would execute the chapter once more
    ready = f"http://127.0.0.1:{port}/{voila_serve.READY_PATH}"
    with server(command, ready, tmp / "voila.log", cwd=REPO, env=env, start_s=180):
        context, page = _open(browser, f"http://127.0.0.1:{port}/", LIVE_RENDER_MS)
        try:
            page.wait_for_selector(".jupyter-widgets button", state="attached", timeout=120_000)
            errors = [t for t in page.locator(".jp-OutputArea-output pre").all_inner_texts() if "Traceback" in t]
            assert not errors, f"the slides show an error: {errors[0][:2000]}"
            run = page.locator("button.jupyter-button").filter(has_text=re.compile(r"^\s*Run\s*$")).first
            page.evaluate("b => { const R = window.tensoradbookReveal, i = R.getIndices(b.closest('section'));"
                          " R.slide(i.h, i.v); }", run.element_handle())
            page.evaluate("window.tensoradbookReveal.nextFragment()")  # the widget comes in as a fragment
            box = run.bounding_box()
            assert box and box["x"] + box["width"] <= VIEWPORT["width"], f"GradientLab's Run button is at {box}"
            run.click()  # its result tables (9-13 px before) are measured with the rest below
            page.wait_for_function("() => Array.from(document.querySelectorAll('.jupyter-widgets td'))"
                                   ".some(c => c.offsetHeight > 0)", timeout=300_000)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{LIVE_CHAPTER}-live-gradientlab.png"))
            _check_fit(page, f"{LIVE_CHAPTER}-live")
            _check_keys(page, f"{LIVE_CHAPTER} (live)")
            with context.expect_page() as opened:  # the speaker view previews the static deck, no second kernel
                page.keyboard.press("s")
            preview = opened.value.wait_for_selector(
                f"#current-slide iframe[src*='/static/deck/{LIVE_CHAPTER}.html']", state="attached", timeout=60_000)
            preview.content_frame().wait_for_selector("html[data-slides-ready]", state="attached", timeout=60_000)
            assert not context.blocked, f"requests left loopback: {context.blocked}"
        finally:
            context.close()
