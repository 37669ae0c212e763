"""The static HTML edition (``make site``, :mod:`classroom.site`): built once into a temporary folder, then
checked as files (every chapter listed, no script or style sheet from the network) and, marked ``browser``, in
headless chromium behind a static file server with every request that leaves loopback aborted: each chapter's
math is typeset by the local MathJax, its widgets show their static pictures (stored widget views without one
are drawn by the local widget manager without a kernel), and its previous/next links lead to pages that exist.

Screenshots of the index and of chapter 04a go to screenshots/ (site-index.png, site-04a_integer_equations.png)
for a person to look at.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from classroom import site
from tests import browser_support

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "screenshots"
CHAPTERS = site.chapters()
STEMS = [c.stem for c in CHAPTERS]
BINDER = "https://mybinder.org/"
# the chapter whose screenshot (a widget and the text above it) goes to screenshots/
SHOT = "04a_integer_equations" if "04a_integer_equations" in STEMS else STEMS[0]


def stores_html_math(stem: str) -> bool:
    state = json.loads((site.NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["metadata"].get("widgets", {})
    models = state.get(site.WIDGET_STATE, {}).get("state", {}).values()
    return any(m.get("model_name") == "HTMLMathModel" for m in models)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site, built once for this module with a made-up Binder repository (to see the option reach the pages)."""
    out = tmp_path_factory.mktemp("site") / "site"
    index = site.build(out, binder_repo="someone/somebook")
    assert index == out / "index.html"
    return out


def test_index_lists_every_chapter(built):
    index = (built / "index.html").read_text(encoding="utf-8")
    assert STEMS[0] == site.START_PAGE
    positions = []
    for chapter in CHAPTERS:
        assert (built / chapter.href).is_file(), chapter.href
        m = re.search(rf'<a class="site-chapter-title" href="{re.escape(chapter.href)}">', index)
        assert m, f"{chapter.href} is not on the index"
        positions.append(m.start())
        assert chapter.number and chapter.short and chapter.description, chapter
        assert chapter.number in index
    assert positions == sorted(positions), "the index lists the chapters out of order"
    assert site.binder_url("someone/somebook") in index.replace("&amp;", "&")


def test_pages_load_nothing_from_the_network(built):
    pages = sorted(built.glob("*.html"))
    assert len(pages) == len(CHAPTERS) + 1
    remote_asset = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)
    cdn = re.compile(r"cdnjs\.cloudflare\.com|unpkg\.com|cdn\.jsdelivr\.net|mathjax\.org/|fonts\.googleapis", re.I)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not remote_asset.search(text), f"{page.name} loads a script or style sheet from the network"
        assert not cdn.search(text), f"{page.name} names a CDN: {cdn.search(text)[0]}"
        # the only absolute links a reader follows are to Binder
        for href in re.findall(r'<a\b[^>]*\bhref="(https?://[^"]*)"', text):
            assert href.startswith(BINDER), f"{page.name} links to {href}"
    for css in built.glob("assets/**/*.css"):
        assert not re.search(r"""@import\s+(?:url\()?["']?https?:""", css.read_text(encoding="utf-8")), css


def test_chapter_links_point_to_pages(built):
    for chapter in CHAPTERS:
        text = (built / chapter.href).read_text(encoding="utf-8")
        hrefs = re.findall(r'<a\b[^>]*\bhref="([^"]*)"', text)
        assert not [h for h in hrefs if ".ipynb" in h and not h.startswith(BINDER)], chapter.stem
        assert not [h for h in hrefs if h.startswith("../")], chapter.stem
        for href in hrefs:
            target = urlsplit(href).path
            if target and not urlsplit(href).scheme:
                assert (built / target).is_file(), f"{chapter.stem} links to {href}, which is not in the site"
        assert site.binder_url("someone/somebook", chapter.stem) in text.replace("&amp;", "&")


def test_links_are_rewritten():
    stems = {"03_tensor_functions"}
    page = ('<a href="03_tensor_functions.ipynb#vec">chapter 03</a> <a href="../tensoradbook/ad/derive.py">'
            '<code>derive</code></a> <a href="https://example.org/x.ipynb">paper</a> <a href="#top">top</a>')
    out = site.rewrite_links(page, stems)
    assert '<a href="03_tensor_functions.html#vec">chapter 03</a>' in out
    assert '<span class="site-repo-path" title="tensoradbook/ad/derive.py' in out and "derive.py\"><code>" not in out
    assert '<a href="https://example.org/x.ipynb">' in out and '<a href="#top">' in out


def test_refuses_to_replace_a_folder_it_did_not_build(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="refusing"):
        site.build(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_binder_url_and_option(tmp_path, capsys):
    assert site.binder_url("a/b", "04a_integer_equations") == (
        "https://mybinder.org/v2/gh/a/b/HEAD?labpath=notebooks%2F04a_integer_equations.ipynb")
    with pytest.raises(SystemExit):
        site.main(["--binder-repo", "not a repo", "--output", str(tmp_path / "x")])
    assert "owner/repository" in capsys.readouterr().err


# What the browser reports about a chapter page once MathJax and the widget manager are done.
PAGE_STATE = r"""() => {
  const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const markdown = Array.from(document.querySelectorAll('.jp-MarkdownOutput'));
  return {
    math: document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container').length,
    mathErrors: document.querySelectorAll('.MathJax_Error, .jp-MarkdownOutput merror').length,
    rawDisplayMath: markdown.filter(e => visible(e) && e.innerText.includes('$$')).map(e => e.innerText.slice(0, 80)),
    rawWidgetMath: Array.from(document.querySelectorAll('.widget-htmlmath')).filter(
      e => /\$\$|\\\(/.test(e.innerText)).map(e => e.innerText.slice(0, 80)),
    pictures: Array.from(document.querySelectorAll('figure.site-widget-picture img')).filter(
      img => img.complete && img.naturalWidth > 0).length,
    widgetOutputs: Array.from(document.querySelectorAll('.jp-OutputArea-output.jupyter-widgets')).map(
      e => e.querySelectorAll('.lm-Widget, .jupyter-widgets.widget-container, .widget-inline-hbox').length),
    // the html-manager's stand-in for a view it could not create
    errorWidgets: Array.from(document.querySelectorAll('.jupyter-widgets-error-widget, .jupyter-widgets .icon-error'))
      .concat(Array.from(document.querySelectorAll('.jupyter-widgets')).filter(
        e => /Could not create a view|Error displaying widget/.test(e.innerText || '')))
      .map(e => (e.innerText || e.className).slice(0, 120)),
    prev: Array.from(document.querySelectorAll('a[rel="prev"]')).map(a => a.getAttribute('href')),
    next: Array.from(document.querySelectorAll('a[rel="next"]')).map(a => a.getAttribute('href')),
    index: document.querySelectorAll('a.site-nav-index[href="index.html"]').length,
    binder: Array.from(document.querySelectorAll('a.site-nav-binder')).map(a => a.href),
  };
}"""
MATH_DONE = "() => !!(window.MathJax && MathJax.Hub && MathJax.Hub.queue && !MathJax.Hub.queue.pending"
MATH_DONE += " && !MathJax.Hub.queue.running && document.querySelector('.MathJax, .MathJax_Display'))"
# MathJax 2's HTML-CSS output typesets a chapter in 5-10 s (it fetches its fonts one after the other, restarting
# each time): the start page, the screenshot's chapter and those whose widgets typeset math (HTMLMath) are waited
# for to the end; on the others MathJax has started (math typeset, no raw $$ left: its tex2jax pass turns all of
# them into math first).
FULL_MATH = {site.START_PAGE, SHOT} | {c.stem for c in CHAPTERS if stores_html_math(c.stem)}
MATH_STARTED = """() => !!(window.MathJax && MathJax.Hub && document.querySelector('.MathJax'))
  && !Array.from(document.querySelectorAll('.jp-MarkdownOutput')).some(e => e.innerText.includes('$$'))"""
WIDGETS_DONE = """(n) => Array.from(document.querySelectorAll('.jp-OutputArea-output.jupyter-widgets'))
  .filter(e => e.querySelector('.lm-Widget')).length >= n"""


@pytest.mark.browser
def test_pages_in_an_offline_browser(built, tmp_path):
    port = browser_support.free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port), "--directory", str(built)]
    with browser_support.server(cmd, f"{base}/index.html", tmp_path / "http.log"), browser_support.chromium() as b:
        context = browser_support.offline_context(b, viewport={"width": 1280, "height": 900})
        missing = []  # local files the pages asked for and the server did not have
        context.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
        errors = []
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        # One chapter after the other: side by side in several tabs was no faster on two cores, and background
        # tabs' throttled timers slow MathJax down.
        for i, chapter in enumerate(CHAPTERS):
            page.goto(f"{base}/{chapter.href}", wait_until="load")
            check_chapter(page, i)
            if chapter.stem == SHOT:
                path = site.NOTEBOOKS / f"{SHOT}.ipynb"
                widgets = site.widget_view_count(path) + site.widget_picture_count(path)
                shoot(page, f"site-{SHOT}.png", widget=widgets > 0)
        page.goto(f"{base}/index.html", wait_until="load")
        page.wait_for_function(MATH_DONE, timeout=30_000)
        shoot(page, "site-index.png")
        # the index's links lead to the chapters, and a chapter's "next" to the next chapter
        page.click(f'a.site-chapter-title[href="{CHAPTERS[1].href}"]')
        page.wait_for_url(f"{base}/{CHAPTERS[1].href}")
        page.click(".site-nav-top a[rel=next]")
        page.wait_for_url(f"{base}/{CHAPTERS[2].href}")
        context.close()
    assert not errors, errors
    assert not missing, f"missing from the site: {missing}"
    assert not context.blocked, f"requests that left loopback: {context.blocked}"


def check_chapter(page, i: int) -> None:
    """One chapter page, once loaded: math typeset, stored widgets drawn, navigation in place."""
    chapter = CHAPTERS[i]
    where = chapter.stem
    stored = site.widget_view_count(site.NOTEBOOKS / f"{chapter.stem}.ipynb")
    pictures = site.widget_picture_count(site.NOTEBOOKS / f"{chapter.stem}.ipynb")
    if stored:
        page.wait_for_function(WIDGETS_DONE, arg=stored, timeout=60_000, polling=100)
    # after the widgets: their math joins MathJax's queue when they are drawn
    page.wait_for_function(MATH_DONE if where in FULL_MATH else MATH_STARTED, timeout=60_000, polling=100)
    state = page.evaluate(PAGE_STATE)
    assert state["math"] > 0, f"{where}: no math typeset"
    assert not state["mathErrors"], f"{where}: {state['mathErrors']} MathJax errors"
    assert not state["rawDisplayMath"], f"{where}: raw $$ left in {state['rawDisplayMath']}"
    if where in FULL_MATH:  # the widgets' math is typeset after the page's
        assert not state["rawWidgetMath"], f"{where}: raw math left in widgets {state['rawWidgetMath']}"
    drawn = [n for n in state["widgetOutputs"] if n > 0]
    assert len(drawn) >= stored, f"{where}: {len(drawn)} of {stored} stored widget views drawn"
    assert state["pictures"] == pictures, f"{where}: {state['pictures']} of {pictures} widget pictures shown"
    assert not state["errorWidgets"], f"{where}: error widgets {state['errorWidgets']}"
    assert state["index"] == 2, f"{where}: {state['index']} links to the index (top and bottom)"
    assert state["binder"] and all("someone/somebook" in u and where in u for u in state["binder"]), state
    want_prev = [CHAPTERS[i - 1].href] * 2 if i > 0 else []
    want_next = [CHAPTERS[i + 1].href] * 2 if i + 1 < len(CHAPTERS) else []
    assert state["prev"] == want_prev and state["next"] == want_next, f"{where}: {state}"


def shoot(page, name: str, widget: bool = False) -> None:
    """A screenshot into screenshots/: the top of the page, or the first widget (its picture, or drawn live) with
    the text above it."""
    SCREENSHOTS.mkdir(exist_ok=True)
    if widget:
        page.locator(f"figure.{site.PICTURE_CLASS}, .jp-OutputArea-output.jupyter-widgets .lm-Widget").first \
            .scroll_into_view_if_needed()
        page.mouse.wheel(0, -200)
        page.wait_for_timeout(200)
    page.screenshot(path=str(SCREENSHOTS / name))
