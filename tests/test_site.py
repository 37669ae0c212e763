"""The static HTML edition (``make site``, :mod:`classroom.site`): built once into a temporary folder, then
checked as files (every chapter listed, no script or style sheet from the network, math typeset at build time,
alt text on every image, the live link from the repository's remote or none) and, marked ``browser``, in headless
chromium with every request that leaves the machine aborted: behind a static file server at 1280 x 800 (each
chapter's math shown, its widgets' static pictures badged as such, stored widget views without one drawn by the
local widget manager, previous/next links that lead to pages that exist), and over file:// on a 390 px phone
(no console error, no failed request, nothing wider than the screen); a widget view stored without its picture is
drawn live over file://, its math typeset by the local MathJax.

Screenshots of the index and of chapter 04a at 1280 x 800 and 390 x 844 go to screenshots/ (site-index.png,
site-04a_integer_equations.png, and -phone.png of each) for a person to look at.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

from classroom import guides, mathjax, paths, site
from tests import browser_support

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "screenshots"
CHAPTERS = site.chapters()
STEMS = [c.stem for c in CHAPTERS]
BINDER = "https://mybinder.org/"
# the chapter whose screenshot (a widget and the text above it) goes to screenshots/
SHOT = "04a_integer_equations" if "04a_integer_equations" in STEMS else STEMS[0]
SOMEBOOK = site.parse_repository("someone/somebook")
GUIDES = guides.guides()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site, built once for this module with a made-up Binder repository (to see the option reach the pages)."""
    out = tmp_path_factory.mktemp("site") / "site"
    index = site.build(out, binder=SOMEBOOK)
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
    assert SOMEBOOK.binder_url() in index.replace("&amp;", "&")
    assert "https://github.com/someone/somebook" in index


def test_pages_load_nothing_from_the_network(built):
    pages = sorted(built.glob("*.html"))
    assert len(pages) == len(CHAPTERS) + len(GUIDES) + 1
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
        assert SOMEBOOK.binder_url(chapter.stem) in text.replace("&amp;", "&")


def test_every_guide_is_a_page_linked_from_the_index(built):
    """The guides of docs/ (the README's "Where to go next") are pages of the site, in order, on the index; their
    links to each other and to the chapters point at pages, a repository file becomes plain text, and a heading's
    anchor is GitHub's, as a link written for the repository names it."""
    assert [g.stem for g in GUIDES][:4] == ["student", "instructor", "class_server", "developer"]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    index = (built / "index.html").read_text(encoding="utf-8")
    positions = []
    for guide in GUIDES:
        assert f"](docs/{guide.stem}.md)" in readme, f"the README does not point to {guide.stem}"
        positions.append(index.index(f'<a class="site-guide-title" href="{guide.href}">'))
        page = (built / guide.href).read_text(encoding="utf-8")
        assert f"<h1>{html.escape(guide.title, quote=False)}</h1>" in page
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', page):
            target = urlsplit(href).path
            assert not target.endswith((".md", ".ipynb")) and not target.startswith("../"), (guide.stem, href)
            if target and not urlsplit(href).scheme:
                assert (built / target).is_file(), f"{guide.href} links to {href}, which is not in the site"
    assert positions == sorted(positions)
    student = (built / "guide-student.html").read_text(encoding="utf-8")
    assert 'id="the-notation"' in student
    assert 'href="guide-student.html#the-notation"' in (built / "10_tensor_programs.html").read_text(encoding="utf-8")


def test_links_are_rewritten():
    stems = {"03_tensor_functions"}
    page = ('<a href="03_tensor_functions.ipynb#vec">chapter 03</a> <a href="../tensoradbook/ad/derive.py">'
            '<code>derive</code></a> <a href="https://example.org/x.ipynb">paper</a> <a href="#top">top</a>')
    out = site.rewrite_links(page, stems)
    assert '<a href="03_tensor_functions.html#vec">chapter 03</a>' in out
    assert '<span class="site-repo-path" title="tensoradbook/ad/derive.py' in out and "derive.py\"><code>" not in out
    assert '<a href="https://example.org/x.ipynb">' in out and '<a href="#top">' in out
    guide = site.rewrite_links('<a href="../notebooks/03_tensor_functions.ipynb">03</a> <a href="student.md#a">s</a> '
                               '<a href="../hub/README.md">hub</a>', stems, frozenset({"student"}), folder="docs")
    assert '<a href="03_tensor_functions.html">03</a>' in guide and '<a href="guide-student.html#a">s</a>' in guide
    assert '<span class="site-repo-path" title="hub/README.md' in guide


def test_refuses_to_replace_a_folder_it_did_not_build(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="refusing"):
        site.build(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(("remote", "binder"), [
    ("a/b", "gh/a/b"),
    ("https://github.com/a/b", "gh/a/b"),
    ("https://github.com/a/b.git", "gh/a/b"),
    ("https://user:token@github.com/a/b.git", "gh/a/b"),
    ("git@github.com:a/b.git", "gh/a/b"),
    ("ssh://git@github.com:22/a/b.git", "gh/a/b"),
    ("https://gitlab.com/group/sub/book.git", "gl/group%2Fsub%2Fbook"),
    ("git@gitlab.com:group/book.git", "gl/group%2Fbook"),
    ("https://bitbucket.org/a/b.git", None),  # Binder builds it only by URL: no guess
    ("/srv/git/book.git", None),
    ("../book", None),
    ("books/book", None),  # as a remote, a relative path
    ("https://github.com/a/b/c", None),
    ("not a repo", None),
])
def test_binder_link_from_a_remote(remote, binder):
    repository = site.parse_repository(remote, shorthand=remote == "a/b")
    if binder is None:
        assert repository is None
    else:
        assert repository.binder_url("04a_integer_equations") == (
            f"https://mybinder.org/v2/{binder}/HEAD?labpath=notebooks%2F04a_integer_equations.ipynb")
        assert "token" not in repository.url


def test_binder_option_and_remote(tmp_path, capsys):
    with pytest.raises(SystemExit):
        site.main(["--binder-repo", "not a repo", "--output", str(tmp_path / "x")])
    assert "owner/name" in capsys.readouterr().err
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    assert site.origin_remote(checkout) is None
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", "git@github.com:a/b.git"], check=True)
    assert site.origin_remote(checkout) == "git@github.com:a/b.git"


def test_no_remote_no_live_link(tmp_path):
    """Without a repository Binder builds, no page links to one (rather than to a placeholder)."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for stem in (site.START_PAGE, SHOT):  # the start page and a chapter with a widget picture
        shutil.copy2(site.NOTEBOOKS / f"{stem}.ipynb", notebooks)
    out = site.build(tmp_path / "site", notebooks=notebooks).parent
    for page in out.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "mybinder" not in text and "Run this chapter live" not in text, page.name
    badges = re.findall(r'<figcaption class="site-static-badge">(.*?)</figcaption>', (out / f"{SHOT}.html").read_text())
    assert badges and all(b == site.STATIC_BADGE for b in badges), badges


# a tag, whose quoted attribute values may hold ">" (MathJax's serializer writes it unescaped)
TAG = r'<(?:[^>"]|"[^"]*")*>'


def _outside_code(page: str) -> str:
    """A page's text that MathJax would read: no tags, nothing in <pre>, <code>, <script>, <style> (or MathJax's
    output)."""
    text = re.sub(r"<(pre|code|script|style|mjx-container)\b.*?</\1>", "", page, flags=re.S | re.I)
    return re.sub(TAG, " ", text)


def test_math_is_typeset_at_build_time(built):
    """Every formula is SVG in the page: no raw TeX, no MathJax error, every glyph it uses defined in the page,
    and no MathJax script on a page that draws no widget view live."""
    for page in sorted(built.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        rest = _outside_code(text)
        raw = re.search(r"\$\$|\\\(|\\\[|\\begin\{|\$[^$\s<][^$<]*\$", rest)
        assert not raw, f"{page.name}: raw TeX {rest[raw.start() - 40:raw.end() + 40]!r}"
        assert '<g data-mml-node="merror"' not in text, f"{page.name}: a formula MathJax rejected"
        if (page.stem != "index" and not page.stem.startswith("guide-")) or "mjx-container" in text:  # a guide has none
            assert text.count("<mjx-container") > 0 and 'id="MJX-SVG-styles"' in text, page.name
        missing = set(re.findall(r'xlink:href="#([^"]+)"', text)) - set(re.findall(r'\bid="([^"]+)"', text))
        assert not missing, f"{page.name}: glyphs used and not defined: {sorted(missing)[:5]}"
        chapter = site.NOTEBOOKS / f"{page.stem}.ipynb"
        if not chapter.exists() or not site.widget_view_count(chapter):  # the index, a guide, a static chapter
            scripts = re.findall(r'<script\b[^>]*\bsrc="([^"]*)"', text)
            assert not [src for src in scripts if src == mathjax.MATHJAX_URL or src.endswith("require.js")], \
                f"{page.name} loads MathJax"


def test_every_image_has_alt_text(built):
    """Every <img> of every page says what it shows: a widget picture names its widget and what it says, a figure
    its titles (or its code's comment, or the sentence that introduces it)."""
    for page in sorted(built.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        for img in re.findall(TAG.replace("<", "<img\\b"), text):
            alt = re.search(r'\balt="([^"]*)"', img)
            assert alt and len(alt[1]) > 12, f"{page.name}: {img[:120]}"
            assert "No description has been provided" not in alt[1], f"{page.name}: nbconvert's placeholder"
            assert len(alt[1]) <= site.ALT_LENGTH
        pictures = re.findall(r'<figure class="site-widget-picture">(.*?)</figure>', text, flags=re.S)
        for picture in pictures:
            assert re.search(r'alt="Static picture of the \w+ widget', picture), f"{page.name}: {picture[:300]}"
            assert f'class="site-static-badge">{site.STATIC_BADGE.replace("run the chapter", "<a ")}' in \
                re.sub(r"<a [^>]*>run the chapter</a>", "<a ", picture), f"{page.name}: no badge"


def test_no_page_shows_a_warning(built):
    """A chapter's stored outputs (and so its page) carry no Python warning or stderr (the capstone once showed
    PyTorch's UserWarning about converting a tensor that requires grad to a scalar)."""
    for page in sorted(built.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert 'data-mime-type="application/vnd.jupyter.stderr"' not in text, f"{page.name} shows stderr"
        warning = re.search(r"\b\w+Warning: .{0,80}", text)
        assert not warning, f"{page.name} shows {warning[0]!r}"


def test_alt_text_of_figures():
    code = 'import x\n# NBVAL_IGNORE_OUTPUT\nfig, ax = plt.subplots()\nax.set_title(f"loss at {n} steps")\n'
    code += 'ax.set_xlabel("step")'
    assert site.figure_alt(code, "") == "Figure: loss at … steps (x axis: step)"
    assert site.figure_alt("%matplotlib inline\n# where each element reads\nplot()", "") == (
        "Figure: where each element reads")
    assert site.figure_alt("Image(fig)", "The report's *Fig. 2*, with $x_1$. It has more.") == (
        "Figure: The report's Fig. 2, with x1.")
    assert len(site.figure_alt(f'plt.title("{"word " * 200}")', "")) <= site.ALT_LENGTH


# What the browser reports about a chapter page once it is drawn.
PAGE_STATE = r"""() => {
  const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  // text a reader sees that still looks like TeX (outside code, MathJax's output and its hidden MathML)
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const rawTex = [];
  while (walker.nextNode()) {
    const t = walker.currentNode, p = t.parentElement;
    if (p && !p.closest('pre, code, script, style, mjx-container, .MathJax, .MathJax_Display, .MathJax_Preview')
        && /\$\$|\\\(|\\\[|\\begin\{|\$[^$\s][^$]*\$/.test(t.data) && visible(p)) rawTex.push(t.data.slice(0, 80));
  }
  const pictures = Array.from(document.querySelectorAll('figure.site-widget-picture'));
  return {
    math: document.querySelectorAll('mjx-container svg, .MathJax, .MathJax_Display').length,
    mathErrors: document.querySelectorAll('[data-mml-node="merror"], .MathJax_Error').length,
    rawTex,
    rawWidgetMath: Array.from(document.querySelectorAll('.widget-htmlmath')).filter(
      e => /\$\$|\\\(/.test(e.innerText)).map(e => e.innerText.slice(0, 80)),
    pictures: pictures.filter(f => { const img = f.querySelector('img'); return img.complete && img.naturalWidth > 0; })
      .length,
    // a badge a reader sees above each picture, no narrower than its text
    badges: pictures.filter(f => { const b = f.querySelector('figcaption.site-static-badge');
      return b && visible(b) && b.innerText.trim() && b.getBoundingClientRect().bottom
        <= f.querySelector('img').getBoundingClientRect().top + 1; }).map(f => f.innerText.trim()),
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
WIDGETS_DONE = """(n) => Array.from(document.querySelectorAll('.jp-OutputArea-output.jupyter-widgets'))
  .filter(e => e.querySelector('.lm-Widget')).length >= n"""
# MathJax 2, on a page that draws widget views live: done with what they asked it to typeset
WIDGET_MATH_DONE = "() => !window.MathJax || !!(MathJax.Hub && MathJax.Hub.queue && !MathJax.Hub.queue.pending" \
                   " && !MathJax.Hub.queue.running)"
# The page's width against the screen's, and the outermost elements that stick out past its right edge.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const out = Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > width + 1);
  return {scrollWidth: document.documentElement.scrollWidth, width,
          culprits: out.filter(e => !out.includes(e.parentElement)).slice(0, 5)
            .map(e => `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)} px`)};
}"""
PHONE = {"width": 390, "height": 844}


@pytest.mark.browser
def test_pages_in_an_offline_browser(built, tmp_path):
    port = browser_support.free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port), "--directory", str(built)]
    with browser_support.server(cmd, f"{base}/index.html", tmp_path / "http.log"), browser_support.chromium() as b:
        context = browser_support.offline_context(b, viewport={"width": 1280, "height": 800})
        missing = []  # local files the pages asked for and the server did not have
        context.on("response", lambda r: missing.append(r.url) if r.status >= 400 and "favicon" not in r.url else None)
        errors = []
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        for i, chapter in enumerate(CHAPTERS):
            page.goto(f"{base}/{chapter.href}", wait_until="load")
            check_chapter(page, i)
            if chapter.stem == SHOT:
                shoot(page, f"site-{SHOT}.png", widget=True)
        page.goto(f"{base}/index.html", wait_until="load")
        assert page.evaluate(PAGE_STATE)["math"] > 0, "the index's math is not typeset"
        shoot(page, "site-index.png")
        # the index's links lead to the chapters, and a chapter's "next" to the next chapter
        page.click(f'a.site-chapter-title[href="{CHAPTERS[1].href}"]')
        page.wait_for_url(f"{base}/{CHAPTERS[1].href}")
        page.click(".site-nav-top a[rel=next]")
        page.wait_for_url(f"{base}/{CHAPTERS[2].href}")
        # the index leads to each guide, and each guide back to the index
        for guide in GUIDES:
            page.goto(f"{base}/index.html", wait_until="load")
            page.click(f'a.site-guide-title[href="{guide.href}"]')
            page.wait_for_url(f"{base}/{guide.href}")
            assert page.locator("h1").inner_text() == guide.title
            page.click('.site-guide-nav a[href="index.html"]')
            page.wait_for_url(f"{base}/index.html")
        context.close()
    assert not errors, errors
    assert not missing, f"missing from the site: {missing}"
    assert not context.blocked, f"requests that left loopback: {context.blocked}"


def check_chapter(page, i: int) -> None:
    """One chapter page, once loaded: math typeset, widget pictures badged, stored widgets drawn, navigation."""
    chapter = CHAPTERS[i]
    where = chapter.stem
    stored = site.widget_view_count(site.NOTEBOOKS / f"{chapter.stem}.ipynb")
    pictures = site.widget_picture_count(site.NOTEBOOKS / f"{chapter.stem}.ipynb")
    if stored:
        page.wait_for_function(WIDGETS_DONE, arg=stored, timeout=60_000, polling=100)
        page.wait_for_function(WIDGET_MATH_DONE, timeout=60_000, polling=100)  # the widgets' math, after them
    state = page.evaluate(PAGE_STATE)
    assert state["math"] > 0, f"{where}: no math typeset"
    assert not state["mathErrors"], f"{where}: {state['mathErrors']} MathJax errors"
    assert not state["rawTex"], f"{where}: raw TeX on the page: {state['rawTex']}"
    assert not state["rawWidgetMath"], f"{where}: raw math left in widgets {state['rawWidgetMath']}"
    drawn = [n for n in state["widgetOutputs"] if n > 0]
    assert len(drawn) >= stored, f"{where}: {len(drawn)} of {stored} stored widget views drawn"
    assert state["pictures"] == pictures, f"{where}: {state['pictures']} of {pictures} widget pictures shown"
    assert state["badges"] == [site.STATIC_BADGE] * pictures, f"{where}: badges {state['badges']}"
    assert not state["errorWidgets"], f"{where}: error widgets {state['errorWidgets']}"
    assert state["index"] == 2, f"{where}: {state['index']} links to the index (top and bottom)"
    assert len(state["binder"]) == 2 and all("someone/somebook" in u and where in u for u in state["binder"]), state
    want_prev = [CHAPTERS[i - 1].href] * 2 if i > 0 else []
    want_next = [CHAPTERS[i + 1].href] * 2 if i + 1 < len(CHAPTERS) else []
    assert state["prev"] == want_prev and state["next"] == want_next, f"{where}: {state}"


@pytest.mark.browser
def test_pages_on_a_phone_over_file(built):
    """Every page opened from disk (a USB stick in a lecture hall) on a 390 px phone: nothing the console
    complains of (a web font refused over file:// was), no request that fails, no horizontal scrolling."""
    with browser_support.chromium() as b:
        context = browser_support.offline_context(b, viewport=PHONE, is_mobile=True, has_touch=True)
        page = context.new_page()
        complaints = []
        page.on("console", lambda m: complaints.append(f"{page.url}: {m.text}") if m.type in ("error", "warning")
                else None)
        page.on("pageerror", lambda e: complaints.append(f"{page.url}: {e}"))
        page.on("requestfailed", lambda r: complaints.append(f"{page.url}: {r.url[:100]} failed ({r.failure})"))
        overflowing = {}
        for path in sorted(built.glob("*.html")):
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_timeout(300)  # late font and image loads report their failures
            state = page.evaluate(OVERFLOW)
            if state["scrollWidth"] > state["width"]:
                overflowing[path.name] = state
            if path.stem in ("index", SHOT):
                shoot(page, f"site-{path.stem}-phone.png", widget=path.stem == SHOT)
        context.close()
    assert not complaints, complaints
    assert not overflowing, f"wider than a {PHONE['width']} px screen: {overflowing}"
    assert not context.blocked, f"requests that left the machine: {context.blocked}"


@pytest.fixture(scope="module")
def live_site(tmp_path_factory) -> Path:
    """A one-chapter site whose widget view carries no picture: its page draws it live from the stored state."""
    import ipywidgets as W
    from ipywidgets.embed import embed_data

    widget = W.VBox([W.IntSlider(3, description="n"), W.HTMLMath(r"The sum is $\sum_{k=1}^{n} k = 6$.")])
    data = embed_data(views=[widget])
    nb = nbformat.v4.new_notebook(metadata={"widgets": {paths.WIDGET_STATE_MIME: data["manager_state"]}})
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 — Live\n\nA widget drawn from its state, beside $x^2$."),
                nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output("display_data", data={
                    paths.WIDGET_VIEW_MIME: data["view_specs"][0], "text/plain": "VBox(...)"})])]
    folder = tmp_path_factory.mktemp("live")
    (folder / "notebooks").mkdir()
    nbformat.write(nb, folder / "notebooks" / "01_live.ipynb")
    return site.build(folder / "site", notebooks=folder / "notebooks").parent


@pytest.mark.browser
def test_a_live_widget_view_over_file(live_site):
    """A stored widget view without a picture is drawn by the local widget manager, its math typeset by the local
    MathJax (SVG: no font to fetch over file://), the page's own math left as it was typeset at build time."""
    with browser_support.chromium() as b:
        context = browser_support.offline_context(b, viewport={"width": 1280, "height": 800})
        page = context.new_page()
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"{r.url[:100]} failed ({r.failure})"))
        page.goto((live_site / "01_live.html").as_uri(), wait_until="load")
        page.wait_for_function("() => document.querySelector('.widget-htmlmath mjx-container svg')", timeout=60_000)
        state = page.evaluate("""() => ({
          sliders: document.querySelectorAll('.widget-slider').length,
          widgetMath: document.querySelector('.widget-htmlmath').innerText,
          pageMath: document.querySelectorAll('.jp-MarkdownOutput mjx-container').length})""")
        context.close()
    assert not errors, errors
    assert state["sliders"] == 1 and "$" not in state["widgetMath"] and state["pageMath"] == 1, state
    assert not context.blocked, context.blocked


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
