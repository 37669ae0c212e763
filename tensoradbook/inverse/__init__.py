"""Inverse accumulation mode: ``J^-1 ydot`` and ``J^-T xbar`` at the cost of ``J xdot`` and ``J^T ybar``.

Pearlmutter & Siskind, "Automatic Differentiation: Inverse Accumulation Mode"
(arXiv 2411.18786). A function ``f: R^n -> R^n`` is written as a register
machine: ``n`` registers, each step overwriting one register with a function of
registers that includes the old value of that register (sec. 2, eqs. 2.5).
The step's Jacobian is the identity except for its row ``R``, ``(a, b)`` with
``a = dh/dx[R]`` the diagonal partial and ``b`` the partials for the other
registers it reads (eq. 2.6c); its inverse has the same sparsity, ``(1/a,
-b/a)`` (eq. 2.6f). So eqs. 2.3 (forward and reverse) and 2.4 (their inverses)
cost the same:

=========================  ===============  =========================================  =======
sweep                      computes         per step                                   order
=========================  ===============  =========================================  =======
:func:`jvp`                ``J xdot``       ``v[R] = a v[R] + b.v[S]``                 forward
:func:`vjp`                ``J^T ybar``     ``v[S] += b v[R]; v[R] = a v[R]``          reverse
:func:`forward_inverse`    ``J^-T xbar``    ``u = v[R]/a; v[R] = u; v[S] -= b u``      forward
:func:`reverse_inverse`    ``J^-1 ydot``    ``v[R] = (v[R] - b.v[S]) / a``             reverse
=========================  ===============  =========================================  =======

The reverse sweeps replay the partials from a tape; forward inverse needs
none. A step is invertible iff ``a != 0``, and ``det J = prod_t a_t``.

Programs with temporaries (sec. 3) have more than ``n`` live values at some
points. :func:`trace` records the program as a data-flow graph, orders it
topologically (program order, a greedy order, or one the user gives) and cuts
it where exactly ``n`` values are live; each piece is a *lump*, a step with
``l`` outputs whose Jacobian is ``[[A, B], [0, I]]`` with inverse ``[[A^-1,
-A^-1 B], [0, I]]`` (eqs. 2.6g, 2.6h). The order changes the lump sizes
(Fig. 4). The invariants of eqs. 4.7 and the ODE view of sec. 5 (eqs. 5.10:
Euler steps, whose inverse sweeps integrate backwards in time) are what the
tests check. :func:`newton` solves ``F(x) = 0`` with one reverse-inverse sweep
per iteration.

Every sweep has two engines over the same instruction arrays: plain Python
(``engine="python"``, also the one that records the register values after each
step, :func:`sweep`) and compiled Numba loops (``engine="numba"``, in
:mod:`tensoradbook.inverse.engine`) for programs of millions of steps.

The package: :mod:`.registers` (traced registers), :mod:`.program` (lumps, the instruction arrays),
:mod:`.rules` (the instruction set, and :mod:`.instructions`, each instruction's value and partials written from
the operation table), :mod:`.lumps` and :mod:`.engine` (the Python and Numba engines), :mod:`.sweeps`,
:mod:`.root_finding` (Newton), and :mod:`.examples` (the paper's programs). It stands apart from the rest of
tensoradbook.
"""

from .registers import cos, exp, log, sin, sqrt, tanh
from .program import Lump, Program, Step, trace
from .sweeps import (MODES, Sweep, Tape, forward_inverse, jacobian, jvp, logdet, partials, reverse_inverse, run, sweep,
                     unlayer, vjp)
from .root_finding import NewtonError, NewtonResult, finite_difference_newton, newton

__all__ = [
    "MODES",
    "Lump",
    "NewtonError",
    "NewtonResult",
    "Program",
    "Step",
    "Sweep",
    "Tape",
    "cos",
    "exp",
    "finite_difference_newton",
    "forward_inverse",
    "jacobian",
    "jvp",
    "log",
    "logdet",
    "newton",
    "partials",
    "reverse_inverse",
    "run",
    "sin",
    "sqrt",
    "sweep",
    "tanh",
    "trace",
    "unlayer",
    "vjp",
]
