"""Command line: ``python -m tensoradbook derive "TEXT" --shape f=3x4 --shape a=3x5 ...``.

TEXT is a function or a program of several definitions, one per line (``--file PATH`` reads it from
a UTF-8 file instead, a byte order mark allowed, at most MAX_SOURCE_CHARS characters as for
:func:`tensoradbook.parse`; ``--shape`` gives every input's and every definition's shape). Prints the derivatives
in the report's notation (``--latex`` for LaTeX;
``--simplified`` for the form the kernels run, reading ``f``); ``--kernel
numba`` prints the generated module for a target instead; ``--check`` also runs
the finite-difference dot-product test on random inputs and prints the largest
error. A scalar's shape is ``--shape s=`` or ``--shape s=()``. Bad input prints
one line ``error: ...`` (a parser message adds its caret lines) and exits with
2, without a traceback; so does an interrupt (exit 130).
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys

from .lang.expr import ExpressionError
from .lang.limits import MAX_SOURCE_CHARS
from .codegen import TARGETS

# NAME=3x4, NAME=8, NAME= or NAME=() (a scalar); sizes in ASCII digits.
_SHAPE = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*(\(\s*\)|[0-9]+(?:\s*[xX]\s*[0-9]+)*|)\s*", re.ASCII)
# What the command reports instead of a traceback: bad input found by the parser, derive or the check
# (ValueError includes ExpressionError), and sizes that do not fit in memory or in a machine integer.
_INPUT_ERRORS = (ValueError, ArithmeticError, MemoryError, RecursionError)


def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """The ``--shape`` values as ``{name: shape}``; ValueError naming the item that is wrong."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items:
        match = _SHAPE.fullmatch(item)
        if match is None:
            raise ValueError(f"--shape {item!r}: write NAME=3x4 (sizes in digits 0-9), or NAME= or NAME=() "
                             "for a scalar")
        name, sizes = match.groups()
        shape = () if sizes.startswith("(") or not sizes else tuple(int(n) for n in re.split(r"\s*[xX]\s*", sizes))
        if any(n < 1 for n in shape):
            raise ValueError(f"--shape {item!r}: sizes must be positive")
        if name in shapes:
            raise ValueError(f"--shape {item!r}: {name} is given twice")
        shapes[name] = shape
    return shapes


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="python -m tensoradbook",
                                     description="Derivatives of element-wise defined tensor functions.")
    commands = parser.add_subparsers(dest="command", required=True)
    derive_cmd = commands.add_parser("derive", help="print the derivatives of a function or a program")
    derive_cmd.add_argument("text", nargs="?", help='the function, e.g. "f[i; j] = a[i; j] * b[j]", or a program '
                            "of several definitions, one per line")
    derive_cmd.add_argument("--file", metavar="PATH", help="read the function or program from a file instead")
    derive_cmd.add_argument("--shape", action="append", default=[], metavar="NAME=3x4",
                            help="the shape of the output or of an argument (repeat for each; NAME= for a scalar)")
    derive_cmd.add_argument("--latex", action="store_true", help="print LaTeX instead of the report's notation")
    derive_cmd.add_argument("--check", action="store_true", help="also run a finite-difference dot-product test")
    derive_cmd.add_argument("--simplified", action="store_true",
                            help="print the form the kernels run: reads f, loop invariants hoisted")
    derive_cmd.add_argument("--kernel", choices=TARGETS, metavar="TARGET",
                            help=f"print the generated kernel module for a target ({', '.join(TARGETS)})")
    return parser.parse_args(argv)


def _derive(options) -> None:
    from . import derive, parse
    from .ad.gradcheck import check_gradients

    fn = parse(_text(options), parse_shapes(options.shape))
    grads = derive(fn)
    shown = grads.simplified if options.simplified else grads
    if options.kernel:
        print(grads.source(options.kernel), end="")
    elif options.latex:
        print(shown._repr_latex_())
    else:
        print(shown)
    if options.check:
        errors = check_gradients(fn, grads=grads)
        worst = max(errors, key=errors.get) if errors else None
        for name, error in errors.items():
            print(f"check d{name}: relative error {error:.1e}")
        if worst is not None:
            print(f"largest error: {errors[worst]:.1e} (d{worst})")


def _text(options) -> str:
    """The function's text: the argument, or the file ``--file`` names (at most MAX_SOURCE_CHARS characters of
    it, as :func:`tensoradbook.parse` takes)."""
    if (options.text is None) == (options.file is None):
        raise ValueError("give the function as TEXT or --file PATH (one of them)")
    if options.text is not None:
        return options.text
    try:
        with open(options.file, encoding="utf-8") as source:
            # At most one character past the limit: `--file /dev/zero` never ends.
            text = source.read(MAX_SOURCE_CHARS + 1)
            if len(text) > MAX_SOURCE_CHARS:
                found = os.fstat(source.fileno())
                size = (f"{found.st_size:,} bytes" if stat.S_ISREG(found.st_mode)
                        else f"more than {MAX_SOURCE_CHARS:,} characters")
                raise ValueError(f"--file {options.file!r} has {size}: a function or program is at most "
                                 f"MAX_SOURCE_CHARS = {MAX_SOURCE_CHARS:,} characters (tensoradbook.lang.limits)")
            return text
    except OSError as error:
        raise ValueError(f"--file {options.file!r}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ValueError(f"--file {options.file!r}: not UTF-8 text") from None


def main(argv=None) -> int:
    options = _arguments(argv)  # argparse reports its own usage errors (exit 2)
    try:
        _derive(options)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except _INPUT_ERRORS as error:
        # A parser message keeps its caret lines; anything else is one line.
        text = str(error) if isinstance(error, ExpressionError) else " ".join(str(error).split())
        if isinstance(error, MemoryError):
            text = "not enough memory for these shapes"
        print(f"error: {text or type(error).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
