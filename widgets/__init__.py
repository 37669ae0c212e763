"""Interactive ipywidgets front-ends to the core algorithms (import as ``tensoradbook.widgets``).

* :class:`SmithStepper` -- Algorithm 1 (Smith normal form) one operation at a time;
* :class:`KernelLattice` -- the solutions ``I beta + K z`` of ``A alpha = beta``
  in the index box, drawn in ``alpha``-space (fig. 3, fig. 4a);
* :class:`PolytopeView` -- ``Sigma(beta)`` in ``z``-space with the
  Fourier-Motzkin loop bounds of eq. 45, step by step (fig. 4b);
* :class:`GraphView` -- the computational graph of a function and its
  reverse sweep, adjoint by adjoint (sec. 2, figs. 1-2);
* :class:`DerivationExplorer` -- Algorithm 4 for one argument: index
  matrices, Smith normal forms, kernels, loop bounds, the derivative and a
  finite-difference check (sec. 5);
* :class:`GradientLab` -- the generated gradient kernels (sec. 6) of a
  function on a chosen target and size, timed and checked against the
  reference evaluator and finite differences, with their source;
* :class:`ProgramGraph` -- a program of several definitions as a graph of
  tensors, and reverse accumulation across it definition by definition
  (sec. 2, eqs. 1-3, at the tensor level). The explorer and the lab take
  programs too.

Naumann, "Matrix-Free Jacobian Chaining" (:mod:`tensoradbook.chaining`):

* :class:`TwoFactorExplorer` -- the eight schedules of ``F_2 o F_1`` (sec. 3);
* :class:`ChainTable` -- the dynamic programming table filled diagonal by
  diagonal, with each cell's candidates (eqs. 3.7-3.8, sec. 5);
* :class:`ScheduleView` -- the chosen schedule as a tree beside the baselines;
* :class:`MemoryBudget` -- fma against the tape bound: the paper's rule
  against the exact optimum (sec. 4).

Pearlmutter & Siskind, "Inverse Accumulation Mode" (:mod:`tensoradbook.inverse`):

* :class:`StepInverse` -- one binary step through its partials a and b: J,
  J^T, J^-1, J^-T, their sparsity and the four flow graphs (Fig. 1), a -> 0;
* :class:`RegisterMachine` -- the program of Fig. 2 swept in each of the four
  modes step by step, with the registers and the tape;
* :class:`NewtonDemo` -- Newton's method with the reverse-inverse sweep
  against a finite-difference Jacobian, with a convergence plot;
* :class:`LumpExplorer` -- a program with temporaries cut into lumps along a
  chosen topological order: live values per cut, the lumps (sec. 3, Fig. 4).

The widgets call :mod:`tensoradbook` for every computation and only draw. ``set_scale(PRESENTATION_SCALE)``
draws every widget made afterwards twice as large (pixels, dpi and fonts together) for a lecture hall. Displayed,
each widget also sends a static picture of what it shows (:mod:`.picture`), which GitHub and the static site show
where there is no kernel.
"""

import importlib

from ._common import PRESENTATION_SCALE, get_scale, set_scale

#: Each widget's module, imported at the widget's first use: a notebook that shows one widget (a student's first
#: cell) pays for that widget's libraries only, not for every chapter's.
WIDGET_MODULES = {"ChainTable": ".chaining", "MemoryBudget": ".chaining", "ScheduleView": ".chaining",
                  "TwoFactorExplorer": ".chaining", "DerivationExplorer": ".explorer", "GradientLab": ".gradient_lab",
                  "GraphView": ".graph", "LumpExplorer": ".inverse", "NewtonDemo": ".inverse",
                  "RegisterMachine": ".inverse", "StepInverse": ".inverse", "KernelLattice": ".lattice",
                  "PolytopeView": ".polytope", "ProgramGraph": ".program_graph", "SmithStepper": ".smith"}

__all__ = [*WIDGET_MODULES, "PRESENTATION_SCALE", "get_scale", "set_scale"]


def __getattr__(name: str):
    if name not in WIDGET_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(WIDGET_MODULES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *WIDGET_MODULES})
