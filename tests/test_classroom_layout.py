"""classroom/'s layout: modules a newcomer can find.

* Every module says what it is for and stays under 800 lines, as the package's do (tests/test_layout.py).
* A module imports the classroom's other modules at its top, where a reader sees what it builds on (or says why
  not, in a comment on the line before), and they import one another without a cycle.
* What several modules share is defined once, in classroom/paths.py: the repository's root, the widget MIME types.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLASSROOM = ROOT / "classroom"
MODULES = {p.stem: p for p in sorted(CLASSROOM.glob("*.py"))}
MAX_LINES = 800


def _classroom_imports(tree: ast.Module) -> list[tuple[str, ast.stmt]]:
    """The classroom modules a module imports, each with its import statement."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "classroom" if node.level == 1 else node.module or ""
            if node.level == 1 and node.module:
                found.append((node.module, node))
            elif base == "classroom":
                found += [(alias.name, node) for alias in node.names if alias.name in MODULES]
            elif base.startswith("classroom."):
                found.append((base.split(".")[1], node))
        elif isinstance(node, ast.Import):
            found += [(alias.name.split(".")[1], node) for alias in node.names if alias.name.startswith("classroom.")]
    return found


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_say_what_they_are_for_and_stay_readable(name):
    text = MODULES[name].read_text()
    assert len(text.splitlines()) <= MAX_LINES, f"classroom/{name}.py has more than {MAX_LINES} lines: split it"
    assert ast.get_docstring(ast.parse(text)), f"classroom/{name}.py says nowhere what it is for"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_classroom_is_imported_at_the_top(name):
    text = MODULES[name].read_text()
    tree, lines = ast.parse(text), text.splitlines()
    top = {id(node) for node in tree.body}
    inside = [f"line {node.lineno}: {module}" for module, node in _classroom_imports(tree)
              if id(node) not in top and not lines[node.lineno - 2].strip().startswith("#")]
    assert not inside, f"classroom/{name}.py imports classroom modules inside functions, with no comment saying why " \
                       f"on the line before: {inside}"


def test_no_import_cycles():
    graph = {name: {m for m, _ in _classroom_imports(ast.parse(path.read_text()))} - {name}
             for name, path in MODULES.items()}
    done, path = set(), []

    def visit(name):
        assert name not in path, f"import cycle: {' -> '.join(path[path.index(name):] + [name])}"
        if name in done:
            return
        path.append(name)
        for other in sorted(graph[name]):
            visit(other)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_shared_names_are_defined_once():
    for name, path in MODULES.items():
        if name == "paths":
            continue
        text = path.read_text()
        assert "Path(__file__).resolve().parent.parent" not in text, f"classroom/{name}.py finds the root itself"
        assert "application/vnd.jupyter.widget" not in text, f"classroom/{name}.py spells a widget MIME type"
