"""What a function's gradients (:class:`~tensoradbook.ad.derive.Gradients`) and a program's
(:class:`~tensoradbook.ad.program.ProgramGradients`) share: a mapping from each argument to the element-wise
function of its gradient, printed as every tensor of the backward pass in order."""

from __future__ import annotations

from collections.abc import Mapping

from ..lang.function import Function


class GradientMap(Mapping):
    """The gradients as a mapping, input name -> the Function of its gradient (``self.functions``), printed
    as every tensor of the backward pass (``self.backward``) in order."""

    functions: dict
    backward: tuple

    def __getitem__(self, name: str) -> Function:
        return self.functions[name]

    def __iter__(self):
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def __str__(self) -> str:
        return "\n".join(str(tensor) for tensor in self.backward)

    def _repr_latex_(self) -> str:
        return "$$" + r" \\ ".join(tensor._repr_latex_().strip("$") for tensor in self.backward) + "$$"
