"""A chapter's slides as a static reveal.js deck, for the PDF export and for measuring that every slide fits.

``python -m classroom.deck pdf [CHAPTER ...]`` (``make slides-pdf``) writes ``build/slides/<chapter>.pdf``,
one 1280 x 720 page a slide, for the named chapters or all of them; ``measure`` prints, per chapter, the
slides, the tallest slide's height before and after the fit rule, and the blocks it framed.

A deck is nbconvert's reveal exporter on the chapter as committed (its stored outputs; widgets drawn from
their stored state by the widget manager), with the live slides' reveal.js set-up, style sheet and fit rule
(``classroom/voila_slides/static``); every script comes from ``build/slides/assets/``, filled from what
``make install`` fetched (:mod:`classroom.assets`), and chromium prints it offline from a loopback server.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

from classroom.assets import asset, icon_fonts_css, package_dir
from classroom.mathjax import MATHJAX_CONFIG, MATHJAX_HUB, MATHJAX_URL, typeset_math
from classroom.paths import ASSETS_URL, NOTEBOOKS, REPO

DECKS = REPO / "build" / "slides"
SLIDES_DIR = Path(__file__).resolve().parent / "voila_slides"
WIDTH, HEIGHT = 1280, 720
#: How long a deck may take to load in the browser (the widget manager and MathJax included).
LOAD_TIMEOUT_MS = 120_000


def exporter():
    return SlidesExporter(
        template_name="deck",
        extra_template_basedirs=[str(SLIDES_DIR)],
        reveal_url_prefix=f"{ASSETS_URL}/reveal.js",
        reveal_transition="none",
        require_js_url=f"{ASSETS_URL}/require.js",
        jquery_url=f"{ASSETS_URL}/jquery.min.js",
        widget_renderer_url=f"{ASSETS_URL}/embed-amd.js",
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
        jupyter_widgets_base_url="",
    )


def chapters() -> list[str]:
    return [p.stem for p in sorted(NOTEBOOKS.glob("*.ipynb"))]


def build(stems: list[str], directory: Path = DECKS) -> list[Path]:
    """Write ``<stem>.html`` for each chapter into ``directory``, with the assets its decks load."""
    assets = directory / ASSETS_URL
    if assets.exists():
        shutil.rmtree(assets)
    shutil.copytree(package_dir("reveal.js"), assets / "reveal.js")
    (assets / "mathjax").mkdir()
    shutil.copy2(asset("mathjax", "es5/tex-svg-full.js"), assets / "mathjax" / "tex-svg-full.js")
    for package, relative in (("requirejs", "require.js"), ("jquery", "dist/jquery.min.js"),
                              ("@jupyter-widgets/html-manager", "dist/embed-amd.js")):
        shutil.copy2(asset(package, relative), assets / Path(relative).name)
    for name in ("tensoradbook-slides.css", "tensoradbook-slides.js"):
        shutil.copy2(SLIDES_DIR / "static" / name, assets / name)
    # Font Awesome for widget icons (GradientLab's Run), as the site has
    deck = {"assets": ASSETS_URL, "mathjax_url": MATHJAX_URL, "mathjax_config": MATHJAX_CONFIG,
            "mathjax_hub": MATHJAX_HUB, "icon_fonts": icon_fonts_css()}
    export = exporter()
    written = []
    for stem in stems:
        notebook = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        body, _ = export.from_notebook_node(notebook, resources={"deck": deck, "metadata": {"name": stem}})
        path = directory / f"{stem}.html"
        path.write_text(body, encoding="utf-8")
        written.append(path)
    typeset_math(written)  # as the site's pages: no raw TeX while a slide is shown, and none left to print
    return written


@contextlib.contextmanager
def serve(directory: Path):
    """A quiet HTTP server on loopback for ``directory`` (fonts and scripts that file:// would refuse); yields
    its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()


def chromium_path() -> str:
    for candidate in (os.environ.get("BOOK_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("error: chromium is needed: apt-get install -y chromium (or set BOOK_CHROMIUM)")


# The deck is ready when reveal has started and the slides are shown (a live page shows them once Voila has
# finished), MathJax 3 has started, and what draws itself after the page loads
# (the widget manager's views, a live page's outputs and typeset math) has stopped coming for a second.
_SETTLE = """async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms)), deadline = Date.now() + 90000;
  while (document.querySelector('.reveal').offsetHeight === 0 && Date.now() < deadline) await sleep(100);
  if (window.MathJax && window.MathJax.startup) await window.MathJax.startup.promise;
  const drawn = () => ['.jp-OutputArea-output', '.jupyter-widgets', 'img', 'mjx-container', '.MathJax']
    .map(q => document.querySelectorAll(q).length).join();
  let last = drawn(), since = Date.now();
  while (Date.now() - since < 1000 && Date.now() < deadline) {
    await sleep(100);
    if (drawn() !== last) { last = drawn(); since = Date.now(); }
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""


def settle(page, timeout_ms: int = LOAD_TIMEOUT_MS) -> None:
    page.wait_for_selector("html[data-slides-ready]", state="attached", timeout=timeout_ms)
    page.evaluate(_SETTLE)


#: Every leaf slide in document order: its reveal indices, its first heading, its height and width as laid
#: out with and without the fit rule, how many blocks the rule framed, the smallest table text, the
#: controls (buttons, sliders, menus) that stick out of the slide, the lines and formulas cut at its edges, the
#: formulas wider than their block, and the prose in a scrolling frame.
_MEASURE = """() => {
  const F = window.tensoradbookFit, root = document.documentElement;
  const slides = F.leaves();
  root.classList.add('tab-measuring');
  slides.forEach(F.reset);
  const natural = slides.map(s => s.scrollHeight);
  root.classList.remove('tab-measuring');
  F.fitAll();
  root.classList.add('tab-measuring');
  const out = slides.map((s, k) => {
    const box = s.getBoundingClientRect();
    const outside = Array.from(s.querySelectorAll('button, .widget-slider, select, input'))
      .map(c => c.getBoundingClientRect()).filter(r => r.width > 0)
      .filter(r => r.right - box.left > box.width + 1 || r.bottom - box.top > box.height + 1 || r.left < box.left - 1);
    const tables = Array.from(s.querySelectorAll('td, th')).filter(c => c.offsetHeight > 0 && c.textContent.trim())
      .map(c => parseFloat(getComputedStyle(c).fontSize));
    // text or a formula (MathJax's drawing, not its hidden MathML) past the slide's edges, which hide it
    const edge = {right: box.left + box.width + 1, bottom: box.top + box.height + 1};
    const drawn = 'mjx-container > svg, mjx-container > mjx-math';
    const cut = Array.from(s.querySelectorAll(`p, li, h1, h2, h3, ${drawn}`))
      .filter(e => !e.parentElement.closest('[data-fit]')).map(e => e.getBoundingClientRect())
      .filter(r => r.height > 0 && (r.right > edge.right || r.bottom > edge.bottom)).length;
    const wideMath = Array.from(s.querySelectorAll(drawn)).filter(m => {
      const block = m.parentElement.parentElement.closest('p, li, div');  // in a table: the table's block
      return m.getBoundingClientRect().right > block.getBoundingClientRect().right + 1;
    }).length;
    const indices = window.tensoradbookReveal.getIndices(s);
    const heading = s.querySelector('h1, h2, h3');
    return {h: indices.h, v: indices.v || 0, title: heading ? heading.textContent.replace('¶', '').trim() : '',
            natural: natural[k], height: s.scrollHeight, width: s.scrollWidth, box: [s.clientWidth, s.clientHeight],
            framed: s.querySelectorAll('[data-fit]').length, outside: outside.length, cut, wide_math: wideMath,
            framed_prose: s.querySelectorAll('.jp-RenderedMarkdown[data-fit], [data-fit] .jp-RenderedMarkdown').length,
            table_px: tables.length ? Math.min(...tables) : null};
  });
  root.classList.remove('tab-measuring');
  return out;
}"""


def measure(page) -> list[dict]:
    """:data:`_MEASURE` on a settled deck (a static one or the live slides)."""
    return page.evaluate(_MEASURE)


def overflows(slide: dict) -> list[str]:
    """What is wrong with one measured slide: taller or wider than its frame, a control outside it, text or a formula
    cut at its edges, a formula wider than its block, prose a lecturer would scroll."""
    width, height = slide["box"]
    found = []
    if slide["height"] > height:
        found.append(f"{slide['height']} px tall")
    if slide["width"] > width:
        found.append(f"{slide['width']} px wide")
    if slide["outside"]:
        found.append(f"{slide['outside']} control(s) outside the slide")
    if slide["cut"]:
        found.append(f"{slide['cut']} line(s) or formula(s) cut at its edges")
    if slide["wide_math"]:
        found.append(f"{slide['wide_math']} formula(s) wider than their block")
    if slide["framed_prose"]:
        found.append("prose in a scrolling frame")
    return found


@contextlib.contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path(), headless=True,
                               args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def open_deck(b, url: str):
    """A 1280 x 720 page on ``url``, offline: every request that leaves loopback is aborted."""
    context = b.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("http://127.0.0.1", "data:"))
                  else r.abort())
    page = context.new_page()
    page.goto(url, timeout=LOAD_TIMEOUT_MS)
    settle(page)
    return context, page


def pdf(stems: list[str], directory: Path = DECKS) -> list[Path]:
    """``<stem>.pdf`` for each chapter: the deck printed by chromium, one 1280 x 720 page a slide."""
    build(stems, directory)
    written = []
    with serve(directory) as base, browser() as b:
        for stem in stems:
            context, page = open_deck(b, f"{base}/{stem}.html?print-pdf")
            path = directory / f"{stem}.pdf"
            page.pdf(path=str(path), width=f"{WIDTH}px", height=f"{HEIGHT}px", print_background=True)
            context.close()
            written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.deck", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["pdf", "measure"])
    parser.add_argument("chapters", nargs="*", help="names from notebooks/ (default: every chapter)")
    args = parser.parse_args(argv)
    known = chapters()
    stems = [c.removesuffix(".ipynb") for c in args.chapters] or known
    if unknown := [s for s in stems if s not in known]:
        raise SystemExit(f"error: no chapter {unknown[0]!r} in notebooks/; the chapters are: {', '.join(known)}")
    if args.command == "pdf":
        for path in pdf(stems):
            print(f"wrote {path.relative_to(REPO)}")
        return 0
    build(stems, DECKS)
    bad = 0
    with serve(DECKS) as base, browser() as b:
        for stem in stems:
            context, page = open_deck(b, f"{base}/{stem}.html")
            slides = measure(page)
            context.close()
            wrong = [(s, overflows(s)) for s in slides if overflows(s)]
            bad += len(wrong)
            print(f"{stem}: {len(slides)} slides, tallest {max(s['natural'] for s in slides)} px before the fit "
                  f"rule, {max(s['height'] for s in slides)} px after; {sum(s['framed'] for s in slides)} "
                  f"blocks framed" + "".join(f"\n  overflow: slide {s['h']}.{s['v']} {s['title']!r}: {', '.join(w)}"
                                             for s, w in wrong))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
