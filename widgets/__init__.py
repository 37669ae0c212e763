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
  reference evaluator and finite differences, with their source.

The widgets call :mod:`tensoradbook` for every computation and only draw.
"""

from .explorer import DerivationExplorer
from .gradient_lab import GradientLab
from .graph import GraphView
from .lattice import KernelLattice
from .polytope import PolytopeView
from .smith import SmithStepper

__all__ = ["DerivationExplorer", "GradientLab", "GraphView", "KernelLattice", "PolytopeView", "SmithStepper"]
