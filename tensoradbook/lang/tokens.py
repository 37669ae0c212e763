"""The notation's tokens (report sec. 6) and the caret under a bad one that every ExpressionError shows."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .ops import FUNCTIONS

KEYWORDS = frozenset(("sum", "if", "then", "else", "and", "max", "min", "ceil", "floor") + FUNCTIONS)
TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<number>(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?)"  # ASCII digits only, not \d
    r"|(?P<name>[A-Za-z][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*|>=|<=|[-+*/%=()\[\]{};,_^<>])"
)
SEPARATORS = (";", ",")
# An error shows at most this many characters of its source line, a window around the bad token, and quotes
# at most SHOWN_TOKEN characters of a token: a line or a name of megabytes is not echoed whole.
SHOWN_LINE = 100
SHOWN_TOKEN = 40
CUT = "..."  # marks where a shown line or token is cut


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "name", the operator itself, or "end"
    text: str
    start: int
    end: int

    def describe(self) -> str:
        return "the end of the text" if self.kind == "end" else repr(shown(self.text))


def shown(text: str) -> str:
    """``text`` (a token or a fragment of the source) as a message quotes it: its start and its length
    past SHOWN_TOKEN characters."""
    return text if len(text) <= SHOWN_TOKEN else f"{text[:SHOWN_TOKEN // 2]}{CUT}({len(text):,} characters)"


def character_name(character: str) -> str:
    """A character as an error names it: quoted, and by its code point and Unicode name unless it is printable
    ASCII, so that one the caret line cannot show (U+200B ZERO WIDTH SPACE, a control character) is named."""
    if character.isascii() and character.isprintable():
        return repr(character)
    code, name = f"U+{ord(character):04X}", unicodedata.name(character, "")
    if name:
        return f"{character!r} ({code} {name})"
    kind = "a control character" if unicodedata.category(character) == "Cc" else "a character without a Unicode name"
    return f"{character!r} ({code}, {kind})"


def caret_block(text: str, start: int, end: int) -> str:
    """The source line holding ``start`` with carets under ``start:end`` (clipped to that line); a line of
    more than SHOWN_LINE characters is cut to that many around ``start``, CUT marking each side cut off."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    shown_start, shown_end = line_start, line_end
    if line_end - line_start > SHOWN_LINE:
        shown_start = max(line_start, min(start - SHOWN_LINE // 2, line_end - SHOWN_LINE))
        shown_end = shown_start + SHOWN_LINE
    before = CUT if shown_start > line_start else ""
    after = CUT if shown_end < line_end else ""
    # keep tabs so the carets line up under them
    pad = " " * len(before) + "".join("\t" if ch == "\t" else " " for ch in text[shown_start:start])
    width = max(1, min(end, shown_end) - start)
    return f"  {before}{text[shown_start:shown_end]}{after}\n  {pad}{'^' * width}"
