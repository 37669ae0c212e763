"""The paper's example programs and the book's, each written once (Pearlmutter & Siskind, Figs. 2 and 4).

A program is a step function on registers ``x`` (Python numbers, or the :class:`~.registers.Var` values
:func:`~.program.trace` passes): each assignment overwrites one register with a function of registers
that reads its old value (eqs. 2.5). The chapter, its widgets, its exercises and the tests all use
these.
"""

from __future__ import annotations

from .registers import exp, sin


def fig2(p, q):
    """Fig. 2's program for any ``p`` and ``q``: ``r1 <- p(r1, r2); r3 <- q(r1, r3)``."""
    def step(x):
        x[0] = p(x[0], x[1])
        x[2] = q(x[0], x[2])
    return step


#: Fig. 2 with products: p = x1 x2, q = z1 x3 (the worked example of the chapter, at (2, 3, 5)).
fig2_products = fig2(lambda x1, x2: x1 * x2, lambda z1, x3: z1 * x3)
#: Fig. 2 with p = exp x1 + x2^2, q = sin z1 + x3^3 (every partial differs from 0 and 1).
fig2_transcendental = fig2(lambda x1, x2: exp(x1) + x2 ** 2, lambda z1, x3: sin(z1) + x3 ** 3)


def fig2_target(x):
    """Fig. 2's products minus their value (6, 3, 30) at x = (2, 3, 5): a root for Newton's method."""
    x[0] = x[0] * x[1] - 6
    x[2] = (x[0] + 6) * x[2] - 30
    x[1] = x[1] - 3


def two_chains(x):
    """Two independent chains with a temporary each (Fig. 4): each temporary is read by two steps."""
    t1 = exp(x[0])
    t2 = sin(x[1])
    x[0] = x[0] * t1
    x[1] = x[1] * t2
    x[0] = x[0] + t1
    x[1] = x[1] + t2


def shared_temporary(x):
    """Both new values need ``t``: whatever the order, one lump writes both."""
    t = x[0] * x[1]
    x[0] = x[0] + t
    x[1] = x[1] - t ** 2
    x[2] = x[2] * x[0]


def dense_matvec(x):
    """``x <- M x`` in scalar steps: every new value reads every old one, so all n are one lump
    (the counter-example: its inverse sweep is Gaussian elimination)."""
    y0 = 2 * x[0] + x[1] + 0.5 * x[2]
    y1 = x[0] + 3 * x[1] + x[2]
    y2 = 0.5 * x[0] + x[1] + 4 * x[2]
    x[0] = y0
    x[1] = y1
    x[2] = y2


def circle_and_line(x):
    """The circle u^2 + v^2 = 4 and the line u = v: ``x[1] = u - v`` reads ``u`` after ``x[0]`` is
    overwritten, so the program is one lump of size 2."""
    u, v = x[0], x[1]
    x[0] = u * u + v * v - 4
    x[1] = u - v


def kepler(x):
    """Kepler's equation E - e sin E = M with e = 0.9, M = 1."""
    x[0] = x[0] - 0.9 * sin(x[0]) - 1.0


def no_real_root(x):
    """x^2 + 1 = 0: Newton's method cannot converge."""
    x[0] = x[0] ** 2 + 1
