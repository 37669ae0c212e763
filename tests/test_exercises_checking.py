"""The steps every chapter's checks share (tensoradbook.exercises.checking): the verdicts they give, the callable
test, the cap on problems listed, the comparison of numbers; and that the chapters use them rather than each
other's private names."""

import ast
from pathlib import Path

import numpy as np
import pytest

from tensoradbook.exercises import checking
from tensoradbook.exercises.feedback import CheckResult

EXERCISES = Path(checking.__file__).parent


def test_pending_says_no_answer_yet_with_the_hint():
    result = checking.pending("Bezout triple", "Your answer is a triple (g, x, y).")
    assert isinstance(result, CheckResult) and not result and result.pending
    assert str(result) == ("Bezout triple: no answer yet -- replace None by your answer and run the cell again.\n"
                           "  Your answer is a triple (g, x, y).")


def test_verdict_is_right_without_problems_and_shows_the_note_only_then():
    right = checking.verdict("x", [], note="All points visited.")
    assert right.ok and right.note == "All points visited." and right.problems == []
    wrong = checking.verdict("x", ["g = 0 is not a common divisor"], note="All points visited.")
    assert not wrong.ok and wrong.note == "" and wrong.problems == ["g = 0 is not a common divisor"]


def test_a_wrong_answer_stops_the_check_with_its_one_problem():
    with pytest.raises(checking.Wrong) as caught:
        checking.require_callable(3, "your function reads(fn) (its name, without calling it)")
    result = caught.value.result("reads(fn)")
    assert not result.ok and result.problems == [
        "the answer must be your function reads(fn) (its name, without calling it), got int"]
    checking.require_callable(len, "a function")  # a function passes


def test_an_answer_from_across_the_wire_is_named_by_its_type():
    class StandIn:
        type_name = "generator"
    assert checking.type_name(StandIn()) == "generator" and checking.type_name(2.0) == "float"


def test_problems_keep_the_first_few():
    problems = checking.Problems()
    for k in range(2 * checking.MAX_PROBLEMS):
        problems.add(f"problem {k}")
    assert problems.full and problems == [f"problem {k}" for k in range(checking.MAX_PROBLEMS)]


def test_close_scales_the_absolute_tolerance_with_the_values():
    right = np.array([1e-8, 2e-8])
    assert checking.close(right * (1 + 1e-9), right).all()
    assert checking.close(right * 1.001, right).all()                 # within ATOL of the floor 1
    assert not checking.close(right * 1.001, right, floor=0.0).any()  # relative to the values alone
    assert checking.close(np.array([1e6 + 1e-4]), np.array([1e6])).all()


def _private_imports(path: Path) -> list[str]:
    """``name from module`` for each underscore name a module of the exercises imports from another of them."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found += [f"{alias.name} from .{node.module}" for alias in node.names if alias.name.startswith("_")]
    return found


@pytest.mark.parametrize("path", sorted(EXERCISES.glob("*.py")), ids=lambda p: p.name)
def test_no_module_imports_anothers_private_names(path):
    assert not _private_imports(path), f"{path.name} imports {_private_imports(path)}"


@pytest.mark.parametrize("path", sorted(EXERCISES.glob("ch[0-9]*.py")), ids=lambda p: p.name)
def test_every_chapter_checks_with_the_shared_steps(path):
    """Each chapter takes its verdicts' steps from checking.py and keeps no copy of them."""
    text = path.read_text()
    assert "from .checking import" in text
    assert "pending=True" not in text and "class Wrong" not in text
