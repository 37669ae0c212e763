"""What the widgets that take a program of several definitions share: who reads whom, the sweep
of :func:`tensoradbook.derive` over the definitions (report sec. 2, eqs. 1-3, at the tensor level), and the HTML
of its steps. Everything is read off the core's :class:`~tensoradbook.ProgramGradients`; nothing is computed
here."""

from __future__ import annotations

import html
from dataclasses import dataclass

import tensoradbook as tab


def as_program(subject) -> tab.Program:
    """A Program as it is, a single Function as the program of its one definition."""
    if isinstance(subject, tab.Function):
        return tab.Program((subject,), dict(subject.shapes))
    return subject


def formula_html(fn) -> str:
    """A function (or program) in LaTeX, scrolling sideways when it is wider than the page."""
    return f'<div style="overflow-x:auto">{fn._repr_latex_()}</div>'


@dataclass(frozen=True, eq=False)
class Sweep:
    """A program's tensors, who reads whom and the reverse sweep over them.

    ``reads[D]`` are the tensors definition ``D`` reads (its in-edges); ``senders[t]`` the definitions
    that send ``t`` a contribution, in the sweep's order; ``adjoint_names[t]`` the name of ``t``'s adjoint
    in the derivation (none for a tensor the output does not depend on through an input).
    """

    program: tab.Program
    gradients: tab.ProgramGradients
    reads: dict
    senders: dict
    adjoint_names: dict

    @classmethod
    def of(cls, program: tab.Program, grads: tab.ProgramGradients | None = None):
        grads = grads if grads is not None else tab.derive(program)
        reads = {d.name: d.arguments for d in program.definitions}
        senders = {name: tuple(step.definition.name for step in grads.steps if name in step.gradients)
                   for name in (*program.arguments, *reads)}
        adjoint_names = {program.name: grads.adjoint_name} if grads.steps else {}
        adjoint_names |= {name: f.name for name, f in (*grads.adjoints.items(), *grads.functions.items())}
        return cls(program, grads, reads, senders, adjoint_names)

    @property
    def tensors(self) -> tuple[str, ...]:
        """The inputs, then the definitions in order."""
        return (*self.program.arguments, *self.reads)

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """``(tensor, definition)`` for each tensor a definition reads."""
        return tuple((name, d) for d, names in self.reads.items() for name in names)

    def kind(self, name: str) -> str:
        return "input" if name not in self.reads else "output" if name == self.program.name else "intermediate"

    def sum_sentence(self, name: str) -> str:
        """How ``name``'s adjoint (an intermediate's or an input's gradient) is made of its consumers'."""
        adjoint, senders = self.adjoint_names[name], self.senders[name]
        if not senders:
            return f"{adjoint} = 0: no definition the output depends on reads {name}."
        if len(senders) == 1:
            return f"{adjoint} is the contribution of {senders[0]}, the only one {name} receives:"
        return (f"{adjoint} is the sum of the {len(senders)} contributions {name} receives, from "
                f"{', '.join(senders)} (eq. 2):")

    def step_html(self, step) -> str:
        """One step of the sweep: the definition's adjoint, complete now, and what it sends by Algorithm 4."""
        d = step.definition.name
        if d == self.program.name:
            adjoint = f"<p>{step.adjoint} is the seed: given.</p>"
        else:
            adjoint = f"<p>{self.sum_sentence(d)}</p>{formula_html(self.gradients.adjoints[d])}"
        sent = "".join(f"<li>to {name} ({self.kind(name)}), contribution {self.senders[name].index(d) + 1} of "
                       f"{len(self.senders[name])} to {self.adjoint_names[name]}:{formula_html(step.gradients[name])}"
                       "</li>" for name in step.gradients)
        idle = [name for name in dict.fromkeys(self.reads[d]) if name not in step.gradients]
        if idle:
            sent += f"<li>nothing to {', '.join(idle)}: no input reaches the output through it</li>"
        return (f"<p><code>{html.escape(str(step.definition))}</code></p>{adjoint}<p>By Algorithm 4 it sends "
                f"the gradient of Σ {step.adjoint}·{d} to each tensor it reads:</p><ul>{sent}</ul>")
