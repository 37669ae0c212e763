"""Typesetting for the widgets' static pictures (:mod:`widgets.picture`): text, HTML and TeX as images.

Atoms (an image with a baseline) are glued into lines, lines flowed into paragraphs and paragraphs stacked;
HTML is read into a small tree and written with its bold, colour, code, lists, tables and closed
``<details>``; TeX goes through matplotlib's mathtext, with the matrices, ``cases`` and ``aligned`` it lacks
laid out here. DejaVu Sans, matplotlib's own font, so every machine draws the same glyphs.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.mathtext import MathTextParser
from PIL import Image, ImageColor, ImageDraw, ImageFont

from .style import GREY_TEXT, INK, RULE

SIZE = 14  # pixels: 10.5 pt at 96 pixels per inch
TEXT_WIDTH = 760  # paragraphs wrap here
MAX_WIDTH = 1000  # children side by side wider than this are stacked instead
BLOCK_GAP = 8
_FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"


# -- text and atoms ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Style:
    bold: bool = False
    italic: bool = False
    mono: bool = False
    pre: bool = False  # keep spaces and line breaks
    color: str = INK
    size: int = SIZE


@functools.cache
def _font(bold: bool, italic: bool, mono: bool, size: int) -> ImageFont.FreeTypeFont:
    variant = ("Bold" if bold else "") + ("Oblique" if italic else "")
    name = ("DejaVuSansMono" if mono else "DejaVuSans") + (f"-{variant}" if variant else "")
    return ImageFont.truetype(str(_FONTS / f"{name}.ttf"), size)


def font(style: Style) -> ImageFont.FreeTypeFont:
    return _font(style.bold, style.italic, style.mono, style.size)


@dataclass
class Atom:
    """A piece of a line that is never broken: a word, a formula, a control. ``gap``: the space before it
    where it does not start a line (a line may break there)."""

    image: Image.Image  # RGBA
    ascent: int  # pixels above the baseline
    gap: int = 0

    @property
    def width(self) -> int:
        return self.image.width

    @property
    def descent(self) -> int:
        return self.image.height - self.ascent


BREAK = None  # in a list of atoms: the line ends here


def text_atom(text: str, style: Style, gap: int = 0) -> Atom:
    face = font(style)
    ascent, descent = face.getmetrics()
    image = Image.new("RGBA", (max(1, math.ceil(face.getlength(text))), ascent + descent), (0, 0, 0, 0))
    ImageDraw.Draw(image).text((0, 0), text, font=face, fill=style.color)
    return Atom(image, ascent, gap)


def space(style: Style) -> int:
    return math.ceil(font(style).getlength(" "))


def glue(left: Atom, right: Atom) -> Atom:
    """``right`` after ``left`` (``right.gap`` apart) as one atom."""
    ascent, descent = max(left.ascent, right.ascent), max(left.descent, right.descent)
    image = Image.new("RGBA", (left.width + right.gap + right.width, ascent + descent), (0, 0, 0, 0))
    image.alpha_composite(left.image, (0, ascent - left.ascent))
    image.alpha_composite(right.image, (left.width + right.gap, ascent - right.ascent))
    return Atom(image, ascent, left.gap)


def flow(atoms, width: int = TEXT_WIDTH, indent: int = 0, leading: int = 4) -> Atom | None:
    """Lay ``atoms`` out in lines no wider than ``width`` (one atom per line where it alone is wider);
    lines that wrap start ``indent`` pixels in. The result's baseline is the first line's."""
    lines, line, x = [], [], 0
    for atom in atoms:
        if atom is BREAK:
            lines.append(line)
            line, x = [], 0
            continue
        gap = atom.gap if line else 0
        if line and x + gap + atom.width > width:
            lines.append(line)
            line, x, gap = [], indent, 0
        line.append((x + gap, atom))
        x += gap + atom.width
    lines.append(line)
    if not any(lines):
        return None
    metrics = [(max((a.ascent for _, a in ln), default=SIZE), max((a.descent for _, a in ln), default=4))
               for ln in lines]
    height = sum(a + d for a, d in metrics) + leading * (len(lines) - 1)
    image = Image.new("RGBA", (max(x + a.width for ln in lines for x, a in ln), height), (0, 0, 0, 0))
    y = 0
    for ln, (ascent, descent) in zip(lines, metrics):
        for x, atom in ln:
            image.alpha_composite(atom.image, (x, y + ascent - atom.ascent))
        y += ascent + descent + leading
    return Atom(image, metrics[0][0])


def stack(images, gap: int = BLOCK_GAP, indent: int = 0) -> Image.Image | None:
    """Images one under the other, left-aligned."""
    images = [im for im in images if im is not None]
    if not images:
        return None
    out = Image.new("RGBA", (indent + max(im.width for im in images),
                             sum(im.height for im in images) + gap * (len(images) - 1)), (0, 0, 0, 0))
    y = 0
    for im in images:
        out.alpha_composite(im, (indent, y))
        y += im.height + gap
    return out


def row(images, gap: int = 16) -> Image.Image | None:
    """Images side by side, tops aligned, where they fit in :data:`MAX_WIDTH`; else stacked."""
    images = [im for im in images if im is not None]
    if sum(im.width for im in images) + gap * (len(images) - 1) > MAX_WIDTH:
        return stack(images)
    if not images:
        return None
    out = Image.new("RGBA", (sum(im.width for im in images) + gap * (len(images) - 1),
                             max(im.height for im in images)), (0, 0, 0, 0))
    x = 0
    for im in images:
        out.alpha_composite(im, (x, 0))
        x += im.width + gap
    return out


# -- TeX, through mathtext --------------------------------------------------------------------------------

_MATHTEXT = MathTextParser("agg")
# What mathtext does not know: dropped, or written with what it knows.
_TEX_REWRITES = [(re.compile(r"\\(?:displaystyle|textstyle)\b\s*"), ""),
                 (re.compile(r"\\pmod\{([^{}]*)\}"), r"\\ (\\mathrm{mod}\\ \1)")]
_COLOR = re.compile(r"\\color\{([^{}]*)\}")
_SIZED = re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|bigg|Bigg)\b\s*\.?")
# delimiters of the environments laid out here (mathtext has none of them)
_ENVIRONMENTS = {"pmatrix": "()", "bmatrix": "[]", "vmatrix": "||", "Bmatrix": "{}", "matrix": "",
                 "cases": "{", "aligned": "", "array": ""}


def _scan(tex: str):
    """``(index, depth)`` for each character of ``tex`` that is not inside an escape, where ``depth`` counts
    the braces and environments open before it."""
    depth, i = 0, 0
    while i < len(tex):
        if tex.startswith(("\\begin{", "\\end{"), i):  # past the environment's name
            opens = tex.startswith("\\begin{", i)
            depth -= not opens
            yield i, depth
            depth += opens
            i = (tex.find("}", i) + 1) or len(tex)
        elif tex[i] == "\\" and i + 1 < len(tex) and tex[i + 1] in "{}":
            i += 2
        else:
            yield i, depth
            depth += {"{": 1, "}": -1}.get(tex[i], 0)
            i += 1


def split_top(tex: str, separator: str) -> list[str]:
    """``tex`` split at ``separator`` where no brace or environment is open."""
    parts, start, skip = [], 0, -1
    for i, depth in _scan(tex):
        if i >= skip and depth == 0 and tex.startswith(separator, i):
            parts.append(tex[start:i])
            start = skip = i + len(separator)
    return parts + [tex[start:]]


def _segments(tex: str) -> list[tuple[str, str]]:
    """``tex`` as ``("tex", text)`` and ``(environment, body)`` pieces, environments at the top level."""
    out, start, opened = [], 0, None
    for i, depth in _scan(tex):
        if depth == 0 and tex.startswith("\\begin{", i) and opened is None:
            opened = i
        elif depth == 0 and tex.startswith("\\end{", i) and opened is not None:
            name = re.match(r"\\begin\{(\w+\*?)\}", tex[opened:])
            end = tex.index("}", i) + 1
            out += [("tex", tex[start:opened]),
                    (name[1] if name else "", tex[opened + (name.end() if name else 0):i])]
            start, opened = end, None
    return out + [("tex", tex[start:])]


def math_atoms(tex: str, style: Style, width: int = TEXT_WIDTH, display: bool = False) -> list[Atom]:
    """A formula as atoms a line may break between: the environments it holds, and its text, broken at its
    top-level operators where it is wider than ``width``. What mathtext cannot read is shown as TeX.
    ``display``: set apart (``$$``), or ``\\displaystyle``: fractions full size."""
    display = display or "\\displaystyle" in tex
    for pattern, replacement in _TEX_REWRITES:
        tex = pattern.sub(replacement, tex)
    if display:  # mathtext sets \frac in text style
        tex = re.sub(r"\\frac\b", r"\\dfrac", tex)
    atoms = []
    for kind, text in _segments(tex):
        if kind == "tex":
            pieces = _tex_atoms(text.strip(), style, width)
        elif kind in _ENVIRONMENTS:
            pieces = [_environment(kind, text, style, display)]
        else:  # an environment this module does not lay out: its source
            pieces = [text_atom(f"\\begin{{{kind}}}{text}\\end{{{kind}}}", replace(style, mono=True))]
        if pieces and atoms:
            pieces[0].gap = 4
        atoms += pieces
    return atoms


def _mathtext(tex: str, style: Style) -> Atom | None:
    colored = re.fullmatch(r"\\color\{([^{}]*)\}\s*\{(.*)\}", tex, flags=re.S)
    color = _color(colored[1]) or style.color if colored else style.color
    tex = _COLOR.sub("", colored[2] if colored else tex)
    if not tex.strip():
        return None
    try:
        parsed = _MATHTEXT.parse(f"${tex}$", dpi=72, prop=FontProperties(size=style.size))
    except ValueError:  # mathtext's parse errors
        return None
    alpha = Image.fromarray(np.asarray(parsed.image, dtype=np.uint8))
    image = Image.new("RGBA", alpha.size, color)
    image.putalpha(alpha)
    return Atom(image, image.height - round(parsed.depth))


def _tex_atoms(tex: str, style: Style, width: int) -> list[Atom]:
    if not tex:
        return []
    whole = _mathtext(tex, style)
    if whole is not None and whole.width <= width:
        return [whole]
    pieces = [_mathtext(piece, style) for piece in _operator_pieces(_SIZED.sub("", tex))]
    if any(p is None for p in pieces):
        return [text_atom(tex, replace(style, mono=True, color=GREY_TEXT))]
    return pieces


_OPERATOR = re.compile(r"=|\+|-|\\cdot\b|\\times\b|\\leq?\b|\\geq?\b|<|>")


def _operator_pieces(tex: str) -> list[str]:
    """``tex`` cut before each binary operator outside braces (``{}`` keeps its spacing binary)."""
    cuts = [i for i, depth in _scan(tex) if depth == 0 and i > 0 and _OPERATOR.match(tex, i)
            and re.search(r"[\w})\]]\s*$", tex[:i])]
    bounds = [0, *cuts, len(tex)]
    pieces = [tex[a:b].strip() for a, b in zip(bounds, bounds[1:])]
    return [pieces[0]] + ["{}" + p for p in pieces[1:]]


def _environment(name: str, body: str, style: Style, display: bool) -> Atom:
    """A matrix, ``cases`` or ``aligned`` block: its cells in a grid between its delimiters."""
    rows = [split_top(r, "&") for r in split_top(body, r"\\")]
    if rows and rows[-1] == [""]:
        rows.pop()
    cells = [[_cell(c, style, display) for c in r] for r in rows]
    columns = max((len(r) for r in cells), default=0)
    widths = [max((r[k].width for r in cells if k < len(r)), default=0) for k in range(columns)]
    gap = {"aligned": 0, "cases": 24}.get(name, 16)
    heights = [(max((c.ascent for c in r), default=0), max((c.descent for c in r), default=0)) for r in cells]
    grid = Image.new("RGBA", (max(1, sum(widths) + gap * max(0, columns - 1)),
                              max(1, sum(a + d for a, d in heights) + 4 * max(0, len(rows) - 1))), (0, 0, 0, 0))
    y = 0
    for r, (ascent, descent) in zip(cells, heights):
        x = 0
        for k, cell in enumerate(r):
            align = ("right" if k % 2 == 0 else "left") if name == "aligned" else "left" if name == "cases" \
                else "center"
            offset = {"left": 0, "right": widths[k] - cell.width}.get(align, (widths[k] - cell.width) // 2)
            grid.alpha_composite(cell.image, (x + offset, y + ascent - cell.ascent))
            x += widths[k] + gap
        y += ascent + descent + 4
    left, right = (_ENVIRONMENTS[name] + "  ")[:2]
    parts = [_delimiter(left, grid.height + 6, style.color), grid.crop((0, -3, grid.width, grid.height + 3)),
             _delimiter(right, grid.height + 6, style.color)]
    parts = [p for p in parts if p is not None]
    image = Image.new("RGBA", (sum(p.width for p in parts) + 4 * (len(parts) - 1), grid.height + 6), (0, 0, 0, 0))
    x = 0
    for part in parts:
        image.alpha_composite(part, (x, 0))
        x += part.width + 4
    # centred on the formula's axis, about a third of an em above the baseline
    return Atom(image, image.height // 2 + round(0.3 * style.size))


def _cell(tex: str, style: Style, display: bool) -> Atom:
    atoms = math_atoms(tex.strip(), style, width=10**6, display=display)
    if not atoms:
        return Atom(Image.new("RGBA", (1, 1), (0, 0, 0, 0)), 1)
    cell = atoms[0]
    for atom in atoms[1:]:
        cell = glue(cell, atom)
    return cell


def _delimiter(kind: str, height: int, color: str) -> Image.Image | None:
    """A delimiter as tall as a matrix, drawn four times larger and scaled down for smooth edges."""
    if kind == " ":
        return None
    s, width = 4, 10
    image = Image.new("RGBA", (width * s, height * s), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    w, h, line = width * s, height * s, 5
    if kind in "()":
        box = (line, 0, 2 * w, h - 1) if kind == "(" else (-w, 0, w - line, h - 1)
        draw.arc(box, 105, 255, fill=color, width=line) if kind == "(" else draw.arc(box, -75, 75, fill=color,
                                                                                        width=line)
    elif kind in "[]":
        x = w // 3 if kind == "[" else 2 * w // 3
        draw.line((x, 0, x, h), fill=color, width=line)
        draw.line((x, line // 2, w - x, line // 2), fill=color, width=line)
        draw.line((x, h - line // 2, w - x, h - line // 2), fill=color, width=line)
    elif kind == "|":
        draw.line((w // 2, 0, w // 2, h), fill=color, width=line)
    else:  # a brace: two arcs and a point in the middle
        m, x = h // 2, w // 2
        draw.line((x, w // 2, x, m - w // 2), fill=color, width=line)
        draw.line((x, m + w // 2, x, h - w // 2), fill=color, width=line)
        if kind == "{":
            draw.arc((x, 0, x + w, w), 180, 270, fill=color, width=line)
            draw.arc((x, h - w, x + w, h), 90, 180, fill=color, width=line)
            draw.arc((x - w, m - w, x, m), 0, 90, fill=color, width=line)
            draw.arc((x - w, m, x, m + w), 270, 360, fill=color, width=line)
        else:
            draw.arc((x - w, 0, x, w), 270, 360, fill=color, width=line)
            draw.arc((x - w, h - w, x, h), 0, 90, fill=color, width=line)
            draw.arc((x, m - w, x + w, m), 90, 180, fill=color, width=line)
            draw.arc((x, m, x + w, m + w), 180, 270, fill=color, width=line)
    return image.resize((width, height), Image.Resampling.LANCZOS)


def _color(text: str) -> str | None:
    """A CSS colour Pillow reads, else None."""
    try:
        ImageColor.getrgb(text.strip())
    except ValueError:
        return None
    return text.strip()


# -- HTML -------------------------------------------------------------------------------------------------


@dataclass
class Node:
    tag: str
    attrs: dict
    children: list


class _Tree(HTMLParser):
    VOID = {"br", "hr", "img", "input", "meta", "link", "wbr", "col"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("", {}, [])
        self.open = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, [])
        self.open[-1].children.append(node)
        if tag not in self.VOID:
            self.open.append(node)

    def handle_endtag(self, tag):
        for k in range(len(self.open) - 1, 0, -1):
            if self.open[k].tag == tag:
                del self.open[k:]
                return

    def handle_data(self, data):
        self.open[-1].children.append(data)


def parse_html(text: str) -> Node:
    tree = _Tree()
    tree.feed(text)
    tree.close()
    return tree.root


_BLOCKS = {"p", "div", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "section",
           "summary", "dl", "dt", "dd", "center"}
_SKIPPED = {"style", "script", "head", "title", "template"}
_SUBSCRIPTS = str.maketrans("0123456789+-=(),aeijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎‚ₐₑᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
_SUPERSCRIPTS = str.maketrans("0123456789+-=()inT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿᵀ")
_MATH_TEXT = re.compile(r"(\$\$.+?\$\$|\$[^$]+?\$)", re.S)


def _styled(style: Style, node: Node) -> Style:
    tag, css = node.tag, node.attrs.get("style", "")
    if tag in ("b", "strong", "th", "h1", "h2", "h3", "h4", "h5", "h6", "summary", "dt"):
        style = replace(style, bold=True)
    if tag in ("i", "em", "var", "cite"):
        style = replace(style, italic=True)
    if tag in ("code", "tt", "kbd", "samp", "pre"):
        style = replace(style, mono=True, pre=style.pre or tag == "pre")
    if tag in ("h1", "h2", "h3"):
        style = replace(style, size=SIZE + 2)
    if m := re.search(r"(?:^|;)\s*color\s*:\s*([^;]+)", css):
        style = replace(style, color=_color(m[1]) or style.color)
    if re.search(r"font-weight\s*:\s*(?:bold|[6-9]00)", css):
        style = replace(style, bold=True)
    if re.search(r"font-style\s*:\s*italic", css):
        style = replace(style, italic=True)
    if re.search(r"font-family\s*:[^;]*mono", css):
        style = replace(style, mono=True)
    if re.search(r"white-space\s*:\s*pre(?!-line)", css):
        style = replace(style, pre=True)
    return style


class _Writer:
    """HTML to blocks: paragraphs flowed into lines, tables, display math."""

    def __init__(self, math: bool, width: int = TEXT_WIDTH):
        self.math, self.width = math, width
        self.blocks: list[Image.Image] = []
        self.atoms: list = []
        self.space = False  # whitespace came since the last atom

    def flush(self, indent: int = 0, hanging: int = 0) -> None:
        if any(a is not BREAK for a in self.atoms):
            flowed = flow(self.atoms, self.width - indent, indent=hanging)
            self.blocks.append(stack([flowed.image], indent=indent))
        self.atoms, self.space = [], False

    def add(self, atom: Atom, style: Style) -> None:
        """The next atom of the paragraph: after a space a line may break before it, else it is glued on."""
        previous = self.atoms[-1] if self.atoms else BREAK
        if previous is BREAK or self.space:
            atom.gap = space(style) if self.space and previous is not BREAK else 0
            self.atoms.append(atom)
        else:
            atom.gap = 0
            self.atoms[-1] = glue(previous, atom)
        self.space = False

    def text(self, text: str, style: Style) -> None:
        if style.pre:
            self.preformatted(text, style)
            return
        parts = _MATH_TEXT.split(text) if self.math else [text]
        for k, part in enumerate(parts):
            if k % 2 == 0:
                self.words(part, style)
            elif part.startswith("$$"):
                self.flush()
                self.atoms = math_atoms(part[2:-2].strip(), style, self.width - 24, display=True)
                self.flush(indent=24, hanging=24)
            else:
                atoms = math_atoms(part[1:-1].strip(), style, self.width)
                if atoms:
                    self.add(atoms[0], style)
                    self.atoms += atoms[1:]

    def preformatted(self, text: str, style: Style) -> None:
        """Text whose line breaks and spaces stay as they are."""
        for k, line in enumerate(text.split("\n")):
            if k:
                self.atoms.append(BREAK)
                self.space = False
            if line:
                self.add(text_atom(line, style), style)

    def words(self, text: str, style: Style) -> None:
        """Text without math: a word per atom, a line may break where it has spaces."""
        for word in re.split(r"(\s+)", text):
            if not word:
                continue
            if word.isspace():
                self.space = True
            else:
                self.add(text_atom(word, style), style)

    def walk(self, node: Node, style: Style) -> None:
        for child in node.children:
            if isinstance(child, str):
                self.text(child, style)
            elif child.tag not in _SKIPPED:
                self.element(child, _styled(style, child))

    def element(self, node: Node, style: Style) -> None:
        tag = node.tag
        if tag == "br":
            self.atoms.append(BREAK)
            self.space = False
        elif tag == "hr":
            self.flush()
            rule = Image.new("RGBA", (self.width, 1), RULE)
            self.blocks.append(rule)
        elif tag == "table":
            self.flush()
            self.blocks.append(self.table(node, style))
        elif tag == "details" and "open" not in node.attrs:  # closed: only its summary shows
            self.closed_details(node, style)
        elif tag in ("ul", "ol"):
            self.flush()
            self.list_items(node, style)
        elif tag in ("sub", "sup"):
            self.script(node, style)
        elif tag in _BLOCKS:
            self.flush()
            self.walk(node, style)
            self.flush()
        else:
            self.walk(node, style)

    def closed_details(self, node: Node, style: Style) -> None:
        """A closed ``details``: a marker and its summary."""
        self.flush()
        summary = next((c for c in node.children if isinstance(c, Node) and c.tag == "summary"), None)
        self.add(text_atom("▸", style), style)
        self.space = True
        if summary is not None:
            self.walk(summary, _styled(style, summary))
        self.flush()

    def list_items(self, node: Node, style: Style) -> None:
        """The items of a ``ul`` or ``ol``, each a paragraph hanging after its bullet or number."""
        items = [c for c in node.children if isinstance(c, Node) and c.tag == "li"]
        for k, item in enumerate(items, start=1):
            marker = text_atom(f"{k}." if node.tag == "ol" else "•", style)
            self.atoms = [marker]
            self.space = True
            self.walk(item, _styled(style, item))
            self.flush(indent=16, hanging=marker.width + space(style))

    def script(self, node: Node, style: Style) -> None:
        """A ``sub`` or ``sup``: in Unicode's sub- or superscript letters where it has them all."""
        text = "".join(c for c in node.children if isinstance(c, str))
        shifted = text.translate(_SUBSCRIPTS if node.tag == "sub" else _SUPERSCRIPTS)
        if all(ch != orig or ch.isspace() for ch, orig in zip(shifted, text)):
            self.add(text_atom(shifted, style), style)
        else:  # no Unicode form: smaller, shifted
            small = text_atom(text, replace(style, size=max(10, style.size - 3)))
            small.ascent += -4 if node.tag == "sub" else 4
            self.add(small, style)

    def table(self, node: Node, style: Style) -> Image.Image | None:
        rows = _table_rows(node, style)
        pictures = []
        for cells in rows:
            line = []
            for cell, cell_style in cells:
                writer = _Writer(self.math, width=min(self.width, 420))
                writer.walk(cell, cell_style)
                writer.flush()
                align = re.search(r"text-align\s*:\s*(\w+)", cell.attrs.get("style", ""))
                line.append((stack(writer.blocks, gap=2), align[1] if align else "left", cell.tag == "th"))
            pictures.append(line)
        return _table_picture(pictures)


def _table_rows(node: Node, style: Style) -> list[list[tuple[Node, Style]]]:
    """A table's rows (also inside thead, tbody and tfoot), each its cells with their styles."""
    rows = []
    for child in node.children:
        if isinstance(child, Node) and child.tag == "tr":
            rows.append([(cell, _styled(_styled(style, child), cell)) for cell in child.children
                         if isinstance(cell, Node) and cell.tag in ("td", "th")])
        elif isinstance(child, Node) and child.tag in ("thead", "tbody", "tfoot"):
            rows += _table_rows(child, _styled(style, child))
    return rows


def _table_picture(pictures: list) -> Image.Image | None:
    """The table of the cells' ``(picture, alignment, is a header)`` row by row, a rule under each row."""
    columns = max((len(r) for r in pictures), default=0)
    if not columns:
        return None
    hpad, vpad = 10, 4
    widths = [max((r[k][0].width for r in pictures if k < len(r) and r[k][0] is not None), default=0)
              for k in range(columns)]
    heights = [max((c.height for c, _, _ in r if c is not None), default=SIZE) for r in pictures]
    out = Image.new("RGBA", (sum(widths) + 2 * hpad * columns, sum(heights) + 2 * vpad * len(pictures) + 1),
                    (0, 0, 0, 0))
    draw = ImageDraw.Draw(out)
    y = 0
    for r, height in zip(pictures, heights):
        x = 0
        for k, (cell, align, _) in enumerate(r):
            if cell is not None:
                offset = {"right": widths[k] - cell.width, "center": (widths[k] - cell.width) // 2}.get(align, 0)
                out.alpha_composite(cell, (x + hpad + offset, y + vpad))
            x += widths[k] + 2 * hpad
        y += height + 2 * vpad
        header = r and all(th for _, _, th in r)
        draw.line((0, y, out.width, y), fill=GREY_TEXT if header else "#e6e6e6", width=1)
    return out


def html_picture(text: str, math: bool) -> Image.Image | None:
    """The picture of an HTML (``math``: HTMLMath) widget's value."""
    writer = _Writer(math)
    writer.walk(parse_html(text), Style())
    writer.flush()
    return stack(writer.blocks)


# -- widgets ----------------------------------------------------------------------------------------------
