"""The steps every chapter's checks share: the tolerances of numeric answers, "no answer yet" for the notebooks'
placeholder ``None``, the wrong-answer type that stops a check at its first problem, the test that an answer
which must be a function is one, and the verdict from the problems found (at most :data:`MAX_PROBLEMS` of them
where a check lists one per element, row or point).

A check reads as::

    name = "Bezout triple for a = 4, b = 6"
    if answer is None:
        return pending(name, "Your answer is a triple (g, x, y).")
    try:
        g, x, y = read_int_triple(answer, "g, x, y")     # raises Wrong with what is wrong
    except Wrong as err:
        return err.result(name)
    problems = [...]                                     # each thing that is wrong, the most telling first
    return verdict(name, problems)
"""

from __future__ import annotations

import numpy as np

from .feedback import CheckResult

# Numeric answers pass within these of the core's value (relative, absolute): loose enough for an answer
# computed in another order of operations, or printed and pasted back, tight enough to tell a wrong term.
RTOL, ATOL = 1e-6, 1e-9

def close(yours, right, floor: float = 1.0) -> np.ndarray:
    """Where ``yours`` equals ``right`` within :data:`RTOL`, and :data:`ATOL` times the largest element of ``right``
    (at least ``floor``; a ``floor`` near 0 for values that are all tiny, where an absolute tolerance would pass
    anything)."""
    scale = max(floor, float(np.abs(right).max(initial=0)), np.finfo(float).tiny)
    return np.isclose(yours, right, rtol=RTOL, atol=ATOL * scale)


#: The most problems a check lists one by one (the first, most telling, ones): more bury the first, and a long list
#: of what is wrong where begins to map out the right answer.
MAX_PROBLEMS = 3


class Wrong(Exception):
    """Raised inside a check to stop at a problem that makes later tests meaningless; its text is the problem."""

    def result(self, exercise: str) -> CheckResult:
        """The verdict "not right yet" on ``exercise``, with this one problem."""
        return CheckResult(exercise, False, [str(self)])


def pending(exercise: str, hint: str = "") -> CheckResult:
    """The verdict on the placeholder answer ``None``: no answer yet, and ``hint`` on what the answer is."""
    return CheckResult(exercise, False, pending=True, note=hint)


def verdict(exercise: str, problems: list[str], note: str = "") -> CheckResult:
    """Right when nothing is wrong (then with ``note``), else the ``problems``."""
    if problems:
        return CheckResult(exercise, False, list(problems))
    return CheckResult(exercise, True, note=note)


def type_name(value) -> str:
    """The name of ``value``'s type, as the feedback says it; an answer that could not cross the grader's wire
    arrives as a stand-in that knows its type."""
    return getattr(value, "type_name", type(value).__name__)


def require_callable(answer, what: str) -> None:
    """A Wrong unless ``answer`` can be called: "the answer must be ``what``, got <its type>"."""
    if not callable(answer):
        raise Wrong(f"the answer must be {what}, got {type_name(answer)}")


class Problems(list):
    """The problems found one per element, row or point, up to :data:`MAX_PROBLEMS`; ``full`` once there are
    that many (a check may stop looking)."""

    def add(self, problem: str) -> None:
        if not self.full:
            self.append(problem)

    @property
    def full(self) -> bool:
        return len(self) >= MAX_PROBLEMS


__all__ = ["ATOL", "MAX_PROBLEMS", "RTOL", "Problems", "Wrong", "close", "pending", "require_callable",
           "type_name", "verdict"]
