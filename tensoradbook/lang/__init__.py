"""Report secs. 5-6, the notation of element-wise tensor functions: the one table of operations
(:mod:`.ops`), expression trees and their traversal (:mod:`.expr`), the notation's parser
(:mod:`.parser`) and printers (:mod:`.printer`), and simplification (:mod:`.simplify`). Builds on
:mod:`tensoradbook.integer` only."""

from .expr import Affine, Atom, Binary, Element, If, Number, Select, Sum, Unary, substitute, walk
from .printer import affine_text, atom_text, expr_text
from .simplify import ZERO, add, if_, mul, select

# The nodes, printers and simplifying constructors from which chapter 12 builds the engine.
__all__ = [
    "ZERO", "Affine", "Atom", "Binary", "Element", "If", "Number", "Select", "Sum", "Unary", "add", "affine_text",
    "atom_text", "expr_text", "if_", "mul", "select", "substitute", "walk",
]
