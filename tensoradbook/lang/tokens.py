"""The notation's tokens (report sec. 6) and the caret under a bad one that every ExpressionError shows."""

from __future__ import annotations

import re
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


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "name", the operator itself, or "end"
    text: str
    start: int
    end: int

    def describe(self) -> str:
        return "the end of the text" if self.kind == "end" else repr(self.text)


def caret_block(text: str, start: int, end: int) -> str:
    """The source line holding ``start`` with carets under ``start:end`` (clipped to that line)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    line = text[line_start:line_end]
    # keep tabs so the carets line up under them
    pad = "".join("\t" if ch == "\t" else " " for ch in line[:start - line_start])
    width = max(1, min(end, line_end) - start)
    return f"  {line}\n  {pad}{'^' * width}"
