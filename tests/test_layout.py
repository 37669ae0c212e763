"""The package's layout: imports go one way, with no cycles, and no module grows past a reader's patience.

The core is layered (docs/developer.md, "How the code is laid out"): ``integer <- lang <- ad <- codegen``; the two
papers' packages, ``inverse`` and ``chaining``, stand apart; ``exercises`` sits on top of the core and
the widgets on top of everything. The optional framework modules ``torch`` and ``jax`` (and ``bridge``,
what they share) sit on the core too, and no other part imports them. Every import statement counts, at
module level and inside functions alike, except the documented facades that let a user write
``fn.compile("numba")``. That the core never imports Jupyter, drawing or the widgets, and the framework
modules alone import PyTorch and JAX, is tests/test_packaging.py's concern.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "tensoradbook"
WIDGETS = ROOT / "widgets"

# What each part may import besides itself. The numpy-only leaves integer.matrix and
# ad.finite_differences serve the papers' packages, which otherwise share nothing with the core; so does the
# kernel cache (the standard library and Numba), whose package_jit caches their own compiled functions.
LEAVES = {"tensoradbook.integer.matrix", "tensoradbook.ad.finite_differences", "tensoradbook.codegen.cache"}
ALLOWED = {
    "integer": {"integer"},
    "lang": {"integer", "lang"},
    "ad": {"integer", "lang", "ad"},
    "codegen": {"integer", "lang", "ad", "codegen"},
    "inverse": {"inverse"},
    "chaining": {"chaining"},
    "exercises": {"integer", "lang", "ad", "codegen", "inverse", "chaining", "exercises"},
    "widgets": {"integer", "lang", "ad", "codegen", "inverse", "chaining", "exercises", "widgets", ""},
    # The optional framework modules (tensoradbook.torch, tensoradbook.jax) import PyTorch / JAX when
    # imported, so like `exercises` they sit on top of the core, reading lang, ad and codegen (and
    # tab.derive from the root, which dispatches on a Function or a Program), and nothing of ours
    # imports them: not the root (`import tensoradbook` must work without the models extra), not the
    # widgets. `bridge` is their shared, framework-free half.
    "bridge": {"integer", "lang", "ad", "codegen", ""},
    "torch": {"integer", "lang", "ad", "codegen", "bridge", ""},
    "jax": {"integer", "lang", "ad", "codegen", "bridge", ""},
    "": {"integer", "lang", "ad", "codegen", "inverse", "chaining", "exercises", ""},  # the package root
}
# (importing module, imported module): the upward imports inside methods that are documented facades.
FACADES = {
    ("tensoradbook.lang.function", "tensoradbook.codegen"),  # Function.compile, Function.kernel_source
    ("tensoradbook.ad.derive", "tensoradbook.codegen"),  # Gradients.compile, Gradients.source
    ("tensoradbook.lang.program", "tensoradbook.codegen"),  # Program.compile, Program.kernel_source
    ("tensoradbook.ad.program", "tensoradbook.codegen"),  # ProgramGradients.compile, ProgramGradients.source
}
MAX_LINES = 800


def module_name(path: Path) -> str:
    if path.is_relative_to(WIDGETS):
        parts = ["tensoradbook", "widgets", *path.relative_to(WIDGETS).with_suffix("").parts]
    else:
        parts = ["tensoradbook", *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> list[Path]:
    return sorted(p for p in [*CORE.rglob("*.py"), *WIDGETS.rglob("*.py")] if "__pycache__" not in p.parts)


MODULES = {module_name(p): p for p in sources()}


def resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a module or a name inside one) is, or None for another package."""
    while name and name.startswith("tensoradbook"):
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(module: str) -> list[tuple[str, int, bool]]:
    """``(imported module of ours, line, at module level)`` for every import statement in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    # imports for type annotations only (if TYPE_CHECKING:) never run
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                   for stmt in block.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # "from pkg import sub" imports the submodule pkg.sub where there is one, else a name of pkg
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            ours = resolve(target)
            if ours is not None and ours != module:
                found.append((ours, node.lineno, id(node) in top_level))
    return found


def part(module: str) -> str:
    """The layer or package a module belongs to: 'lang', 'inverse', 'widgets', or '' for the root."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 and (pieces[1] in ALLOWED) else ""


def test_imports_go_one_way():
    wrong = []
    for module in MODULES:
        for target, line, _ in imports(module):
            if target in LEAVES or (module, target) in FACADES or module.startswith("tensoradbook.__main__"):
                continue
            if part(target) not in ALLOWED[part(module)]:
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_there_are_no_import_cycles():
    graph = {m: {t for t, _, _ in imports(m) if (m, t) not in FACADES} for m in MODULES}
    # A package's __init__ re-exporting its own modules is not a cycle of meaning: a module of the
    # package importing a sibling goes through the package only by name.
    for m in graph:
        graph[m] = {t for t in graph[m] if not (MODULES[t].name == "__init__.py" and m.startswith(t + "."))}
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_readable(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(ROOT)} has {lines} lines; split it (at most {MAX_LINES})"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_says_what_it_is_for(module):
    tree = ast.parse(MODULES[module].read_text())
    docstring = ast.get_docstring(tree)
    if MODULES[module].name == "__init__.py" and not tree.body:
        pytest.skip("an empty package marker")
    assert docstring and len(docstring.split()) >= 5, f"{MODULES[module].relative_to(ROOT)} needs a docstring"


def test_the_layout_test_sees_the_layers():
    """The checks above are only as good as the import reading: a known upward import must be seen."""
    assert ("tensoradbook.codegen", False) in {(t, top) for t, _, top in imports("tensoradbook.lang.function")}
    assert any(t == "tensoradbook.lang.expr" for t, _, _ in imports("tensoradbook.ad.derive"))


def test_the_framework_modules_are_layers_of_their_own():
    """tensoradbook.torch and tensoradbook.jax are seen as the parts ``torch`` and ``jax`` (not the root, which
    may import anything of the core), and read what they share from ``bridge``."""
    for name in ("torch", "jax"):
        assert part(f"tensoradbook.{name}") == name
        assert "tensoradbook.bridge" in {t for t, _, _ in imports(f"tensoradbook.{name}")}
    assert part("tensoradbook.bridge") == "bridge"
