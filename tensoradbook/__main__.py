"""Command line: ``python -m tensoradbook derive "TEXT" --shape f=3x4 --shape a=3x5 ...``.

Prints the derivatives in the report's notation (``--latex`` for LaTeX;
``--simplified`` for the form the kernels run, reading ``f``); ``--kernel
numba`` prints the generated module for a target instead; ``--check`` also runs
the finite-difference dot-product test on random inputs and prints the largest
error. Bad input prints the message and exits with 2, without a traceback.
"""

from __future__ import annotations

import argparse
import sys

from .expr import ExpressionError
from .kernels import TARGETS


def _shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, _, sizes = text.partition("=")
    try:
        shape = tuple(int(n) for n in sizes.lower().split("x")) if sizes else ()
    except ValueError:
        shape = ()
    if not name or not shape or any(n < 1 for n in shape):
        raise argparse.ArgumentTypeError(f"{text!r}: write a shape as NAME=3x4 (positive sizes)")
    return name.strip(), shape


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoradbook",
                                     description="Derivatives of element-wise defined tensor functions.")
    commands = parser.add_subparsers(dest="command", required=True)
    derive_cmd = commands.add_parser("derive", help="print the derivatives of a function")
    derive_cmd.add_argument("text", help='the function, e.g. "f[i; j] = a[i; j] * b[j]"')
    derive_cmd.add_argument("--shape", action="append", type=_shape, default=[], metavar="NAME=3x4",
                            help="the shape of the output or of an argument (repeat for each)")
    derive_cmd.add_argument("--latex", action="store_true", help="print LaTeX instead of the report's notation")
    derive_cmd.add_argument("--check", action="store_true", help="also run a finite-difference dot-product test")
    derive_cmd.add_argument("--simplified", action="store_true",
                            help="print the form the kernels run: reads f, loop invariants hoisted")
    derive_cmd.add_argument("--kernel", choices=TARGETS, metavar="TARGET",
                            help=f"print the generated kernel module for a target ({', '.join(TARGETS)})")
    options = parser.parse_args(argv)

    from . import derive, parse
    from .gradcheck import check_gradients

    try:
        fn = parse(options.text, dict(options.shape))
        grads = derive(fn)
    except ExpressionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
