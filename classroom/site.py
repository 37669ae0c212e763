"""The static HTML edition of the book: ``make site`` (``python -m classroom.site``) writes ``site/``.

Every ``notebooks/*.ipynb`` becomes ``site/<stem>.html`` through nbconvert's lab template, **without executing**
anything: the committed outputs are what the pages show. A widget of the book displays a PNG of what it shows
beside its live view (``widgets/picture.py``); without a kernel the view could only look live and do nothing, so
a page shows that picture with a badge saying so (:func:`show_widget_pictures`). A widget view without a
picture is drawn from the stored widget state (``metadata.widgets``) in the browser by
``@jupyter-widgets/html-manager``. Every image has alt text: a widget's names its class and what its controls
and text say, a figure's its titles and axes (or the sentence that introduces it).

``site/index.html`` is the chapter map. Every chapter page links to its neighbours, to the index and, where the
book's repository is on GitHub or GitLab (``--binder-repo``, else the checkout's ``origin`` remote), to Binder,
which runs the chapter live from ``environment.yml``; without one there is no live link rather than a wrong one.

The math is typeset once, at build time, into SVG (``site_math.js``, MathJax 3 in node): a reader never sees raw
TeX while a browser works through a chapter, and SVG needs no web font (chromium refuses font files over
file://). Only a page that still draws widget views live loads MathJax (3, SVG), for the widget manager to
typeset their math.

The pages must work in a lecture hall without a network, so nothing comes from a CDN: the exporter's default
URLs (cdnjs, unpkg) are replaced by relative ones into ``site/assets/``, filled from what ``make install`` put
in place (:mod:`classroom.assets`, from the npm registry). The pages also open from disk (file://), on a phone
as on a projector. The template ``site_templates/site`` extends nbconvert's ``lab`` template to drop its mermaid
import (from cdnjs; the book has no diagrams), to add the navigation and to give images their alt text.

The site is built in a temporary folder next to the target and swapped in at the end, so that a failed build
leaves the previous site as it was.
"""

from __future__ import annotations

import argparse
import ast
import html
import json
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import jinja2
import nbformat
from markupsafe import Markup
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from classroom.assets import asset, icon_fonts_css
from classroom.guides import guide_page, guides
from classroom.mathjax import MATHJAX_CONFIG, MATHJAX_HUB, MATHJAX_URL, typeset_math
from classroom.paths import ASSETS_URL, NOTEBOOKS, REPO, WIDGET_STATE_MIME, WIDGET_VIEW_MIME
from classroom.solutions import with_solutions

SITE = REPO / "site"
TEMPLATES = Path(__file__).resolve().parent / "site_templates"
START_PAGE = "00_start_here"
#: The git hosts whose repositories Binder builds by name, and Binder's name for each.
BINDER_PROVIDERS = {"github.com": "gh", "gitlab.com": "gl"}
BOOK_TITLE = "Automatic differentiation for tensor algebras"

#: Where each asset goes under site/assets/, and where the pages find it (relative to site/).
REQUIRE_JS = f"{ASSETS_URL}/require.js"
JQUERY = f"{ASSETS_URL}/jquery.min.js"
EMBED_AMD = f"{ASSETS_URL}/embed-amd.js"
PICTURE_CLASS = "site-widget-picture"
#: The badge on every widget picture: the page cannot move its controls.
STATIC_BADGE = "static picture — run the chapter to use it"
#: An alt text's length at most (a screen reader reads all of it).
ALT_LENGTH = 240


@dataclass(frozen=True)
class Chapter:
    """One notebook of the book, as the index and the navigation show it."""

    stem: str
    number: str  # "04a": the file name's prefix
    title: str  # the first heading, as written (plain text)
    short: str  # the title without its "04a — " prefix
    source: str  # the italic line under the title that names the report's sections, or ""
    description: str  # one line of markdown: the first paragraph after the title, or the objectives
    more: str = ""  # the rest of that paragraph (the index shows the start page's first sentence as its intro)

    @property
    def href(self) -> str:
        return f"{self.stem}.html"


@dataclass(frozen=True)
class Repository:
    """The book's repository on a git host that Binder builds from (:data:`BINDER_PROVIDERS`)."""

    host: str  # "github.com"
    path: str  # "owner/name"; on GitLab "group/subgroup/name"

    @property
    def url(self) -> str:
        return f"https://{self.host}/{self.path}"

    def binder_url(self, stem: str = START_PAGE) -> str:
        """Binder's URL that opens ``notebooks/<stem>.ipynb`` in JupyterLab, built from the environment.yml of
        the repository's default branch."""
        provider = BINDER_PROVIDERS[self.host]
        spec = self.path if provider == "gh" else quote(self.path, safe="")  # GitLab's groups nest: one segment
        return f"https://mybinder.org/v2/{provider}/{spec}/HEAD?labpath={quote(f'notebooks/{stem}.ipynb', safe='')}"


_NAME = r"\w[\w.-]*"
# https://host/path(.git), ssh://user@host:port/path, user@host:path (scp-like); credentials in the URL are dropped
_REMOTE = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]+@)?(?P<host>[\w.-]+)(?::\d+)?[:/]"
                     rf"(?P<path>{_NAME}(?:/{_NAME})+)", re.I)


def parse_repository(text: str, *, shorthand: bool = True) -> Repository | None:
    """A GitHub or GitLab remote URL, or with ``shorthand`` ``owner/name`` on GitHub (as a remote, a relative
    path), as a :class:`Repository`; None for a remote elsewhere or not a remote at all."""
    text = re.sub(r"(?:\.git)?/?$", "", text.strip())
    if shorthand and re.fullmatch(rf"{_NAME}/{_NAME}", text):
        return Repository("github.com", text)
    m = _REMOTE.fullmatch(text)
    if not m or m["host"].lower() not in BINDER_PROVIDERS:
        return None
    host, path = m["host"].lower(), m["path"]
    if host == "github.com" and path.count("/") != 1:
        return None
    return Repository(host, path)


def origin_remote(checkout: Path = REPO) -> str | None:
    """The URL of the checkout's ``origin`` remote (``git remote get-url origin``), or None."""
    try:
        done = subprocess.run(["git", "-C", str(checkout), "remote", "get-url", "origin"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:  # not a git checkout, or no remote named origin
        return None
    return done.stdout.strip() or None


def _paragraphs(markdown: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", markdown) if p.strip()]


def _split_sentence(text: str) -> tuple[str, str]:
    """(first sentence, the rest) of a paragraph: the index shows about one line per chapter."""
    # A sentence ends at ". " before a capital letter or markup, outside inline math.
    outside_math = re.split(r"(\$[^$]*\$)", text)
    done = ""
    for i, part in enumerate(outside_math):
        if i % 2 == 0:
            m = re.search(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bet al)[.!?](?=\s+[A-Z*_\[(])", part)
            if m:
                end = len(done) + m.end()
                return text[:end].strip(), text[end:].strip()
        done += part
    return text.strip(), ""


def read_chapter(path: Path) -> Chapter:
    """Title, number and description of one notebook, from its first markdown cells."""
    nb = nbformat.read(path, as_version=4)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    first = markdown[0] if markdown else ""
    heading = re.search(r"^#\s+(.+)$", first, flags=re.M)
    title = heading.group(1).strip() if heading else path.stem
    number = re.match(r"(\d+[a-z]?)_", path.stem)
    number = number.group(1) if number else "A"  # a page that is not a chapter (notation, references): appendix
    short = re.sub(rf"^{re.escape(number)}\s*[—–-]\s*", "", title) if number else title
    after = first[heading.end():] if heading else first
    source, description, more = "", "", ""
    for paragraph in _paragraphs(after):
        if paragraph.startswith("#"):  # a section heading inside the first cell: read on below it
            continue
        # "*Report section 1.*": which part of the report the chapter covers, not what it is about.
        if re.fullmatch(r"\*[^*].*\*", paragraph, flags=re.S) and not source:
            source = paragraph.strip("*").strip()
            continue
        description, more = _split_sentence(paragraph)
        while len(description) < 70 and more:  # a short lead-in ("Chapter 02 differentiated ... scalars.")
            sentence, more = _split_sentence(more)
            if not sentence.endswith((".", "!", "?")):  # it runs into a list or a formula: not a line to show
                break
            description = f"{description} {sentence}"
        break
    if not description:
        objectives = next((c for c in markdown if re.match(r"#+\s*Objectives", c)), "")
        bullet = re.search(r"^\s*[*-]\s+(.+(?:\n\s{2,}.+)*)", objectives, flags=re.M)
        description = f"After this chapter you will be able to {bullet.group(1)}" if bullet else ""
    return Chapter(path.stem, number, title, short, source, " ".join(description.split()), " ".join(more.split()))


def chapters(notebooks: Path = NOTEBOOKS) -> list[Chapter]:
    """The book's chapters in reading order: the start page first, then by file name."""
    paths = sorted(notebooks.glob("*.ipynb"), key=lambda p: (p.stem != START_PAGE, p.name))
    return [read_chapter(p) for p in paths]


def _inline_markdown(text: str) -> Markup:
    """One line of markdown as HTML without its paragraph (math stays as $...$ for MathJax)."""
    rendered = markdown2html_mistune(text).strip()
    rendered = re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.S)
    return Markup(rendered)  # noqa: S704 -- the book's own markdown, rendered by nbconvert's mistune


_LINK = re.compile(r'<a\b(?P<before>[^>]*?)\bhref="(?P<href>[^"]*)"(?P<after>[^>]*)>(?P<text>.*?)</a>', re.S)


def site_page(target: str, folder: str, stems: set[str], guide_stems: set[str]) -> str | None:
    """The site's page for a repository path ``target`` linked from ``folder`` (``notebooks`` for a chapter,
    ``docs`` for a guide): a chapter's or a guide's page, or None where the site does not carry the file."""
    path = posixpath.normpath(posixpath.join(folder, target))
    where, _, name = path.partition("/")
    if where == "notebooks" and name.endswith(".ipynb") and name[: -len(".ipynb")] in stems:
        return name[: -len(".ipynb")] + ".html"
    if where == "docs" and name.endswith(".md") and name[: -len(".md")] in guide_stems:
        return f"guide-{name[: -len('.md')]}.html"
    return None


def rewrite_links(page: str, stems: set[str], guide_stems: frozenset[str] = frozenset(),
                  folder: str = "notebooks") -> str:
    """Links to chapters (``03_tensor_functions.ipynb#part``) and guides (``../docs/student.md#the-notation``)
    point to their pages (:func:`site_page`, from ``folder``, where the linking page's source is); other relative
    links (``../tensoradbook/ad/derive.py``) become plain text, since the static edition does not carry the
    sources. Absolute URLs and in-page anchors stay as they are."""

    def replace(m: re.Match) -> str:
        href = html.unescape(m["href"])
        if (not href or href.startswith(("#", "/", ASSETS_URL + "/", "index.html"))
                or re.match(r"[a-z][a-z0-9+.-]*:", href)):
            return m[0]
        target, _, anchor = href.partition("#")
        page_name = site_page(target, folder, stems, guide_stems)
        if page_name is not None:
            new = page_name + (f"#{anchor}" if anchor else "")
            return f'<a{m["before"]}href="{html.escape(new)}"{m["after"]}>{m["text"]}</a>'
        if target.endswith(".html") and (Path(target).stem in stems
                                         or Path(target).stem.removeprefix("guide-") in guide_stems):
            return m[0]
        shown = target.lstrip("./") or href
        return f'<span class="site-repo-path" title="{html.escape(shown)} in the book\'s repository">{m["text"]}</span>'

    return _LINK.sub(replace, page)


def copy_assets(assets: Path) -> None:
    """The style sheets every page loads, into ``assets`` (site/assets/)."""
    assets.mkdir(parents=True)
    shutil.copy2(TEMPLATES / "site.css", assets / "site.css")
    # The index is not an nbconvert page, but shares the chapters' lab style sheets.
    lab = Path(HTMLExporter(template_name="lab").template_paths[0])
    lab_static = next(p for p in (Path(d) / "static" for d in [lab, *lab.parents]) if (p / "index.css").exists())
    (assets / "lab").mkdir()
    for css in ("index.css", "theme-light.css"):
        shutil.copy2(lab_static / css, assets / "lab" / css)


def copy_widget_assets(assets: Path) -> str:
    """The scripts a page that draws widget views live loads (the widget manager, MathJax for their math), into
    ``assets``; returns the icon fonts' CSS."""
    shutil.copy2(asset("requirejs", "require.js"), assets / "require.js")
    shutil.copy2(asset("jquery", "dist/jquery.min.js"), assets / "jquery.min.js")
    shutil.copy2(asset("@jupyter-widgets/html-manager", "dist/embed-amd.js"), assets / "embed-amd.js")
    (assets / "mathjax").mkdir()
    shutil.copy2(asset("mathjax", "es5/tex-svg-full.js"), assets / "mathjax" / "tex-svg-full.js")
    return icon_fonts_css()


def make_exporter() -> HTMLExporter:
    """nbconvert's lab template (through ``site_templates/site``) with every script loaded from site/assets/."""
    return HTMLExporter(
        template_name="site",
        extra_template_basedirs=[str(TEMPLATES)],
        mathjax_url=MATHJAX_URL,
        require_js_url=REQUIRE_JS,
        jquery_url=JQUERY,
        widget_renderer_url=EMBED_AMD,
        # Never used once the template drops the mermaid block; blank so that no page names a CDN.
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
        jupyter_widgets_base_url="",
    )


def _has_picture(output) -> bool:
    """A widget's output that carries its static picture."""
    data = output.get("data", {})
    return WIDGET_VIEW_MIME in data and "image/png" in data


def _shorten(text: str, length: int = ALT_LENGTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def widget_picture_html(png_base64: str, alt: str, binder: str | None) -> str:
    """The figure a page shows for a widget: a badge saying it is a picture, and the picture."""
    run = (f'<a href="{html.escape(binder)}" target="_blank" rel="noopener">run the chapter</a>' if binder
           else "run the chapter")
    badge = html.escape(STATIC_BADGE).replace("run the chapter", run)
    return (f'<figure class="{PICTURE_CLASS}"><figcaption class="site-static-badge">{badge}</figcaption>'
            f'<img src="data:image/png;base64,{png_base64}" alt="{html.escape(alt)}"></figure>')


def _widget_text(model_id: str, models: dict, seen: set) -> list[str]:
    """What a widget's controls and text say, from the notebook's stored widget state, children in order."""
    if model_id in seen or model_id not in models:
        return []
    seen.add(model_id)
    name, state = models[model_id].get("model_name", ""), models[model_id].get("state", {})
    if state.get("layout") and models.get(state["layout"].removeprefix("IPY_MODEL_"), {}).get(
            "state", {}).get("display") == "none":
        return []
    words = []
    if name in ("HTMLModel", "HTMLMathModel", "LabelModel"):
        # the prose, without style sheets or displayed formulas (the picture shows them; TeX is no description)
        text = re.sub(r"<(style|script)\b.*?</\1>|\$\$.*?\$\$", " ", str(state.get("value", "")), flags=re.S | re.I)
        words.append(html.unescape(re.sub(r"<[^>]*>", " ", text)).replace("$", ""))
    elif name not in ("ButtonModel", "ImageModel") and "value" in state and not isinstance(state["value"], dict):
        label = state.get("description", "")
        value = state["value"]
        if "_options_labels" in state and isinstance(state.get("index"), int):
            value = state["_options_labels"][state["index"]]
        words.append(f"{label} {value}".strip())
    for child in state.get("children", []):
        words += _widget_text(str(child).removeprefix("IPY_MODEL_"), models, seen)
    return [w for w in words if w.strip()]


def widget_alt(output, models: dict) -> str:
    """A widget picture's alt text: the widget's class and what its controls and text say."""
    plain = "".join(output.get("data", {}).get("text/plain", ""))
    cls = re.match(r"\s*(\w+)\(", plain)
    words = _widget_text(output["data"][WIDGET_VIEW_MIME]["model_id"], models, set())
    return _shorten(f"Static picture of the {cls[1] if cls else 'interactive'} widget"
                    + (f": {'; '.join(' '.join(w.split()) for w in words)}" if words else ""))


def show_widget_pictures(nb, binder: str | None) -> int:
    """Replace each widget output that carries a picture by :func:`widget_picture_html` (in place); a notebook
    left without widget views loses its stored widget state, so its page loads no widget manager. Returns how
    many outputs were replaced."""
    models = nb.metadata.get("widgets", {}).get(WIDGET_STATE_MIME, {}).get("state", {})
    replaced = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if _has_picture(output):
                html_ = widget_picture_html(output["data"]["image/png"], widget_alt(output, models), binder)
                output["data"] = {"text/html": html_}
                output["metadata"] = {}
                replaced += 1
    if not any(WIDGET_VIEW_MIME in o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])):
        nb.metadata.pop("widgets", None)
    return replaced


_FIGURE_TITLES = {"title", "set_title", "suptitle"}
_FIGURE_AXES = {"xlabel": 0, "set_xlabel": 0, "ylabel": 1, "set_ylabel": 1}


def _string(node) -> str | None:
    """A string literal's text; an f-string's with "…" for what it fills in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def _plain(markdown: str) -> str:
    """Markdown as the words a screen reader should say: no markup, math without its dollars."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"<[^>]*>|[*_`#>]|\$", "", text)
    return " ".join(text.split())


def figure_alt(code: str, before: str) -> str:
    """A figure's alt text: the titles and axis labels its code sets (matplotlib), else the code's first comment,
    else the first sentence of the markdown ``before`` it, which introduces it."""
    titles, axes = [], ([], [])
    try:
        tree = ast.parse(re.sub(r"^\s*[%!].*$", "", code, flags=re.M))  # IPython's magics are not Python
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            text = _string(node.args[0])
            if text and name in _FIGURE_TITLES:
                titles.append(text)
            elif text and name in _FIGURE_AXES:
                axes[_FIGURE_AXES[name]].append(text)
    # a comment that says what the code draws, not a marker for a tool (NBVAL_IGNORE_OUTPUT)
    comment = next((m[1] for m in re.finditer(r"^\s*#\s*(.+)$", code, flags=re.M)
                    if not re.fullmatch(r"[A-Z_]+|noqa.*", m[1].strip())), "")
    about = "; ".join(dict.fromkeys(titles)) or comment or _split_sentence(_plain(before))[0]
    xs, ys = ("; ".join(dict.fromkeys(a)) for a in axes)
    plotted = "; ".join(f"{axis} axis: {label}" for axis, label in (("x", xs), ("y", ys)) if label)
    return _shorten(f"Figure: {about}" + (f" ({plotted})" if plotted else "") if about or plotted
                    else "Figure drawn by the code above")


def describe_figures(nb) -> None:
    """Give each image output its alt text (``metadata.alt``, which the page's <img> shows)."""
    before = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            before = next((p for p in reversed(_paragraphs(cell.source)) if not p.startswith(("#", "|"))), before)
        for output in cell.get("outputs", []):
            if any(k.startswith("image/") for k in output.get("data", {})):
                output.setdefault("metadata", {})["alt"] = figure_alt(cell.source, before)


def _nav(chapter: Chapter | None) -> dict | None:
    if chapter is None:
        return None
    return {"href": chapter.href, "number": chapter.number, "short": chapter.short, "title": chapter.title}


def build(output: Path = SITE, *, notebooks: Path = NOTEBOOKS, binder: Repository | None = None) -> Path:
    """Build the static edition into ``output`` (replaced as a whole) and return its ``index.html``. Its pages
    link to Binder for the ``binder`` repository; without one, nowhere."""
    output = Path(output).resolve()
    book = chapters(notebooks)
    if not book:
        raise SystemExit(f"error: no notebooks in {notebooks}")
    stems = {c.stem for c in book}
    manual = guides()
    guide_stems = frozenset(g.stem for g in manual)
    # The old folder is deleted as a whole: only one that this module built (or an empty one) may go.
    if output.exists() and any(output.iterdir()) and not (output / ASSETS_URL / "site.css").is_file():
        raise SystemExit(f"error: {output} is not a site built by classroom.site; refusing to replace it")
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}-", dir=output.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the site from a web server running as another user
    try:
        copy_assets(staging / ASSETS_URL)
        icon_fonts = None  # the widget manager's assets, once a page draws widget views
        exporter = make_exporter()
        for i, chapter in enumerate(book):
            nb = with_solutions(nbformat.read(notebooks / f"{chapter.stem}.ipynb", as_version=4), chapter.stem)
            live_link = binder.binder_url(chapter.stem) if binder else None
            show_widget_pictures(nb, live_link)
            describe_figures(nb)
            live = "widgets" in nb.metadata
            if live and icon_fonts is None:
                icon_fonts = copy_widget_assets(staging / ASSETS_URL)
            resources = {
                "metadata": {"name": chapter.title},
                "site": {
                    "assets": ASSETS_URL,
                    "live_widgets": live,
                    "mathjax_url": MATHJAX_URL,
                    "mathjax_config": MATHJAX_CONFIG,
                    "mathjax_hub": MATHJAX_HUB,
                    "icon_fonts": icon_fonts if live else "",
                    "binder_url": live_link,
                    "prev": _nav(book[i - 1] if i > 0 else None),
                    "next": _nav(book[i + 1] if i + 1 < len(book) else None),
                },
            }
            page, _ = exporter.from_notebook_node(nb, resources=resources)
            (staging / chapter.href).write_text(rewrite_links(page, stems, guide_stems), encoding="utf-8")
        for guide in manual:
            page = guide_page(guide, manual, TEMPLATES, BOOK_TITLE)
            (staging / guide.href).write_text(rewrite_links(page, stems, guide_stems, folder="docs"), encoding="utf-8")
        write_index(staging / "index.html", book, binder, manual)
        typeset_math(sorted(staging.glob("*.html")))
        if output.exists():
            old = output.with_name(f".{output.name}-old-{time.monotonic_ns()}")
            output.rename(old)
            staging.rename(output)
            shutil.rmtree(old)
        else:
            staging.rename(output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return output / "index.html"


def write_index(path: Path, book: list[Chapter], repository: Repository | None, manual: list | None = None) -> None:
    """The chapter map: number, title, the report's sections and one line about each chapter; then the guides."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    start = next((c for c in book if c.stem == START_PAGE), None)
    # The start page's first sentence introduces the whole book; its entry then says what else it holds.
    intro = start.description if start else ""
    listed = [
        {
            "href": c.href,
            "number": c.number,
            "short": _inline_markdown(c.short),
            "source": _inline_markdown(c.source) if c.source else "",
            "description": _inline_markdown(c.more if c is start and c.more else c.description),
        }
        for c in book
    ]
    page = env.get_template("book_index.html.j2").render(
        book_title=BOOK_TITLE,
        intro=_inline_markdown(intro) if intro else "",
        chapters=listed,
        guides=[{"href": g.href, "title": g.title, "summary": _inline_markdown(g.summary)} for g in manual or ()],
        binder_url=repository.binder_url() if repository else "",
        repository_url=repository.url if repository else "",
    )
    # the guides' summaries link to each other as the files in docs/ do
    path.write_text(rewrite_links(page, {c.stem for c in book}, frozenset(g.stem for g in manual or ()), "docs"),
                    encoding="utf-8")


def _outputs(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [o for c in nb["cells"] for o in c.get("outputs", [])]


def widget_view_count(path: Path) -> int:
    """How many widget views a notebook stores without their picture (each one is drawn live on its page)."""
    return sum(WIDGET_VIEW_MIME in o.get("data", {}) and not _has_picture(o) for o in _outputs(path))


def widget_picture_count(path: Path) -> int:
    """How many widget outputs of a notebook carry their picture (each one is shown as a figure on its page)."""
    return sum(map(_has_picture, _outputs(path)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.site", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=SITE, help=f"the site's folder (default: {SITE})")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="the chapters' folder")
    parser.add_argument("--binder-repo", help="the repository that the 'Run this chapter live' links open on Binder: "
                        "owner/name on GitHub, or a GitHub or GitLab URL (default: the checkout's origin remote)")
    args = parser.parse_args(argv)
    if args.binder_repo is not None:
        binder = parse_repository(args.binder_repo)
        if binder is None:
            parser.error(f"--binder-repo wants owner/name (GitHub) or a GitHub or GitLab URL, not {args.binder_repo!r}")
    else:
        remote = origin_remote()
        binder = parse_repository(remote, shorthand=False) if remote else None
        if binder is None:
            print("note: no live links (Binder builds from GitHub or GitLab; the checkout's origin remote is "
                  f"{'not there' if remote is None else 'elsewhere'}): make site BINDER_REPO=owner/name sets one",
                  file=sys.stderr)
    started = time.perf_counter()
    index = build(args.output, notebooks=args.notebooks, binder=binder)
    seconds = time.perf_counter() - started
    print(f"built {len(chapters(args.notebooks))} chapters and {len(guides())} guides in {seconds:.1f} s",
          file=sys.stderr)
    print(index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
