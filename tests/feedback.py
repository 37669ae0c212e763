"""What the exercise tests read of a check's result: its messages, and whether its feedback hides the answer."""

import re

import numpy as np


def messages(result) -> str:
    return "\n".join(result.problems)


def feedback(result) -> str:
    """What the student reads below the title: the problems and the note."""
    return "\n".join(result.problems + [result.note])


def hides(result, *expected) -> bool:
    """``result`` is a wrong answer's verdict and none of ``expected`` appears in its feedback (integers as
    whole numbers, floats in the %.6g form the checks print, anything else as text)."""
    assert not result.ok and not result.pending, str(result)
    text = feedback(result)
    assert result.problems, "a wrong answer must say what is wrong"
    for value in expected:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            pattern = rf"(?<![\w.]){int(value)}(?![\w.])"
        elif isinstance(value, (float, np.floating)):
            pattern = rf"(?<![\w.]){re.escape(f'{float(value):.6g}')}(?!\.?\d|\w)"
        else:
            pattern = re.escape(str(value))
        assert not re.search(pattern, text), f"feedback gives away {value!r}:\n{text}"
    return True
