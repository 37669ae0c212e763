"""Random functions and programs on both sides of every planning threshold, for tests/test_differential.py.

Each :class:`Draw` is a text in the notation with its shapes, drawn from families that reach every speed path of
the code generator (:mod:`tensoradbook.codegen.thresholds`):

* ``banded``: a sum, max or min reduction whose bounds depend on any output index (a prefix sum, a band, a
  window), its body reading that index or not;
* ``gated``: index conditions on the output and sum indices (``i % 2 = 0`` with ``i / 2``, ``i = k``, a border);
* ``selects``: conditions on values (``if {x[i; j] > y[j]}``) and ``max (a, b)`` / ``min (a, b)``;
* ``strided``: reads at ``s * i + d * k + o``, and max / min pooling;
* ``contraction``: matrix products (transposed, batched, scaled), alone or inside a larger body;
* ``convolution``: 1-D and 2-D convolutions with strides, dilations and zero padding written as a gate;
* ``broadcast``: element-wise bodies of ``exp``, ``log``, ``tanh`` ... over plain reads in order;
* ``chain``: long sums of terms, whose generated expressions nest deeply;
* ``program``: two or three definitions, each of a family above, the later reading the earlier.

Sizes are drawn from the thresholds' values (:data:`~tensoradbook.codegen.thresholds.THRESHOLDS`): a last
dimension of ``MIN_LANES - 1`` or ``MIN_LANES``, rows just under or at ``MIN_ROWS``, rows of ``LANE_BLOCK`` lanes
and one more, work just under or above ``PARALLEL_WORK``, ``VECTOR_WORK`` and ``BLAS_WORK``, gathers of either
share. The planners record which side of each threshold every function fell on; the test checks both sides of
every one are reached.

Inputs (:func:`special_inputs`) hold NaN, +-inf, -0.0 and ties among ordinary values.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

import numpy as np

from tensoradbook.codegen.thresholds import (BLAS_WORK, GATHER_SHARE, LANE_BLOCK, MIN_LANES, MIN_ROWS, PARALLEL_WORK,
                                             VECTOR_WORK)

# functions whose domain is every real: their values stay finite for inputs in [-2, 2]
FUNCTIONS = ["exp", "erf", "sign", "tanh", "floor", "sin", "ceil", "abs", "cos", "round", "atan", "sinh", "expm1"]
KINKED = {"abs", "sign", "floor", "ceil", "round"}  # no finite differences across their kinks and jumps
NUMPY_FASTER = ["exp", "tanh", "atan", "sinh", "expm1"]  # a subset of NumbaTarget.numpy_faster


@dataclass(frozen=True)
class Draw:
    """A function or program text, its shapes, its family, and whether its values suit finite differences."""

    family: str
    text: str
    shapes: dict = field(hash=False)
    smooth: bool = True  # no kinks or jumps the random inputs may sit near (max, selects, abs)


def last_dimensions() -> list[int]:
    """Lengths of an output's last dimension on both sides of the lane thresholds."""
    lanes, block = MIN_LANES.value, LANE_BLOCK.value
    return [1, 3, lanes - 1, lanes, lanes + 1, block - 1, block, block + 1]


def rows_for(last: int, side: str) -> int:
    """Rows of an output with ``last`` lanes whose typical work is below (``side`` "small"), just at or above
    PARALLEL_WORK ("large"), or with fewer than MIN_ROWS rows yet above it ("few")."""
    work = PARALLEL_WORK.value
    if side == "small":
        return max(1, min(MIN_ROWS.value + 3, (work // 4) // last))
    if side == "few":
        return max(1, MIN_ROWS.value - 1)
    return max(MIN_ROWS.value, -(-work // last))


class Generator:
    """Draws :class:`Draw` cases from ``rng`` (a :class:`random.Random`)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.turns: dict[str, int] = {}

    def draw(self, family: str) -> Draw:
        self.kinked = False
        draw = getattr(self, family)()
        return replace(draw, smooth=False) if self.kinked else draw

    def side(self, kind: str, sides: list):
        """The next of ``sides`` for ``kind`` in turn, so that a few draws of a family reach every side."""
        turn = self.turns[kind] = self.turns.get(kind, -1) + 1
        return sides[(turn + self.rng.randrange(2)) % len(sides)] if turn >= len(sides) else sides[turn]

    # -- pieces ---------------------------------------------------------------------------------------------
    def function(self, argument: str, pool=FUNCTIONS) -> str:
        name = self.side("function " + pool[0], pool)
        self.kinked = self.kinked or name in KINKED
        return f"{name} ({argument})"

    def combine(self, *terms: str) -> str:
        out = terms[0]
        for term in terms[1:]:
            out = f"{out} {self.rng.choice(['+', '-', '*'])} {term}"
        return out

    def shape_2d(self, work_per_element: int = 1) -> tuple[int, int]:
        last = self.side("last", last_dimensions())
        side = self.side("rows", ["small", "large", "few"])
        rows = rows_for(last, side)
        if side == "large":
            rows = max(MIN_ROWS.value, -(-rows // work_per_element))
        return rows, last

    # -- families -------------------------------------------------------------------------------------------
    def banded(self) -> Draw:
        """A reduction whose bounds depend on an output index, its body reading that index or not."""
        rng = self.rng
        width = rng.choice([2, 4, 8])
        rows, last = self.shape_2d(work_per_element=width)
        op = rng.choice(["sum", "sum", "max", "min"])
        on = rng.choice(["i", "j"])
        extent = rows if on == "i" else last
        kind = rng.choice(["prefix", "suffix", "window", "ceil"])
        if kind == "prefix":
            low, high, size = "0", on, extent
        elif kind == "suffix":
            low, high, size = on, str(extent - 1), extent
        elif kind == "window":
            low, high, size = f"max [0; {on} - {width - 1}]", on, extent
        else:  # upsampling: the k with floor(k / 2) = on
            low, high, size = f"2 * {on}", f"min [2 * {on} + 1; {2 * extent - 1}]", 2 * extent
        reads = ["x[k; j]" if on == "i" else "x[i; k]"]
        shapes = {"f": (rows, last), "x": (size, last) if on == "i" else (rows, size), "y": (rows, last)}
        if rng.random() < 0.5:
            reads.append("y[i; j]")  # the body reads the last index too
        body = self.combine(*reads)
        if rng.random() < 0.5:
            body = self.function(body)
        text = f"f[i; j] = {op}{{k}}_({low})^({high}) ({body})"
        if kind != "ceil" and rng.random() < 0.3:
            text = f"f[i; j] = {op}{{k}}_(ceil({low} / 2))^({high}) ({body})" if kind == "prefix" else text
        return Draw("banded", text, shapes, smooth=op == "sum")

    def gated(self) -> Draw:
        rng = self.rng
        rows, last = self.shape_2d(work_per_element=3)
        choice = rng.choice(["parity", "diagonal", "border"])
        if choice == "parity":
            half = -(-rows // 2)  # x[k] lands on the even rows (a Kronecker delta: the Smith normal form)
            text = (f"f[i; j] = sum{{k}}_0^{half - 1} (if {{i = 2 * k}} then (x[k; j]) else (0)) + "
                    "if {i % 2 = 1} then (y[i; j]) else (0)")
            shapes = {"f": (rows, last), "x": (half, last), "y": (rows, last)}
        elif choice == "diagonal":
            text = "f[i; j] = sum{k}_0^2 (if {j = k + 1} then (x[i; k]) else (y[i; j] * 0.5))"
            shapes = {"f": (rows, last), "x": (rows, 3), "y": (rows, last)}
        else:
            text = (f"f[i; j] = sum{{k}}_0^2 (if {{j + k - 1 >= 0 and {last} - j - k >= 0}} then "
                    f"(x[i; j + k - 1] * w[k]) else (0))")
            shapes = {"f": (rows, last), "x": (rows, last), "w": (3,)}
        return Draw("gated", text, shapes, smooth=True)

    def selects(self) -> Draw:
        rng = self.rng
        rows, last = self.shape_2d()
        choice = rng.choice(["relu", "compare", "max", "min"])
        if choice == "relu":
            text = "f[i; j] = if {x[i; j] > 0} then (x[i; j] * y[j]) else (0)"
        elif choice == "compare":
            text = f"f[i; j] = if {{x[i; j] {rng.choice(['>', '>=', '<', '<='])} y[j]}} then (x[i; j]) else (y[j] * 2)"
        else:
            text = f"f[i; j] = {choice} (x[i; j], y[j]) * {self.function('x[i; j]')}"
        return Draw("selects", text, {"f": (rows, last), "x": (rows, last), "y": (last,)}, smooth=False)

    def strided(self) -> Draw:
        rng = self.rng
        rows, last = self.shape_2d(work_per_element=4)
        stride, window = rng.choice([1, 2, 3]), rng.choice([2, 3])
        if rng.random() < 0.5:  # pooling: its gradient's grid-wide loops (numpy, the reference) grow as rows ** 2
            op = rng.choice(["max", "min"])
            rows = min(rows, 128)
            read = f"x[{stride} * i + p; {stride} * j + q]"
            text = f"f[i; j] = {op}{{p}}_0^{window - 1} ({op}{{q}}_0^{window - 1} ({read}))"
            shapes = {"f": (rows, last), "x": (stride * (rows - 1) + window, stride * (last - 1) + window)}
            return Draw("strided", text, shapes, smooth=False)
        offset = rng.choice([0, 1, 2])
        text = f"f[i; j] = sum{{k}}_0^{window - 1} (x[i; {stride} * j + k + {offset}] * w[k])"
        shapes = {"f": (rows, last), "x": (rows, stride * (last - 1) + window + offset), "w": (window,)}
        return Draw("strided", text, shapes)

    def contraction(self) -> Draw:
        rng = self.rng
        form = self.side("contraction", ["plain", "transposed", "scaled", "inside", "batched", "left", "output",
                                         "named", "outer", "scalar factor", "broadcast"])
        large = form != "scaled" or rng.random() < 0.5  # below BLAS_WORK, every other function is
        inner = rng.choice([3, 8, 16, 33])
        last = rng.choice(last_dimensions()[1:])
        target = BLAS_WORK.value * rng.choice([2, 3]) if large else BLAS_WORK.value // 4
        rows = max(1, -(-target // (inner * last)))
        a, b = "a[i; k]", "b[k; j]"
        shapes = {"f": (rows, last), "a": (rows, inner), "b": (inner, last)}
        if form == "transposed":
            b, shapes["b"] = "b[j; k]", (last, inner)
        if form == "left":  # the summed index first in a: its matrix is a transposed view
            a, shapes["a"] = "a[k; i]", (inner, rows)
        if form == "output":  # the product lands transposed
            shapes["f"] = (last, rows)
            return Draw("contraction", f"f[j; i] = sum{{k}}_0^{inner - 1} ({a} * {b})", shapes)
        if form == "named":  # names the generated code uses itself
            return Draw("contraction", f"np[i; j] = sum{{k}}_0^{inner - 1} (range[i; k] * x_[k; j])",
                        {"np": (rows, last), "range": (rows, inner), "x_": (inner, last)})
        if form == "scalar factor":  # a 0-d factor: no BLAS operand
            return Draw("contraction", f"f[i; j] = sum{{k}}_0^{inner - 1} (a[i; k] * b[k; j] * w[])",
                        {**shapes, "w": ()})
        if form == "broadcast":  # an output index no factor reads: no product
            return Draw("contraction", f"f[i; j] = sum{{k}}_0^{inner - 1} (a[i; k] * u[k])",
                        {"f": (rows, last), "a": (rows, inner), "u": (inner,)})
        if form == "outer":  # a sum that keeps no output index: a dot product scaling every element
            return Draw("contraction", f"f[i; j] = c[i; j] * sum{{k}}_0^{inner - 1} (u[k] * v[k])",
                        {"f": (rows, last), "c": (rows, last), "u": (inner,), "v": (inner,)})
        body = f"sum{{k}}_0^{inner - 1} ({a} * {b}{' * 0.5' if form == 'scaled' else ''})"
        if form == "inside":
            shapes["c"] = (last,)
            return Draw("contraction", f"f[i; j] = tanh (({body}) + c[j])", shapes)
        if form == "batched":
            batch = rng.choice([2, 3])
            rows = max(1, rows // batch)
            shapes = {"f": (batch, rows, last), "a": (batch, rows, inner), "b": (batch, inner, last)}
            return Draw("contraction", f"f[n; i; j] = sum{{k}}_0^{inner - 1} (a[n; i; k] * b[n; k; j])", shapes)
        return Draw("contraction", f"f[i; j] = {body}", shapes)

    def convolution(self) -> Draw:
        """A 2-D convolution over channels, strided or dilated, zero padded by a gate or not, channels first or last;
        its gather share on either side of GATHER_SHARE (few or many filters)."""
        rng = self.rng
        stride, dilation = rng.choice([1, 1, 2, 3]), rng.choice([1, 1, 2])
        window, pad = rng.choice([2, 3]), rng.choice([0, 0, 1])
        channels = rng.choice([1, 2, 3])
        filters = rng.choice([1, GATHER_SHARE.value - 1, GATHER_SHARE.value, 2 * GATHER_SHARE.value])
        side = rng.choice([4, 6, 12, 24, 36, 48])
        batch = rng.choice([1, 2, 4])
        # one filter over a large image: the gather's share under GATHER_SHARE, the image gradient's product's
        # share over INNER_SHARE
        if self.side("convolution", [True, False, False]):
            filters, side, batch, channels, window = 1, 48, 4, 3, 3
        variant = self.side("convolution variant", ["plain", "strict gate", "offset window", "channels last"])
        pad = 1 if variant == "strict gate" else 0 if variant == "offset window" else pad
        side = max(side, dilation * (window - 1) + 1)
        out = (side + 2 * pad - dilation * (window - 1) - 1) // stride + 1
        row = f"{stride} * i + {dilation} * p - {pad}" if pad else f"{stride} * i + {dilation} * p"
        col = f"{stride} * j + {dilation} * q - {pad}" if pad else f"{stride} * j + {dilation} * q"
        if variant == "channels last":
            product = f"w[f; p; q; c] * x[n; {row}; {col}; c]"
            shapes = {"w": (filters, window, window, channels), "x": (batch, side, side, channels)}
        else:
            product = f"w[f; c; p; q] * x[n; c; {row}; {col}]"
            shapes = {"w": (filters, channels, window, window), "x": (batch, channels, side, side)}
        if pad:
            # a gate stricter than the image's border is no padding: it stays a gate (a kernel)
            top = f"{row} - 1 >= 0" if variant == "strict gate" else f"{row} >= 0"
            gate = " and ".join([top, f"{side - 1} - ({row}) >= 0", f"{col} >= 0", f"{side - 1} - ({col}) >= 0"])
            product = f"if {{{gate}}} then ({product}) else (0)"
        # a window from 1 rather than 0 is no whole dimension of w: no gather, a kernel
        first = 1 if variant == "offset window" else 0
        body = f"sum{{c}}_0^{channels - 1} (sum{{p}}_{first}^{window - 1} (sum{{q}}_0^{window - 1} ({product})))"
        shapes["y"] = (batch, filters, out, out)
        if rng.random() < 0.3:
            shapes["b"] = (filters,)
            return Draw("convolution", f"y[n; f; i; j] = tanh (({body}) + b[f])", shapes)
        return Draw("convolution", f"y[n; f; i; j] = {body}", shapes)

    def broadcast(self) -> Draw:
        rng = self.rng
        last = rng.choice(last_dimensions())
        size = self.side("broadcast", [VECTOR_WORK.value, VECTOR_WORK.value - 1, 2 * VECTOR_WORK.value])
        rows = max(1, -(-size // last) if size >= VECTOR_WORK.value else size // last)
        inner = self.combine("x[i; j]", self.side("broadcast operand", ["m[i]", "v[j]", "2", "w[]", "x[i; j + 1]",
                                                                          "t[j; i]"]))
        body = self.function(inner, NUMPY_FASTER)
        if rng.random() < 0.5:
            body = f"log (1 + {self.function(inner, ['exp'])})" if rng.random() < 0.5 else f"{body} * v[j]"
        return Draw("broadcast", f"f[i; j] = {body}", {"f": (rows, last), "x": (rows, last + 1), "m": (rows,),
                                                       "v": (last,), "w": (), "t": (last, rows)})

    def chain(self) -> Draw:
        """Long sums of terms: their generated expressions nest past the printer's MAX_NESTING, or stay under."""
        rng = self.rng
        from tensoradbook.codegen.thresholds import MAX_NESTING
        count = rng.choice([3, MAX_NESTING.value + 5])
        rows, last = self.shape_2d(work_per_element=1)
        terms = [f"x[i; j] * {k + 1}" if k % 2 else f"y[j] / {k + 2}" for k in range(count)]
        return Draw("chain", f"f[i; j] = {' + '.join(terms)}", {"f": (rows, last), "x": (rows, last), "y": (last,)})

    def column(self) -> Draw:
        """A sum down the rows of a matrix (a bias's gradient): one row of lanes, or under MIN_ROWS rows, whose work
        is cut into blocks of LANE_BLOCK lanes, the last block short or whole."""
        rng = self.rng
        last = self.side("column", [LANE_BLOCK.value, 2 * LANE_BLOCK.value + 3, MIN_LANES.value, LANE_BLOCK.value + 1])
        depth = -(-PARALLEL_WORK.value // last) * rng.choice([1, 2]) if rng.random() < 0.7 else 7
        if rng.random() < 0.5:
            return Draw("column", f"f[j] = sum{{i}}_0^{depth - 1} (x[i; j] * y[i])",
                        {"f": (last,), "x": (depth, last), "y": (depth,)})
        rows = rng.choice([2, MIN_ROWS.value - 1])
        return Draw("column", f"f[n; j] = sum{{i}}_0^{-(-depth // rows) - 1} (x[n; i; j])",
                    {"f": (rows, last), "x": (rows, -(-depth // rows), last)})

    def scalar(self) -> Draw:
        """0-d tensors: a whole contraction to one number, a scalar factor, a function that reads no argument."""
        rng = self.rng
        rows, last = self.shape_2d()
        form = self.side("scalar", ["total", "factor", "constant"])
        if form == "total":
            return Draw("scalar", f"s[] = sum{{i}}_0^{rows - 1} (sum{{j}}_0^{last - 1} (a[i; j] * b[i; j]))",
                        {"s": (), "a": (rows, last), "b": (rows, last)})
        if form == "factor":
            return Draw("scalar", f"f[i; j] = {self.function('x[i; j] * w[]')} + w[]",
                        {"f": (rows, last), "x": (rows, last), "w": ()})
        return Draw("scalar", f"c[] = {rng.choice(['2', '0.5'])} * 3", {"c": ()})

    def program(self) -> Draw:
        """Two or three definitions: a reduction or product first, then an element-wise or broadcast step."""
        rng = self.rng
        rows, last = self.shape_2d(work_per_element=4)
        inner = rng.choice([3, 8])
        first = rng.choice([f"h[i; j] = sum{{k}}_0^{inner - 1} (a[i; k] * b[k; j])",
                            f"h[i; j] = max{{k}}_0^{inner - 1} (a[i; k] + b[k; j])",
                            "h[i; j] = sum{k}_0^j (c[i; k])"])
        second = rng.choice(["g[i; j] = exp (h[i; j] - m[i])", "g[i; j] = if {h[i; j] > 0} then (h[i; j]) else (0)",
                             "g[i; j] = h[i; j] * c[i; j]"])
        lines = [first, second]
        shapes = {"h": (rows, last), "g": (rows, last), "a": (rows, inner), "b": (inner, last), "c": (rows, last),
                  "m": (rows,)}
        if rng.random() < 0.5:
            lines.append("f[i] = sum{j}_0^" + str(last - 1) + " (g[i; j])")
            shapes["f"] = (rows,)
        return Draw("program", "\n".join(lines), shapes, smooth="max" not in first and ">" not in second)


FAMILIES = ("banded", "gated", "selects", "strided", "contraction", "convolution", "broadcast", "chain", "column",
            "program", "banded", "convolution", "scalar", "contraction", "broadcast", "contraction")
SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def special_inputs(fn, rng: np.random.Generator, share: float = 0.05) -> dict[str, np.ndarray]:
    """Inputs in [-2, 2] rounded to quarters (so that ties are common), a ``share`` of their elements NaN, +-inf,
    -0.0 or 0.0; a scalar is ordinary."""
    args = {}
    for name in fn.arguments:
        shape = fn.shapes[name]
        values = np.round(rng.uniform(-2, 2, size=shape) * 4) / 4
        if shape and values.size > 1:
            mask = rng.random(shape) < share
            values[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        args[name] = values.astype(np.float64)
    return args


def ordinary_inputs(fn, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs in [0.5, 1.5] apart from each other: for finite differences, away from kinks and ties."""
    return {name: rng.uniform(0.5, 1.5, size=fn.shapes[name]) for name in fn.arguments}


def size_of(shape) -> int:
    return math.prod(shape)
