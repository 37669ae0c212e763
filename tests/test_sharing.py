"""Common subexpressions as a pass of their own (tensoradbook.codegen.sharing), and the kernel printer reading it:
what occurs twice is computed once, sums equal but for their index's name are one, and a lane-gated sum's lanes
hold inside its loop only."""

from __future__ import annotations

from tensoradbook.codegen.kernel_ir import Declare, Statements
from tensoradbook.codegen.printer import Lanes, ScalarPrinter
from tensoradbook.codegen.render import Renderer
from tensoradbook.codegen.targets import KERNEL_TARGETS
from tensoradbook.codegen.values import ScalarValues
from tensoradbook.codegen.sharing import Sharing, SubexpressionKeys, shared
from tensoradbook.lang.expr import Affine, Binary, Element, Number, Sum, Unary
from tensoradbook.lang.parser import parse


def body(text, shapes):
    return parse(text, shapes).body


def test_equal_subtrees_have_one_key_and_sums_equal_up_to_their_index_too():
    keys = SubexpressionKeys()
    x = Element("x", (Affine.index("i"),))
    assert keys(Unary("exp", x)) == keys(Unary("exp", Element("x", (Affine.index("i"),))))
    assert keys(Unary("exp", x)) != keys(Unary("log", x))
    zero, four = (Affine.constant_value(0),), (Affine.constant_value(4),)
    over_k = Sum("k", zero, four, Element("y", (Affine.index("k"),)))
    over_s = Sum("s", zero, four, Element("y", (Affine.index("s"),)))
    assert keys(over_k) == keys(over_s)


def test_an_operation_occurring_twice_is_repeated_and_one_occurring_once_is_not():
    root = body("f[i] = exp (x[i]) * exp (x[i]) + log (x[i])", {"f": (3,), "x": (3,)})
    sharing = shared(root)
    exp = Unary("exp", Element("x", (Affine.index("i"),)))
    assert sharing.is_repeated(exp)
    assert not sharing.is_repeated(Unary("log", Element("x", (Affine.index("i"),))))


def test_a_node_object_reached_along_two_paths_counts_twice():
    x = Element("x", ())
    twice = Binary("+", x, Number(1))
    root = Binary("*", twice, twice)
    assert shared(root).is_repeated(twice)
    assert not shared(Binary("*", twice, x)).is_repeated(twice)


def test_sharing_accumulates_over_roots_and_keeps_its_keys():
    x = Element("x", ())
    first = shared(Binary("*", Unary("exp", x), Unary("exp", x)))
    both = shared(Binary("*", Unary("sin", x), Unary("sin", x)), first)
    assert both.keys is first.keys
    assert both.is_repeated(Unary("exp", x)) and both.is_repeated(Unary("sin", x))
    assert Sharing().repeated == frozenset()


def test_the_printer_computes_a_repeated_operation_once():
    fn = parse("f[i] = exp (x[i]) * exp (x[i])", {"f": (3,), "x": (3,)})
    printer = ScalarPrinter(fn.shapes, {"f", "x", "i"})
    printer.share(fn.body)
    value = printer.value(fn.body)
    assert sum("math.exp" in line for line in Renderer(KERNEL_TARGETS["numba"]).lines(printer.statements)) == 1
    assert ScalarValues().text(value) == "(_t1 * _t1)"


def test_a_lane_gated_sums_lanes_hold_inside_its_loop_only():
    """Inside the loop over q, the lanes j where the term is inside x; after it, the whole row again."""
    fn = parse("f[n; j] = sum{q}_(max [0; 1 - j])^(min [2; 5 - j]) (exp (x[n; j + q - 1])) + exp (x[n; j])",
               {"f": (2, 5), "x": (2, 5)})
    row = Lanes("j", 5, extent=5)
    printer = ScalarPrinter(fn.shapes, {"f", "x", "n", "j", "q"}, lane=row)
    printer.active |= {"n", "j"}
    printer.share(fn.body)
    printer.value(fn.body)
    assert printer.lanes == row and len(printer.scopes) == 1
    rendered = Renderer(KERNEL_TARGETS["numba"]).lines([Statements(tuple(printer.statements), lanes=True)])
    assert rendered == ["_s1[:] = 0.0",
                        "for q in range(max(0, -3), min(2, 5) + 1):",
                        "    for j in range(max(0, -q + 1), min(5, -q + 5 + 1)):",
                        "        _s1[j] += math.exp(x[n, j + q - 1])"]
    assert printer.declarations == [Declare("_s1", 5)]
