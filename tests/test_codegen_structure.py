"""The code generator decides from the expressions and the spellings, never by reading code it wrote.

A temporary is made where the expression graph says so (an operation the sharing pass found repeated, or code
whose brackets would nest past MAX_NESTING, counted over the expression and each spelling's own brackets); a
value that is a temporary already is known by its type (:class:`~tensoradbook.codegen.kernel_ir.Temp`), not by a
leading underscore; a spelling that reads an operand twice is known from the format string's own parse. These
tests check the counting against the brackets of the text actually written, for every printer, that the patterns
that used to read generated text do not come back, and that planning writes no code: its statements and values
are nodes, spelled by the target when rendered.
"""

import ast
import random
import re
from pathlib import Path

import pytest

import tensoradbook as tab
from tensoradbook.codegen import printer
from tensoradbook.codegen.kernel_ir import Temp
from tensoradbook.codegen.module import function_source, gradients_source
from tensoradbook.codegen.spellings import STYLES, nesting, read_twice
from tensoradbook.codegen.targets import GATHER_TARGETS, KERNEL_TARGETS, TARGETS, Target
from tensoradbook.codegen.thresholds import MAX_NESTING
from tensoradbook.codegen.values import CudaValues, ScalarValues, VectorValues
from corpus import PATTERNS
from differential import FAMILIES, Generator

CODEGEN = Path(tab.__file__).parent / "codegen"


def brackets(text: str) -> int:
    """How deeply brackets nest in ``text``: the oracle the printer's counting is checked against."""
    depth = deepest = 0
    for char in text:
        depth += (char in "([{") - (char in ")]}")
        deepest = max(deepest, depth)
    return deepest


def subjects():
    """The reference patterns, a long chain past MAX_NESTING, and two draws of every differential family."""
    out = [(text, shapes) for text, shapes, _ in PATTERNS]
    terms = " + ".join(f"x[i; j] * {k}.0 - y[j] / {k + 1}.0" for k in range(30))
    out.append((f"f[i; j] = {terms}", {"f": (3, 4), "x": (3, 4), "y": (4,)}))
    generator = Generator(random.Random(43))
    out += [(draw.text, draw.shapes) for draw in (generator.draw(f) for f in FAMILIES for _ in range(2))]
    return out


#: each printer's values as its targets spell them
VALUES = {printer.ScalarPrinter: ScalarValues, printer.CudaPrinter: CudaValues, printer.VectorPrinter: VectorValues,
          printer.BroadcastPrinter: VectorValues}


def code(writer: printer.KernelPrinter, value) -> str:
    """``value`` (lowered by ``writer``) as its target spells it."""
    return VALUES[type(writer)](writer.lanes is not None).text(value)


@pytest.fixture
def written(monkeypatch):
    """Every ``(code, counted nesting, whether a temporary)`` the printers remember for an operation while modules
    are generated."""
    seen = []
    original = printer.KernelPrinter.write

    def write(self, node):
        original(self, node)
        key = self.key(node)
        value = self.scopes[-1].known[key]
        seen.append((code(self, value), self.scopes[-1].nests[key], isinstance(value, Temp)))

    monkeypatch.setattr(printer.KernelPrinter, "write", write)
    return seen


def test_the_counted_nesting_is_the_written_code_s(written):
    """For every printer (numba, with and without lanes, CUDA, numpy grids and views), the nesting counted over the
    expression equals the brackets of the code written for it, a temporary's (a lane's subscript) included."""
    for text, shapes in subjects():
        fn = tab.parse(text, shapes)
        grads = tab.derive(fn)
        for target in GATHER_TARGETS:
            function_source(fn, target)
        for target in TARGETS:
            gradients_source(grads, target)
    assert len(written) > 1000
    assert any(stored for _, _, stored in written)
    wrong = [(text[:120], depth, brackets(text)) for text, depth, _ in written if depth != brackets(text)]
    assert not wrong, wrong[:5]
    assert max(depth for _, depth, _ in written) <= MAX_NESTING.value


@pytest.mark.parametrize("printer_class", [printer.ScalarPrinter, printer.CudaPrinter, printer.VectorPrinter])
def test_a_condition_deeper_than_its_branches(printer_class):
    """A condition with a modulus nests deeper than its branches: numpy's masks write it inside the select's
    brackets, the other printers as a branch of their own."""
    fn = tab.parse("f[i] = if {(i + 1) % 3 = 0} then (2) else (1)", {"f": (12,)})
    writer = printer_class(fn.shapes, {"f", "i"})
    body = fn.body
    written = code(writer, writer.value(body))
    assert writer.nested(body) == brackets(written)


def open_at(text: str, position: int) -> int:
    """The brackets open at ``position`` of ``text``."""
    before = text[:position]
    return sum(before.count(c) for c in "([{") - sum(before.count(c) for c in ")]}")


@pytest.mark.parametrize("style", STYLES)
def test_each_spelling_s_brackets_and_repeated_operands(style):
    """Every spelling's own brackets, those around each operand (at its deepest place), and whether it reads one
    twice, as its parse gives them, against the spelling filled with markers."""
    for op, template in STYLES[style].items():
        own, around = nesting(template)
        filled = template.format(*(f"<{k}>" for k in range(len(around))))
        assert own == brackets(filled), (op, template)
        for k, depth in around.items():
            places = [m.start() for m in re.finditer(f"<{k}>", filled)]
            assert depth == max(open_at(filled, place) for place in places), (op, template, k)
        assert read_twice(template) == any(filled.count(f"<{k}>") > 1 for k in around), (op, template)


# What read generated code to decide: bracket counting, underscores and identifiers as "a temporary already",
# placeholder counting, and declarations found by comparing their text; and what wrote code while planning: the
# printer's indented lines, a row of lanes rendering its own loop, a printed body or a stored value as text.
READING_CODE = (r"def _nesting\b", r"\.isidentifier\(\)", r"text\.startswith\(", r'\.count\("\{0\}"\)',
                r"not in self\.declarations", r"\.index\(indices\[", r"self\.line\(", r"\.loop\(\)",
                r"\bPrinted\b", r"\bStored\b", r"def affine\(self")


def test_no_decision_reads_generated_code():
    found = [f"{path.name}:{number}: {line.strip()}"
             for path in sorted(CODEGEN.glob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if any(re.search(pattern, line) for pattern in READING_CODE)]
    assert not found, "\n".join(found)


def test_planning_writes_no_code():
    """The planner, the printer and the sharing pass build no spelled statement (Line, Block) and fill no spelling:
    their kernels' statements and values are nodes, which only the renderer, the targets and the values tables
    spell."""
    for name in ("module.py", "printer.py", "sharing.py"):
        tree = ast.parse((CODEGEN / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                assert called not in ("Line", "Block", "format"), (name, ast.unparse(node))


def test_every_target_answers_every_question():
    """The base class defines every method the renderer and the planner call; a gather target refuses the scatter
    ones with a message naming it, a scatter target spells both."""
    for name, target in KERNEL_TARGETS.items():
        if target.scatters_gradients:
            assert type(target).scatter_loop is not Target.scatter_loop
            assert "+=" in target.accumulate("g", "g[i]", ["i"], "v") or "atomic" in target.accumulate(
                "g", "g[i]", ["i"], "v")
        else:
            with pytest.raises(NotImplementedError, match=name):
                target.accumulate("g", "g[i]", ["i"], "v")
