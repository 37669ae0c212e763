"""The static HTML edition of the book: ``make site`` (``python -m classroom.site``) writes ``site/``.

Every ``notebooks/*.ipynb`` becomes ``site/<stem>.html`` through nbconvert's lab template, **without executing**
anything: the committed outputs are what the pages show. A widget of the book displays a PNG of what it shows
beside its live view (``widgets/picture.py``); without a kernel the view could only look live and do nothing, so
a page shows that picture with a caption saying so (:func:`show_widget_pictures`). A widget view without a
picture is drawn from the stored widget state (``metadata.widgets``) in the browser by
``@jupyter-widgets/html-manager``.
``site/index.html`` is the chapter map. Every chapter page links to its neighbours, to the index and to Binder,
which runs the chapter live from ``environment.yml``.

The pages must work in a lecture hall without a network, so nothing comes from a CDN: the exporter's default
URLs (cdnjs, unpkg) are replaced by relative ones into ``site/assets/``, filled from what ``make install`` put
in place (:mod:`classroom.assets`) and from the PyPI package ``jupyter-server-mathjax`` (MathJax 2.7). The
template ``site_templates/site`` extends nbconvert's ``lab`` template to drop its mermaid import (from cdnjs;
the book has no diagrams) and to add the navigation.

The site is built in a temporary folder next to the target and swapped in at the end, so that a failed build
leaves the previous site as it was.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
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

from classroom.assets import asset, mathjax_dir
from classroom.solutions import with_solutions

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
SITE = REPO / "site"
TEMPLATES = Path(__file__).resolve().parent / "site_templates"
START_PAGE = "00_start_here"
#: GitHub owner/repository that Binder builds (from its environment.yml); ``--binder-repo`` overrides it.
BINDER_REPO = "tensoradbook/tensoradbook"
BOOK_TITLE = "Automatic differentiation for tensor algebras"

#: Where each asset goes under site/assets/, and where the pages find it (relative to site/).
ASSETS = "assets"
REQUIRE_JS = f"{ASSETS}/require.js"
JQUERY = f"{ASSETS}/jquery.min.js"
EMBED_AMD = f"{ASSETS}/embed-amd.js"
MATHJAX = f"{ASSETS}/mathjax"
# jupyter-server-mathjax ships a trimmed MathJax 2.7 (what the classic notebook used): its one combined
# configuration is TeX-AMS-MML_HTMLorMML-full, with HTML-CSS output and STIX-Web fonts. nbconvert's default,
# TeX-AMS_CHTML-full, and the CommonHTML output it needs are not in the package.
MATHJAX_URL = f"{MATHJAX}/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
# The package carries only the STIX-Web web fonts (no TeX fonts, no image fonts), as the classic notebook
# configured it; without this MathJax asks for the TeX fonts' data and the font check files, and gets 404s.
# The fast preview (PreviewHTML) would ask for the TeX fonts too: the math is typeset once, by HTML-CSS.
MATHJAX_CONFIG = """MathJax.Hub.Config({
  "HTML-CSS": {availableFonts: [], webFont: "STIX-Web", imageFont: null, preferredFont: null},
  "fast-preview": {disabled: true}
});"""

# The widget manager's icons (a Button's icon="play") use Font Awesome 5, whose font files the fetched
# html-manager (only dist/embed-amd.js) does not carry; Voila's wheel ships the same fonts (FA 5.15) under
# hashed names. Found by the font's own name, they are declared again at the end of each page: the last
# @font-face with the same family and weight wins, so the manager's own rule (which points at files that are
# not there) is never used and the browser asks for nothing that is missing.
ICON_FONTS = {  # the font's full name -> (CSS family, weight, file name in site/assets/fonts/)
    "Font Awesome 5 Free Solid": ("Font Awesome 5 Free", 900, "fa-solid-900.woff"),
    "Font Awesome 5 Free Regular": ("Font Awesome 5 Free", 400, "fa-regular-400.woff"),
    "Font Awesome 5 Brands Regular": ("Font Awesome 5 Brands", 400, "fa-brands-400.woff"),
}
FONTS = f"{ASSETS}/fonts"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PICTURE_CLASS = "site-widget-picture"


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


def binder_url(repo: str, stem: str = START_PAGE) -> str:
    """Binder's URL that opens ``notebooks/<stem>.ipynb`` in JupyterLab, built from ``repo``'s environment.yml."""
    return f"https://mybinder.org/v2/gh/{repo}/HEAD?labpath={quote(f'notebooks/{stem}.ipynb', safe='')}"


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


def rewrite_links(page: str, stems: set[str]) -> str:
    """Chapter links (``03_tensor_functions.ipynb#part``) point to the chapter's page; other relative links
    (``../tensoradbook/ad/derive.py``) become plain text, since the static edition does not carry the sources.
    Absolute URLs and in-page anchors stay as they are."""

    def replace(m: re.Match) -> str:
        href = html.unescape(m["href"])
        if not href or href.startswith(("#", "/", ASSETS + "/", "index.html")) or re.match(r"[a-z][a-z0-9+.-]*:", href):
            return m[0]
        target, _, anchor = href.partition("#")
        name = Path(target).name
        if not target.startswith("../") and name.endswith(".ipynb") and name[: -len(".ipynb")] in stems:
            new = name[: -len(".ipynb")] + ".html" + (f"#{anchor}" if anchor else "")
            return f'<a{m["before"]}href="{html.escape(new)}"{m["after"]}>{m["text"]}</a>'
        if target.endswith(".html") and Path(target).stem in stems:
            return m[0]
        shown = target.lstrip("./") or href
        return f'<span class="site-repo-path" title="{html.escape(shown)} in the book\'s repository">{m["text"]}</span>'

    return _LINK.sub(replace, page)


def copy_assets(assets: Path) -> str:
    """The scripts and styles the pages load, into ``assets`` (site/assets/); returns the icon fonts' CSS."""
    assets.mkdir(parents=True)
    shutil.copy2(asset("requirejs", "require.js"), assets / "require.js")
    shutil.copy2(asset("jquery", "dist/jquery.min.js"), assets / "jquery.min.js")
    shutil.copy2(asset("@jupyter-widgets/html-manager", "dist/embed-amd.js"), assets / "embed-amd.js")
    # All of it (12 MB, under a second): MathJax loads the translation of the reader's browser language.
    shutil.copytree(mathjax_dir(), assets / "mathjax")
    shutil.copy2(TEMPLATES / "site.css", assets / "site.css")
    # The index is not an nbconvert page, but shares the chapters' lab style sheets.
    lab = Path(HTMLExporter(template_name="lab").template_paths[0])
    lab_static = next(p for p in (Path(d) / "static" for d in [lab, *lab.parents]) if (p / "index.css").exists())
    (assets / "lab").mkdir()
    for css in ("index.css", "theme-light.css"):
        shutil.copy2(lab_static / css, assets / "lab" / css)
    return copy_icon_fonts(assets)


def find_icon_fonts() -> dict[str, Path]:
    """Font Awesome 5's woff files (by :data:`ICON_FONTS` name) from the installed Voila templates."""
    try:
        from fontTools.ttLib import TTFont  # matplotlib's dependency
    except ImportError:
        return {}
    found: dict[str, Path] = {}
    for woff in sorted((Path(sys.prefix) / "share" / "jupyter" / "voila" / "templates").glob("*/static/*.woff")):
        try:
            with TTFont(woff, lazy=True) as font:
                name = font["name"].getDebugName(4)
        except Exception:  # noqa: BLE001 -- not a font fontTools reads: not one of ours
            continue
        if name in ICON_FONTS and name not in found:
            found[name] = woff
    return found


def copy_icon_fonts(assets: Path) -> str:
    """Copy the icon fonts into ``assets``/fonts/ and return the CSS that declares them (empty if none)."""
    found = find_icon_fonts()
    if len(found) < len(ICON_FONTS):
        missing = ", ".join(sorted(set(ICON_FONTS) - set(found)))
        print(f"warning: no {missing} font in Voila's templates: widget icons may not show", file=sys.stderr)
    css = []
    for name, path in found.items():
        family, weight, file = ICON_FONTS[name]
        (assets / "fonts").mkdir(exist_ok=True)
        shutil.copy2(path, assets / "fonts" / file)
        css.append(f'@font-face {{ font-family: "{family}"; font-style: normal; font-weight: {weight}; '
                   f'font-display: block; src: url("{FONTS}/{file}") format("woff"); }}')
    return "\n".join(css)


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
    return WIDGET_VIEW in data and "image/png" in data


def widget_picture_html(png_base64: str, binder: str) -> str:
    """The figure a page shows for a widget: its picture, and a caption saying it is one."""
    return (f'<figure class="{PICTURE_CLASS}" style="margin:0">'
            f'<img src="data:image/png;base64,{png_base64}" alt="static picture of the widget">'
            '<figcaption style="font-size:0.9em;color:#555;margin-top:4px">Static picture of the initial state; '
            f'<a href="{html.escape(binder)}" target="_blank" rel="noopener">run the chapter</a> to use the widget.'
            '</figcaption></figure>')


def show_widget_pictures(nb, binder: str) -> int:
    """Replace each widget output that carries a picture by :func:`widget_picture_html` (in place); a notebook
    left without widget views loses its stored widget state, so its page loads no widget manager. Returns how
    many outputs were replaced."""
    replaced = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if _has_picture(output):
                output["data"] = {"text/html": widget_picture_html(output["data"]["image/png"], binder)}
                output["metadata"] = {}
                replaced += 1
    if not any(WIDGET_VIEW in o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])):
        nb.metadata.pop("widgets", None)
    return replaced


def _nav(chapter: Chapter | None) -> dict | None:
    if chapter is None:
        return None
    return {"href": chapter.href, "number": chapter.number, "short": chapter.short, "title": chapter.title}


def build(output: Path = SITE, *, notebooks: Path = NOTEBOOKS, binder_repo: str = BINDER_REPO) -> Path:
    """Build the static edition into ``output`` (replaced as a whole) and return its ``index.html``."""
    output = Path(output).resolve()
    book = chapters(notebooks)
    if not book:
        raise SystemExit(f"error: no notebooks in {notebooks}")
    stems = {c.stem for c in book}
    # The old folder is deleted as a whole: only one that this module built (or an empty one) may go.
    if output.exists() and any(output.iterdir()) and not (output / ASSETS / "site.css").is_file():
        raise SystemExit(f"error: {output} is not a site built by classroom.site; refusing to replace it")
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}-", dir=output.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the site from a web server running as another user
    try:
        icon_fonts = copy_assets(staging / ASSETS)
        exporter = make_exporter()
        for i, chapter in enumerate(book):
            nb = with_solutions(nbformat.read(notebooks / f"{chapter.stem}.ipynb", as_version=4), chapter.stem)
            show_widget_pictures(nb, binder_url(binder_repo, chapter.stem))
            resources = {
                "metadata": {"name": chapter.title},
                "site": {
                    "assets": ASSETS,
                    "mathjax_config": MATHJAX_CONFIG,
                    "icon_fonts": icon_fonts,
                    "binder_url": binder_url(binder_repo, chapter.stem),
                    "prev": _nav(book[i - 1] if i > 0 else None),
                    "next": _nav(book[i + 1] if i + 1 < len(book) else None),
                },
            }
            page, _ = exporter.from_notebook_node(nb, resources=resources)
            (staging / chapter.href).write_text(rewrite_links(page, stems), encoding="utf-8")
        write_index(staging / "index.html", book, binder_repo)
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


def write_index(path: Path, book: list[Chapter], binder_repo: str) -> None:
    """The chapter map: number, title, the report's sections and one line about each chapter."""
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
        binder_url=binder_url(binder_repo),
        binder_repo=binder_repo,
        mathjax_url=MATHJAX_URL,
        mathjax_config=MATHJAX_CONFIG,
    )
    path.write_text(page, encoding="utf-8")


def _outputs(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [o for c in nb["cells"] for o in c.get("outputs", [])]


def widget_view_count(path: Path) -> int:
    """How many widget views a notebook stores without their picture (each one is drawn live on its page)."""
    return sum(WIDGET_VIEW in o.get("data", {}) and not _has_picture(o) for o in _outputs(path))


def widget_picture_count(path: Path) -> int:
    """How many widget outputs of a notebook carry their picture (each one is shown as a figure on its page)."""
    return sum(map(_has_picture, _outputs(path)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.site", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=SITE, help=f"the site's folder (default: {SITE})")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="the chapters' folder")
    parser.add_argument("--binder-repo", default=BINDER_REPO,
                        help=f"GitHub owner/repository that the Binder links run (default: {BINDER_REPO})")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", args.binder_repo):
        parser.error(f"--binder-repo wants owner/repository, not {args.binder_repo!r}")
    started = time.perf_counter()
    index = build(args.output, notebooks=args.notebooks, binder_repo=args.binder_repo)
    pages = len(list(index.parent.glob("*.html"))) - 1
    print(f"built {pages} chapters in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print(index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
