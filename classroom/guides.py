"""The guides per reader (``docs/*.md``: the student's, the instructor's, the class server's, the developer's) as
pages of the static edition, beside the chapters.

Each guide is rendered with nbconvert's mistune, as the chapters' markdown is, into ``site/guide-<name>.html``;
its headings get GitHub's anchors (``#the-notation``), so that a link written for the repository
(``docs/student.md#the-notation``, from a chapter or another guide) lands on the same heading in the site;
:func:`classroom.site.rewrite_links` points those links at the pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from classroom.paths import REPO

GUIDES = REPO / "docs"
#: The guides in the order a newcomer meets them; any other guide follows, by name.
ORDER = ("student", "instructor", "class_server", "developer")

_HEADING_ID = re.compile(r'(<h[1-6] id=")([^"]*)(">.*?<a class="anchor-link" href="#)([^"]*)(")')


@dataclass(frozen=True)
class Guide:
    """One guide: its file's stem, its title (the first heading) and what it covers (the paragraph after)."""

    stem: str
    title: str
    summary: str
    markdown: str  # the text below the title

    @property
    def href(self) -> str:
        return f"guide-{self.stem}.html"


def read_guide(path: Path) -> Guide:
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if not first.startswith("# "):
        raise SystemExit(f"error: {path} does not start with its title ('# ...')")
    summary = rest.strip().split("\n\n", 1)[0]
    return Guide(path.stem, first[2:].strip(), " ".join(summary.split()), rest)


def guides(folder: Path = GUIDES) -> list[Guide]:
    files = sorted(folder.glob("*.md"), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem))
    return [read_guide(path) for path in files]


def github_anchors(page: str) -> str:
    """Headings' ids as GitHub writes them (lower case): nbconvert keeps the heading's case (``The-notation``)."""
    return _HEADING_ID.sub(lambda m: m[1] + m[2].lower() + m[3] + m[4].lower() + m[5], page)


def guide_page(guide: Guide, book: list[Guide], templates: Path, book_title: str) -> str:
    """The page of ``guide``, with links to the index and to the other guides of ``book``."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    body = github_anchors(markdown2html_mistune(guide.markdown))
    return env.get_template("guide.html.j2").render(
        book_title=book_title, title=guide.title,
        body=Markup(body),  # noqa: S704 -- the book's own guides, rendered by nbconvert's mistune
        others=[{"href": g.href, "title": g.title} for g in book if g.stem != guide.stem])
