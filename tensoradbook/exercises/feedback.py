"""The verdict on an exercise answer: :class:`CheckResult`, which says what is right and, where the answer is
wrong, what is wrong and a hint, never the expected value itself (an instructor sees it with
``result.expected``, where a check offers one); and the shared wording of element-wise verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class CheckResult:
    """The verdict on one answer: ``ok``, and the problems found when it is not.

    ``bool(result)`` is ``result.ok``; ``pending`` marks the placeholder answer
    ``None``. Printing it (or leaving it as a cell's last expression) gives
    the verdict in words.
    """

    exercise: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    pending: bool = False
    note: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.pending:
            head = f"{self.exercise}: no answer yet -- replace None by your answer and run the cell again."
        elif self.ok:
            head = f"{self.exercise}: right!"
        else:
            head = f"{self.exercise}: not right yet."
        lines = [head] + [f"  - {p}" for p in self.problems]
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)

    __repr__ = __str__


def index_text(index) -> str:
    """An element's index as the notation writes it, ``[2; 0]``."""
    return "[" + "; ".join(str(int(v)) for v in index) + "]"


def number_text(value: float) -> str:
    """A number in feedback: six significant digits."""
    return f"{value:.6g}"


def element_problems(label: str, yours, right, close, zero_atol: float, why_zero, missing: str,
                      ratio_rtol: float = 1e-6, hint: str | None = None) -> list[str]:
    """What is wrong with the tensor ``yours`` where it is not ``close`` to ``right``, the most telling
    first: an element that must be 0 (``why_zero(index)`` says why, ``missing`` what is missing), one that
    is wrongly 0, a constant factor, or else the first wrong element; then how many differ. With a ``hint``
    no right value is shown (where the answer itself is a tensor's values): the last case says the hint."""
    wrong = [tuple(int(v) for v in idx) for idx in np.argwhere(~close)] if np.ndim(right) else [()]
    zero_should = [b for b in wrong if abs(right[b]) <= zero_atol]
    zero_yours = [b for b in wrong if abs(yours[b]) <= zero_atol and b not in zero_should]
    nonzero = np.abs(right) > zero_atol
    ratio = np.asarray(yours)[nonzero] / np.asarray(right)[nonzero]
    if zero_should:
        b = zero_should[0]
        problems = [f"{label}{index_text(b)} must be 0 ({why_zero(b)}), yours is {number_text(yours[b])}: {missing}"]
    elif zero_yours:
        b = zero_yours[0]
        right_value = "not 0" if hint else number_text(right[b])
        problems = [f"yours gives 0 at {label}{index_text(b)}, but the right value is {right_value}: "
                    f"are your sum ranges or conditions too narrow?"]
    elif ratio.size and np.all(np.isfinite(ratio)) and np.allclose(ratio, ratio[0], rtol=ratio_rtol):
        problems = [f"every element is {number_text(ratio[0])} times the right value: a constant factor "
                    f"(or the sign) is off"]
    else:
        b = wrong[0]
        problems = [f"{label}{index_text(b)} is not right (on random inputs; yours is {number_text(yours[b])}): {hint}"
                    if hint else f"{label}{index_text(b)} is {number_text(yours[b])} but should be "
                    f"{number_text(right[b])} (on random inputs)"]
    if len(wrong) > 1:
        problems.append(f"{len(wrong)} of {max(1, np.size(right))} elements differ")
    return problems
