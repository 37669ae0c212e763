"""The exercise files, ``course/exercises/<chapter>.py`` (classroom/assignments.py): the one home of each exercise's
solution, tests and points.

* They use the library's public API only: ``tensoradbook`` and its subpackages, and of each the names its
  ``__all__`` exports; nothing private, no module below a subpackage.
* They are files, not modules: outside every package, never compiled, inside what the class server locks away, and
  ruff lints them.
* The reader's cells: a stub with nbgrader's solution region, an exercise the assignment alone sets, a note, hidden
  tests; a wrong header or a test without its check call names the file and line.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from classroom import assignments, hub, paths, source

REPO = Path(__file__).resolve().parents[1]
FILES = sorted(paths.EXERCISES.glob("*.py"))


def _public_modules() -> set[str]:
    """``tensoradbook`` and each subpackage that states its public names (``__all__``)."""
    package = REPO / "tensoradbook"
    found = {"tensoradbook"}
    for init in package.glob("*/__init__.py"):
        if not init.parent.name.startswith("_") and "__all__" in init.read_text():
            found.add(f"tensoradbook.{init.parent.name}")
    return found


PUBLIC = _public_modules()


def _exported(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


def _resolve(module: str, name: str, where: str) -> str | None:
    """``module.name`` checked: the public module it names, or None for a public name; a failure otherwise."""
    if f"{module}.{name}" in PUBLIC:
        return f"{module}.{name}"
    assert name in _exported(module), f"{where}: {module}.{name} is not in the public API ({module}.__all__)"
    return None


def _modules_bound(tree: ast.Module, where: str) -> dict[str, str]:
    """The names a file binds to public modules of tensoradbook, each import checked."""
    bound = {}
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tensoradbook":
                    assert alias.name in PUBLIC, f"{line}: import {alias.name}: not a public module"
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tensoradbook":
            assert node.module in PUBLIC, f"{line}: from {node.module}: not a public module"
            for alias in node.names:
                module = _resolve(node.module, alias.name, line)
                if module:
                    bound[alias.asname or alias.name] = module
    return bound


def _attribute_path(node: ast.Attribute) -> list[str] | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    return [node.id, *reversed(names)] if isinstance(node, ast.Name) else None


def _check_public(text: str, where: str) -> None:
    """Every import of tensoradbook and every attribute read through one is of the public API."""
    tree = ast.parse(text)
    bound = _modules_bound(tree, where)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        chain = _attribute_path(node) if isinstance(node, ast.Attribute) and id(node) not in inner else None
        module = bound.get(chain[0]) if chain else None
        for name in chain[1:] if module else ():
            module = _resolve(module, name, f"{where}:{node.lineno}")
            if module is None:
                break


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_solutions_use_only_the_public_api(path):
    _check_public(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))


@pytest.mark.parametrize(("text", "said"), [
    ("from tensoradbook.lang.simplify import ZERO", "from tensoradbook.lang.simplify: not a public module"),
    ("import tensoradbook.ad.reverse", "import tensoradbook.ad.reverse: not a public module"),
    ("from tensoradbook.lang import _fold", r"tensoradbook.lang._fold is not in the public API"),
    ("import tensoradbook as tab\ntab.ad.gradcheck.random_arguments(f, rng)", "tensoradbook.ad.gradcheck is not"),
    ("from tensoradbook import inverse as ia\nia.engine.run", "tensoradbook.inverse.engine is not"),
])
def test_the_public_api_check_refuses_internals(text, said):
    with pytest.raises(AssertionError, match=said):
        _check_public(text, "file")


def test_the_files_are_no_modules_and_stay_with_the_instructors():
    assert FILES and len(FILES) == len(assignments.ASSIGNMENTS)
    for folder in (paths.EXERCISES, paths.COURSE):
        assert not (folder / "__init__.py").exists(), f"{folder} is no package"
    assert not list(paths.EXERCISES.rglob("*.pyc")), "read as text, never compiled"
    assert not any(f.stem.isidentifier() for f in FILES), "a chapter's file name is no module name"
    locked = [REPO / name for name in hub.SOLUTIONS]
    assert any(paths.EXERCISES.is_relative_to(folder) for folder in locked), "the class server locks them away"


def test_ruff_lints_them():
    listed = subprocess.run([sys.executable, "-m", "ruff", "check", "--show-files", str(paths.EXERCISES)],
                            cwd=REPO, capture_output=True, text=True).stdout
    assert all(str(f) in listed for f in FILES), listed


GOOD = '''"""Chapter 99: a test

More words.
"""

# %% setup
from tensoradbook.exercises import check_bezout, check_vec_index


# %% answer 1
answer_1 = (23, -3, 4)


# %% test 1 points=2
check_bezout(391, 299, answer_1)


# %% text 2
# **Exercise 2 (programming).** Write `vec_index`.


# %% note 2
# Hidden tests try
# more shapes.


# %% answer 2
def vec_index(shape, index):
    return 0


# %% test 2
assert callable(vec_index), "no answer yet"
check_vec_index((2, 3), (0, 0), vec_index)


# %% hidden 2
assert check_vec_index((5,), (0,), vec_index)


# %% answer 3b
answer_3b = None  # a hint
### BEGIN SOLUTION
answer_3b = (1, 1, 0)
### END SOLUTION


# %% test 3b
check_bezout(1, 1, answer_3b)
'''


def test_the_reader_reads_every_kind_of_cell(tmp_path):
    path = tmp_path / "99_test.py"
    path.write_text(GOOD)
    assignment = assignments.read(path)
    assert (assignment.stem, assignment.title, assignment.points) == ("99_test", "Chapter 99: a test", 4)
    one, two, three = assignment.exercises
    assert one.parts[0].answer == "answer_1" and one.parts[0].call == "check_bezout(391, 299, answer_1)"
    assert one.parts[0].call_on("None") == "check_bezout(391, 299, None)"
    assert two.text == "**Exercise 2 (programming).** Write `vec_index`."
    assert two.extra == "Hidden tests try more shapes."
    part = two.parts[0]
    assert (part.answer, part.prelude, part.hidden) == ("vec_index", 'assert callable(vec_index), "no answer yet"',
                                                         "assert check_vec_index((5,), (0,), vec_index)")
    assert "def vec_index(shape, index):  # noqa: F811" in source.answer_source(part)
    assert source.test_source(part).splitlines()[:2] == [
        'assert callable(vec_index), "no answer yet"', "result = check_vec_index((2, 3), (0, 0), vec_index)"]
    part = three.parts[0]
    assert (three.number, part.label, part.stub, part.solution) == (3, "b", "answer_3b = None  # a hint",
                                                                     "answer_3b = (1, 1, 0)")
    assert source.answer_source(part) == "answer_3b = None  # a hint\n### BEGIN SOLUTION\nanswer_3b = (1, 1, 0)\n" \
                                         "### END SOLUTION"


@pytest.mark.parametrize(("old", "new", "said"), [
    ("# %% test 1 points=2", "# %% tests 1", r"99_test.py:14: '# %% tests 1' is no cell header"),
    ("check_bezout(391, 299, answer_1)\n", "print(answer_1)\n", r"99_test.py:14: a test ends with the check call"),
    ("# %% answer 1\n", "# %% given 1\n", r"exercise 1 needs an answer cell and a test cell"),
    ("check_bezout(391, 299, answer_1)", "check_bezout(391, 299, (1, 2, 3))", "check_bezout's answer is no name"),
])
def test_a_wrong_cell_names_its_file_and_line(tmp_path, old, new, said):
    path = tmp_path / "99_test.py"
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(assignments.AuthoringError, match=said):
        assignments.read(path)
