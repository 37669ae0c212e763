"""Multilinear contractions handed to BLAS: ``f[i; j] = sum{k}_0^(n-1) (a[i; k] * b[k; j])`` as a matrix product.

A definition whose body is, up to constant factors, a product of tensor elements under sums, each
element read at plain indices (one index each, no offset, no coefficient) and each sum over the whole
extent of every dimension its index reads, is a tensor contraction. Two operands are one matrix product
(``@``, BLAS) of views of them (:meth:`Contraction.code`); more go to numpy's ``einsum`` with
``optimize=True``, which picks an order of pairwise products. A gather kernel would run one dot product per
element, which the compiler cannot vectorise without reordering the additions. Matrix products, dense
layers, the scores and outputs of attention, and the gradients Algorithm 4 derives for them
(``da[i; k] = sum{j} (df[i; j] * b[k; j])``) all have this form.

A contraction's axes are numbers (:data:`Axes`), each operand's and the output's a tuple of them; a product's
axes have roles (:class:`_Pair`: summed, or free in one operand). The text, einsum's letters or a BLAS call
with its reshapes, is written only at the end, from those.

Three rewritings find contractions in other definitions; the report's Kronecker deltas and loop bounds still
decide what each definition is, these only recognize the products in it:

* a contraction inside a larger expression (``log (1 + exp (sum{k}_0^127 (w[j; k] * x[i; k]) + b[j]))``, a
  dense layer) becomes a tensor of its own (:func:`split_contractions`), which the element-wise kernel reads;
* a factor read at affine indices of the sums' and the output's indices (``x[n; c; 2 * i + p; 2 * j + q]``, a
  strided convolution) is gathered into a tensor of those indices (:func:`gathered_contraction`, "im2col"),
  and the rest is a plain contraction;
* sums over whole dimensions inside sums with Fourier-Motzkin bounds (the convolution's image gradient)
  become a contraction over fresh indices (:func:`inner_contraction`), read at the affine indices.

Whatever is of none of these forms (conditions, partial ranges, functions of the product) stays in the
element-wise kernels.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from fractions import Fraction

from ..lang.evaluate import typical_terms
from ..lang.expr import (Affine, Atom, Binary, Element, Expr, If, Number, Sum, free_indices, postorder, replace,
                         substitute)
from ..lang.function import Function
from ..lang.names import fresh_name
from .thresholds import GATHER_SHARE, INNER_SHARE, Threshold

#: einsum's subscript letters, one per axis: a contraction of more axes than letters stays in the kernels
LETTERS = string.ascii_letters

#: the axes of an operand or of the output, each a number (its letter in einsum's subscripts)
Axes = tuple[int, ...]


@dataclass(frozen=True)
class Contraction:
    """``scale * einsum(subscripts, *operands)``: the operands are the names of the tensors read, in order, and
    ``terms`` their axes, ``output`` the result's; the axes are numbered in the order the operands first read
    them, and ``sizes`` gives their extents."""

    terms: tuple[Axes, ...]
    output: Axes
    operands: tuple[str, ...]
    scale: float | int
    sizes: tuple[int, ...]

    @property
    def subscripts(self) -> str:
        """einsum's subscripts, ``"ab,bc->ac"``."""
        return f"{','.join(_letters(term) for term in self.terms)}->{_letters(self.output)}"

    def code(self, operands: list[str], buffer: str | None = None) -> str:
        """numpy code of the contraction over the operands' texts, C-contiguous. Two operands with no index in
        common but summed ones are one matrix product (BLAS), or a batched one (:func:`_batched`): each operand
        viewed as a matrix where its summed indices lie together, first or last, in the same order in both (a view
        transposed, never copied), else copied with them so (the smaller operand, where one must be); written
        straight into a row-major result where the free indices are the output's in order (``a[i; k] * b[j; k]``
        -> ``[i; j]``, or swapped), else copied into the output's order once. ``einsum`` may give a transposed view
        that then costs a copy as long as the product, and takes several times as long to plan a product of
        many indices. Anything else is ``np.einsum``. ``buffer``, code with a ``{shape}`` to fill in, gives the
        array a product is written into where it lands in the output's order (a scratch array)."""
        pair = _Pair.of(self)
        value = _product(pair, operands, buffer if self.scale == 1 else None) if pair else None
        if value is None:
            value = f"np.ascontiguousarray(np.einsum({self.subscripts!r}, {', '.join(operands)}, optimize=True))"
        return value if self.scale == 1 else f"{self.scale!r} * {value}"


def _letters(axes: Axes) -> str:
    return "".join(LETTERS[axis] for axis in axes)


@dataclass(frozen=True)
class _Pair:
    """A contraction of two operands that is one matrix product, batched or not: the axes ``summed`` (in both
    operands and not in the output, in the first operand's order), and each operand's ``free`` ones (the rest,
    in its order), which together are the output's."""

    terms: tuple[Axes, Axes]
    output: Axes
    sizes: tuple[int, ...]
    summed: Axes
    free: tuple[Axes, Axes]

    @staticmethod
    def of(contraction: Contraction) -> _Pair | None:
        """``contraction`` as a pair, or None: more or fewer operands, an axis twice in one, an axis in both that
        the output keeps (a batch), or one summed within one operand."""
        terms, output = contraction.terms, contraction.output
        if len(terms) != 2 or any(len(set(axes)) != len(axes) for axes in (*terms, output)):
            return None
        summed = tuple(axis for axis in terms[0] if axis in terms[1] and axis not in output)
        free = tuple(tuple(axis for axis in axes if axis not in summed) for axes in terms)
        if set(free[0]) & set(free[1]) or len(free[0]) + len(free[1]) != len(output):
            return None
        return _Pair(terms, output, contraction.sizes, summed, free)

    def volume(self, axes: Axes) -> int:
        """How many elements ``axes`` span."""
        return math.prod(self.sizes[axis] for axis in axes)

    def shape(self, axes: Axes) -> tuple[int, ...]:
        return tuple(self.sizes[axis] for axis in axes)

    def summed_in(self, k: int) -> Axes:
        """The summed axes in the order operand ``k`` holds them."""
        return tuple(axis for axis in self.terms[k] if axis in self.summed)


def _product(pair: _Pair, operands: list[str], buffer: str | None) -> str:
    """The pair as one matrix product of the operands' texts, batched where :func:`_batched` finds it so."""
    batched = _batched(pair, operands, buffer)
    if batched:
        return batched
    first, second = (1, 0) if _swapped(pair) else (0, 1)
    landed = pair.free[first] + pair.free[second]
    # the summed indices in the order an operand holds them: both operands viewed, else the larger one
    views = (pair.terms[first], pair.terms[second])

    def viewed(order):
        together = [axes for axes in views if _lies_together(axes, order)]
        return len(together), max((pair.volume(axes) for axes in together), default=0)

    order = max((pair.summed_in(first), pair.summed_in(second)), key=viewed)
    rows = _matrix(operands[first], pair.terms[first], order, pair, summed_last=True)
    columns = _matrix(operands[second], pair.terms[second], order, pair, summed_last=False)
    shape = pair.shape(landed)
    if buffer and landed == pair.output:
        matrix = (pair.volume(pair.free[first]), pair.volume(pair.free[second]))
        value = f"np.matmul({rows}, {columns}, out={buffer.format(shape=matrix)}).reshape({shape!r})"
    else:
        value = f"({rows} @ {columns}).reshape({shape!r})"
    if landed != pair.output:
        value = f"np.ascontiguousarray({value}.transpose({tuple(landed.index(x) for x in pair.output)!r}))"
    return value


def _swapped(pair: _Pair) -> bool:
    """Whether the output holds the second operand's free axes first, then the first's."""
    return pair.free[0] + pair.free[1] != pair.output and pair.free[1] + pair.free[0] == pair.output


def _batched(pair: _Pair, operands: list[str], buffer: str | None) -> str | None:
    """A product batched over an operand's leading free indices, as a convolution's layouts make them, or None.

    ``x[n; k; z] * w[f; k] -> [n; f; z]``: per leading ``n``, the matrix ``w`` times ``x``'s slice, written as it
    lands (a convolution from its gather ``[n; c p q; i j]``, or its image gradient's contraction ``[n; c p q; i
    j]`` of ``dy[n; f; i j]`` and ``w[f; c p q]``). ``a[n; f; z] * b[n; g; z] -> [f; g]``: per ``n`` a product
    over ``z``, then the sum over ``n`` in order (a convolution's filter gradient)."""
    for a, b in ((0, 1), (1, 0)):
        batched = _batched_per_lead(pair, a, b, operands, buffer)
        if batched:
            return batched
    return _summed_over_lead(pair, operands)


def _batched_per_lead(pair: _Pair, a: int, b: int, operands: list[str], buffer: str | None) -> str | None:
    """``x[n; k; z] * w[f; k] -> [n; f; z]`` with ``a`` the operand ``x``, whose summed axes lie together between
    free ones, and ``b`` the operand ``w``, whose free axes the output holds between ``x``'s; else None."""
    ta, summed = pair.terms[a], pair.summed
    start = _position(ta, summed) if pair.summed_in(a) == summed else None
    if not start:
        return None
    lead, trail = ta[:start], ta[start + len(summed):]
    output = pair.output
    if not trail or output[:len(lead)] != lead or output[len(output) - len(trail):] != trail:
        return None
    middle = output[len(lead):len(output) - len(trail)]  # b's free indices, in its own order
    if middle != pair.free[b]:
        return None
    shape = (pair.volume(lead), pair.volume(middle), pair.volume(trail))
    matrix = _matrix(operands[b], pair.terms[b], summed, pair, summed_last=True)
    out = f", out={buffer.format(shape=shape)}" if buffer else ""
    rows = f"{operands[a]}.reshape({pair.volume(lead)}, {pair.volume(summed)}, {pair.volume(trail)})"
    return f"np.matmul({matrix}, {rows}{out}).reshape({pair.shape(output)!r})"


def _summed_over_lead(pair: _Pair, operands: list[str]) -> str | None:
    """``a[n; f; z] * b[n; g; z] -> [f; g]``: the operands' common leading and trailing axes are the summed
    ones, and their middles, in some order, the output; else None."""
    lead = _common_prefix(*pair.terms)
    trail = _common_prefix(*(axes[::-1] for axes in pair.terms))[::-1]
    middles = [axes[len(lead):len(axes) - len(trail)] for axes in pair.terms]
    order = (0, 1) if middles[0] + middles[1] == pair.output else (1, 0)
    if not (lead and trail and set(lead + trail) == set(pair.summed)
            and middles[order[0]] + middles[order[1]] == pair.output):
        return None
    first, second = (f"{operands[k]}.reshape({pair.volume(lead)}, {pair.volume(middles[k])}, {pair.volume(trail)})"
                     for k in order)
    return f"np.matmul({first}, {second}.transpose(0, 2, 1)).sum(axis=0).reshape({pair.shape(pair.output)!r})"


def _position(axes: Axes, run: Axes) -> int | None:
    """Where ``run`` lies together, in its order, in ``axes``; None where it does not."""
    for start in range(len(axes) - len(run) + 1):
        if axes[start:start + len(run)] == run:
            return start
    return None


def _common_prefix(first: Axes, second: Axes) -> Axes:
    length = 0
    while length < min(len(first), len(second)) and first[length] == second[length]:
        length += 1
    return first[:length]


def _lies_together(axes: Axes, order: Axes) -> bool:
    """Whether ``order`` is how ``axes`` begins or ends."""
    return axes[:len(order)] == order or axes[len(axes) - len(order):] == order


def _matrix(text: str, axes: Axes, order: Axes, pair: _Pair, summed_last: bool) -> str:
    """The operand ``text`` (C-contiguous, of ``axes``) as a matrix whose columns (``summed_last``) or rows are its
    summed axes ``order``: a view, transposed or not, where they lie together in that order, first or last; else
    a copy with its axes in that place."""
    count = pair.volume(order)
    if axes[len(axes) - len(order):] == order:
        return f"{text}.reshape(-1, {count})" + ("" if summed_last else ".T")
    if axes[:len(order)] == order:
        return f"{text}.reshape({count}, -1)" + (".T" if summed_last else "")
    free = [axes.index(axis) for axis in axes if axis not in order]
    summed = [axes.index(axis) for axis in order]
    if summed_last:
        return f"{text}.transpose({tuple(free + summed)!r}).reshape(-1, {count})"
    return f"{text}.transpose({tuple(summed + free)!r}).reshape({count}, -1)"


#: a tensor split off a definition and computed first: the Function it is, and the contraction BLAS computes it
#: by (None for a gather, which a kernel of its own writes)
Part = tuple[Function, Contraction | None]


def plain_index(index) -> str | None:
    """The index name of an affine that is one index alone (``k``, not ``k + 1``, ``2 * k`` or ``k / 2``)."""
    if index.constant == 0 and index.denominator == 1 and len(index.terms) == 1 and index.terms[0][1] == 1:
        return index.terms[0][0]
    return None


def _factors(node: Expr) -> list[Expr] | None:
    """The factors of a product of elements and numbers, or None where the body is anything else."""
    factors, pending = [], [node]
    while pending:
        current = pending.pop()
        if isinstance(current, Binary) and current.op == "*":
            pending += [current.right, current.left]
        elif isinstance(current, (Element, Number)):
            factors.append(current)
        else:
            return None
    return factors


def _chain(body: Expr) -> tuple[list[Sum], Expr]:
    """The sums at the top of a body, outermost first, and what is inside them."""
    sums = []
    while isinstance(body, Sum):
        sums.append(body)
        body = body.body
    return sums, body


def _full_extent(node: Sum) -> int | None:
    """``n`` for a sum over ``0 .. n - 1`` (constant bounds), None for any other range or reduction."""
    if node.op != "sum" or len(node.lower) != 1 or len(node.upper) != 1:
        return None
    low, high = node.lower[0], node.upper[0]
    if not (low.is_constant and high.is_constant) or low.offset != 0:
        return None
    return int(high.offset) + 1


@dataclass(frozen=True)
class _SummedProduct:
    """A body that is sums over whole ranges ``0 .. n - 1`` of indices of their own (outermost first) of a product
    of elements and numbers, under a gate whose other branch is 0 (``condition``, empty without one); ``extents``
    the output's indices' and the sums' indices'."""

    sums: list[Sum]
    condition: tuple[Atom, ...]
    body: Expr  # the product
    factors: list[Expr]
    extents: dict[str, int]

    @property
    def elements(self) -> list[Element]:
        return [f for f in self.factors if isinstance(f, Element)]


def _summed_product(fn: Function, gated: bool = False) -> _SummedProduct | None:
    """``fn``'s body as a :class:`_SummedProduct`, with a gate only where ``gated``; None where it is not one (no
    sum, a sum over part of a range or of an output index, anything but a product inside)."""
    sums, body = _chain(fn.body)
    extents = dict(zip(fn.indices, fn.shapes[fn.name]))
    for node in sums:  # the one check that the sums cover whole dimensions
        if _full_extent(node) is None or node.index in extents:
            return None
        extents[node.index] = _full_extent(node)
    condition = ()
    if gated and isinstance(body, If) and isinstance(body.otherwise, Number) and body.otherwise.value == 0:
        condition, body = body.condition, body.then
    factors = _factors(body)
    if not sums or factors is None:
        return None
    return _SummedProduct(sums, condition, body, factors, extents)


def reads_plainly(element: Element, shapes: dict, extents: dict) -> bool:
    """Whether every index of ``element`` is one index alone ranging over its whole dimension."""
    names = [plain_index(index) for index in element.indices]
    return all(name is not None and extents.get(name) == size for name, size in zip(names, shapes[element.name]))


def contraction_of(fn: Function) -> Contraction | None:
    """``fn`` as a contraction, or None where its body is not a plain one (see the module's docstring)."""
    if not fn.shapes[fn.name]:  # kernels store a scalar as one element; leave scalars to them
        return None
    product = _summed_product(fn)
    elements = product.elements if product else []
    if not elements or any(not fn.shapes[e.name] for e in elements):
        return None
    if not all(reads_plainly(e, fn.shapes, product.extents) for e in elements):
        return None  # an offset, a stride, a sum over part of a dimension, an index past the output's extent
    axes: dict[str, int] = {}  # index name -> its axis, numbered as the elements first read them
    terms = tuple(tuple(axes.setdefault(plain_index(index), len(axes)) for index in e.indices) for e in elements)
    if len(axes) > len(LETTERS) or not set(fn.indices) | {s.index for s in product.sums} <= axes.keys():
        return None  # an output index no element reads would need a broadcast; an unread sum a count
    scale = math.prod(f.value for f in product.factors if isinstance(f, Number))
    output = tuple(axes[name] for name in fn.indices)
    sizes = tuple(product.extents[name] for name in axes)
    return Contraction(terms, output, tuple(e.name for e in elements), scale, sizes)


def split_contractions(fn: Function, used: set[str], minimum: Threshold, known: list,
                       padded: dict) -> tuple[list[Part], Function]:
    """The outermost sums of ``fn``'s body that are contractions reaching the threshold ``minimum`` of element-terms,
    plain or once a factor is gathered (:func:`gathered_contraction`, with ``known`` and ``padded``: a convolution
    plus a bias), each a :class:`Function` of its own over the output indices it keeps (named fresh in ``used``),
    after the gathers it reads, and ``fn`` reading those tensors in their place. ``fn`` itself, and no parts, where
    there is none or where the whole body is the contraction (:func:`contraction_of` covers that)."""
    if isinstance(fn.body, Sum):
        return [], fn
    outermost = [node for node in postorder(fn.body, below=lambda node: not isinstance(node, Sum))
                 if isinstance(node, Sum)]
    extents = dict(zip(fn.indices, fn.shapes[fn.name]))
    parts, body, shapes = [], fn.body, dict(fn.shapes)
    for node in dict.fromkeys(outermost):
        kept = tuple(i for i in fn.indices if i in free_indices(node))
        if not kept:
            continue
        name = fresh_name(f"{fn.name}_c", used)
        part = Function(name, kept, node, {**fn.shapes, name: tuple(extents[i] for i in kept)})
        split = _split_part(part, used, minimum, known, padded)
        if split is None:
            used.discard(name)
            padded.pop(name, None)  # the name may be given again, to another part
            continue
        parts += split
        shapes[name] = split[-1][0].shapes[name]
        body = replace(body, node, Element(name, tuple(Affine.index(i) for i in kept)))
    if not parts:
        return [], fn
    return parts, Function(fn.name, fn.indices, body, shapes)


def _split_part(part: Function, used: set[str], minimum: Threshold, known: list, padded: dict) -> list[Part] | None:
    """The sum ``part`` as a contraction reaching ``minimum``, plain or after the gathers it reads (those first,
    then the contraction); None where it is neither."""
    found, gathers = contraction_of(part), []
    if found is None and minimum.reached(typical_terms(part)):
        gathered = gathered_contraction(part, used, known, padded)
        if gathered:
            gathers, part = gathered
            found = contraction_of(part)
    if found is None or not minimum.reached(typical_terms(part)):
        return None
    return [*gathers, (part, found)]


def part_key(part: Function, found: Contraction | None) -> object:
    """What makes two parts the same tensor: a contraction's einsum (over the same tensors), or a gather's body
    with its indices named by position, and its shape."""
    if found is not None:
        return found
    positions = {name: Affine.index(f"\0{k}") for k, name in enumerate(part.indices)}
    return substitute(part.body, positions), tuple(part.shapes[part.name])


def gathered_contraction(fn: Function, used: set[str], known: list,
                         padded: dict) -> tuple[list[Part], Function] | None:
    """``fn`` as a gather and a plain contraction of it, where one factor of a contraction is read at affine
    indices of the sums' and the output's indices (``x[n; c; 2 * i + p; 2 * j + q]``, a strided convolution):
    that factor becomes a tensor of those indices (``y_g[n; c; p; q; i; j]``, "im2col"), which an element-wise
    kernel writes, and ``fn`` a contraction of plain reads (BLAS). A gate that keeps the reads inside the factor's
    tensor (a padded convolution's ``if {i + p - 2 >= 0 and ...}``) becomes a copy of that tensor padded with
    zeros, which the gather reads; ``padded`` learns ``fn``'s name -> (``fn``, the other factors' tensors): the
    product's terms outside the gate are those zeros times the other factors, 0 unless a factor is inf or NaN,
    where the gated sum skips them. The gather's indices are the output's with the summed ones in place of the
    other factors' (a batched product, :func:`_batched`); a gather of the same tensor at the same places made
    before, which ``known`` holds and learns, is read again, in its own order: a
    convolution's filter gradient reads the forward pass's. Returns ``(parts, fn reading them)``, the parts the
    padded copy (if any) and the gather, or None where the body is of another form, where a read leaves its
    tensor where no gate guards it, or where the gather is more than 1 / :data:`.thresholds.GATHER_SHARE` of the
    contraction's terms."""
    product = _summed_product(fn, gated=True) if fn.shapes[fn.name] else None
    element = _gathered_factor(fn, product) if product else None
    if element is None:
        return None
    shape = tuple(fn.shapes[element.name])
    padding = _padding(element, shape, product.condition, product.extents)
    names = {name for index in element.indices for name in index.names}
    trial = Element("\0gather", tuple(Affine.index(n) for n in sorted(names)))  # before naming anything in used
    sizes = tuple(product.extents[n] for n in sorted(names))
    if padding is None or contraction_of(_through(fn, product, element, trial, sizes)) is None:
        return None  # a read leaves its tensor ungated, or an index is read by the gather alone (a broadcast)
    parts, read = [], element
    if any(low or high for low, high in padding):
        pad = _padded_copy(element.name, shape, padding, used, known)
        parts.append((pad, None))
        padded[fn.name] = fn, sorted({e.name for e in product.elements if e is not element})
        shape = tuple(pad.shapes[pad.name])
        read = Element(pad.name, tuple(index + low for index, (low, _) in zip(element.indices, padding)))
    others = {n for e in product.elements if e is not element for index in e.indices for n in index.names}
    layout = _gather_layout(read, shape, fn.indices, others, [node.index for node in product.sums], names)
    name = fresh_name(f"{fn.name}_g", used)
    extents = product.extents
    gather, layout = _known(Function(name, layout, read, {read.name: shape, name: tuple(extents[n] for n in layout)}),
                            known)
    parts.append((gather, None))
    reading = Element(gather.name, tuple(Affine.index(n) for n in layout))
    return parts, _through(fn, product, element, reading, gather.shapes[gather.name])


def _through(fn: Function, product: _SummedProduct, element: Element, gather: Element, shape: tuple) -> Function:
    """``fn`` reading ``gather`` (a tensor of ``shape``) in place of ``element``; the gate, if any, is the padded
    copy's now."""
    body = product.body
    for node in reversed(product.sums):
        body = node.renewed(body=body)
    return Function(fn.name, fn.indices, replace(body, element, gather), {**fn.shapes, gather.name: shape})


def _gathered_factor(fn: Function, product: _SummedProduct) -> Element | None:
    """The one factor of ``product`` (of two or more elements) read at affine indices of the sums' and the output's
    indices rather than plainly, which a gather would read; None where there is not exactly one, or where its
    gather would be past its share of the contraction's terms (:data:`.thresholds.GATHER_SHARE`)."""
    elements = product.elements
    gathered = [e for e in elements if not reads_plainly(e, fn.shapes, product.extents)]
    if len(gathered) != 1 or len(elements) < 2:
        return None
    element = gathered[0]
    names = {name for index in element.indices for name in index.names}
    if not names <= product.extents.keys() or not all(index.is_integral for index in element.indices):
        return None
    if not GATHER_SHARE.reached(Fraction(typical_terms(fn), math.prod(product.extents[n] for n in names))):
        return None
    return element


def _padding(element: Element, shape: tuple, condition: tuple, extents: dict) -> list[tuple[int, int]] | None:
    """Per dimension of ``element``'s tensor, the zeros below and above it that its reads reach over the box of
    ``extents``, where ``condition`` is exactly the gate keeping them inside (atoms ``index >= 0`` and
    ``size - 1 - index >= 0``); None where a read leaves the tensor ungated or the condition is anything else."""
    box = {name: (0, extents[name] - 1) for index in element.indices for name in index.names}
    sides = {}  # an atom's affine -> (dimension, whether it keeps the read at or above 0)
    for d, (index, size) in enumerate(zip(element.indices, shape)):
        sides[index] = (d, True)
        sides[Affine.constant_value(size - 1) - index] = (d, False)
    if any(not atom.inequality or atom.modulus or atom.affine not in sides for atom in condition):
        return None
    guarded = {sides[atom.affine] for atom in condition}
    padding = []
    for d, (index, size) in enumerate(zip(element.indices, shape)):
        low, high = index.interval(box)
        below, above = max(0, -math.floor(low)), max(0, math.ceil(high) - (size - 1))
        if below and (d, True) not in guarded or above and (d, False) not in guarded:
            return None
        padding.append((below, above))
    return padding


def _padded_copy(tensor: str, shape: tuple, padding: list, used: set[str], known: list) -> Function:
    """``tensor`` with ``padding`` zeros below and above each dimension: a gate made data, which a gather then
    reads without one (one made before, in ``known``, is read again)."""
    name = fresh_name(f"{tensor}_pad", used)
    indices = tuple(fresh_name(f"{name}_{d}", used) for d in range(len(shape)))
    inner = [Affine.index(i) - low for i, (low, _) in zip(indices, padding)]
    atoms = []
    for index, (low, high), size in zip(inner, padding, shape):
        atoms += [Atom(index, inequality=True)] if low else []
        atoms += [Atom(Affine.constant_value(size - 1) - index, inequality=True)] if high else []
    body = If(tuple(atoms), Element(tensor, tuple(inner)), Number(0))
    padded = tuple(size + low + high for size, (low, high) in zip(shape, padding))
    return _known(Function(name, indices, body, {tensor: tuple(shape), name: padded}), known)[0]


def _known(part: Function, known: list) -> tuple[Function, tuple[str, ...]]:
    """``part``, or an equal part ``known`` holds (the same body and extents up to the names and order of its
    indices), with ``part``'s index names in the order of the one returned; ``known`` learns a new one."""
    for found in known:
        renaming = _renaming(found, part)
        if renaming is not None:
            return found, tuple(renaming[name] for name in found.indices)
    known.append(part)
    return part, part.indices


def _renaming(found: Function, part: Function) -> dict[str, str] | None:
    """The index names of ``found`` -> those of ``part`` that make their bodies equal, each pair of the same
    extent; None where there is none. A search over the names of equal extent (a few at most)."""
    if len(found.indices) != len(part.indices) or {e.name for e in postorder(found.body) if isinstance(
            e, Element)} != {e.name for e in postorder(part.body) if isinstance(e, Element)}:
        return None
    extent = dict(zip(found.indices, found.shapes[found.name]))
    candidates = dict(zip(part.indices, part.shapes[part.name]))
    target = part_key(part, None)[0]
    positions = {name: k for k, name in enumerate(part.indices)}

    def search(mapping: dict) -> dict | None:
        if len(mapping) == len(found.indices):
            renamed = substitute(found.body, {n: Affine.index(f"\0{positions[m]}") for n, m in mapping.items()})
            return dict(mapping) if renamed == target else None
        name = found.indices[len(mapping)]
        for candidate in part.indices:
            if candidate not in mapping.values() and candidates[candidate] == extent[name]:
                result = search({**mapping, name: candidate})
                if result is not None:
                    return result
        return None

    return search({})


def _gather_layout(read: Element, shape: tuple, output: tuple, others: set, summed: list[str],
                   names: set) -> tuple[str, ...]:
    """The gather's indices: the output's, in order, with the summed ones where the other factors' free indices are
    (``[n; c; p; q; i; j]`` for ``w[f; c; p; q]`` and ``y[n; f; i; j]``), so that one batched product reads both
    operands as they lie; the summed ones in the order of the strides they step ``read``'s tensor (of ``shape``)
    by, largest first. The summed ones first where the other factors' indices are not together in the output."""
    strides = dict.fromkeys(names, 0)
    step = 1
    for index, size in reversed(list(zip(read.indices, shape))):
        for name, coefficient in index.terms:
            strides[name] += abs(coefficient) * step
        step *= size
    inner = sorted((n for n in names if n in summed), key=lambda n: -strides[n])
    outer = [n for n in output if n in names]
    theirs = [k for k, n in enumerate(output) if n in others and n not in names]
    if theirs and theirs == list(range(theirs[0], theirs[-1] + 1)):
        before = [n for n in output[:theirs[0]] if n in names]
        return tuple(before + inner + [n for n in outer if n not in before])
    return tuple(inner + outer)


def inner_contraction(fn: Function, used: set[str]) -> tuple[Function, Function] | None:
    """The sums of ``fn``'s body over whole dimensions, when the others' bounds do not read them, as a
    contraction of its own over the other indices, each affine index read becoming an index of its own: a
    strided convolution's gradient ``dx[n; c; a; b] = sum{f} (sum{u}_(max ...)^(min ...) (... dy[n; f; u; v] *
    w[f; c; a - 2 * u; b - 2 * v]))`` becomes ``dx_p[c; s; t; n; u; v] = sum{f} (w[f; c; s; t] * dy[n; f; u;
    v])`` (BLAS) and ``dx[n; c; a; b] = sum{u} (sum{v} (dx_p[c; a - 2 * u; b - 2 * v; n; u; v]))``: the sums
    commute, as their bounds do not depend on each other, and every read stays where it was. Returns
    ``(contraction, fn reading it)``, or None where there is no such sum, where an index summed inside is part of
    an affine read, or where the contraction would run more than :data:`.thresholds.INNER_SHARE` times the
    kernel's terms."""
    sums, body = _chain(fn.body)
    factors = _factors(body)
    if len(sums) < 2 or factors is None:
        return None
    elements = [f for f in factors if isinstance(f, Element)]
    inside = _contractible(sums, elements, fn.shapes)
    if not inside or len(inside) == len(sums):
        return None
    contracted = {node.index for node in inside}
    reads = _indexed_reads(fn, body, elements, contracted, used)
    if reads is None:
        return None
    layout = _inner_layout(reads.orders, reads.at, fn.indices[-1] if fn.indices else None)
    name = fresh_name(f"{fn.name}_p", used)
    shapes = {**fn.shapes, name: tuple(reads.extents[n] for n in layout)}
    body = reads.body
    for node in reversed(inside):
        body = node.renewed(body=body)
    part = Function(name, tuple(layout), body, shapes)
    if contraction_of(part) is None or INNER_SHARE.exceeded(Fraction(typical_terms(part), typical_terms(fn))):
        return None
    kept = Element(name, tuple(reads.at[n] for n in layout))  # the sums left read it where they read the factors
    for node in reversed([node for node in sums if node.index not in contracted]):
        kept = node.renewed(body=kept)
    return part, Function(fn.name, fn.indices, kept, shapes)


def _contractible(sums: list[Sum], elements: list[Element], shapes: dict) -> list[Sum]:
    """The sums over whole dimensions that no sum's bounds read and that every element reads plainly, at a
    dimension of the sum's extent."""
    in_bounds = {name for node in sums for a in (*node.lower, *node.upper) for name in a.names}
    plain_reads = {}  # index name -> the sizes of the dimensions it is read at plainly, None where not plainly
    for element in elements:
        for index, size in zip(element.indices, shapes[element.name]):
            for name in index.names:
                plain_reads.setdefault(name, set()).add(size if plain_index(index) == name else None)
    return [node for node in sums if node.index not in in_bounds and _full_extent(node) is not None
            and plain_reads.get(node.index) == {_full_extent(node)}]


@dataclass(frozen=True)
class _IndexedReads:
    """The product ``body`` with each element's index that is not ``contracted`` an index of its own: plain ones
    kept, each affine one a fresh name; ``at`` each of those names -> the affine index it stands for, ``extents``
    its extent, ``orders`` per element its indices' names (None for a contracted one)."""

    body: Expr
    at: dict[str, Affine]
    extents: dict[str, int]
    orders: list[list[str | None]]


def _indexed_reads(fn: Function, body: Expr, elements: list[Element], contracted: set[str],
                   used: set[str]) -> _IndexedReads | None:
    """:class:`_IndexedReads` of ``body`` (fresh names in ``used``); None where one name would stand for
    dimensions of two extents."""
    extents, fresh, at, orders = {}, {}, {}, []
    for element in elements:
        indices, order = [], []
        for index, size in zip(element.indices, fn.shapes[element.name]):
            if plain_index(index) in contracted:
                indices.append(index)
                order.append(None)
                continue
            name = plain_index(index) or fresh.get(index) or fresh.setdefault(index, fresh_name(f"{fn.name}_v", used))
            if extents.setdefault(name, size) != size:
                return None
            at.setdefault(name, index)
            indices.append(Affine.index(name))
            order.append(name)
        body = replace(body, element, Element(element.name, tuple(indices)))
        orders.append(order)
    return _IndexedReads(body, at, extents, orders)


def _inner_layout(orders: list[list[str | None]], reads: dict, lane: str | None) -> tuple[str, ...]:
    """The indices of :func:`inner_contraction`'s tensor: one factor's free indices, and the other's in their place
    where the first holds the contracted ones together (a convolution's ``[n; c; p; q; i; j]`` from ``dy[n; f; i;
    j]`` and ``w[f; c; p; q]``, a batched product), or after them; the first of these whose last index moves with
    the kernel's lanes (the last output index), so that the kernel reads it contiguously. ``orders``: per factor
    its indices, None for a contracted one; ``reads``: an index -> the affine index it stands for."""
    candidates = []
    free = [[n for n in order if n] for order in orders]
    for first, second in ((0, 1), (1, 0))[:len(orders)]:
        one, other = orders[first], free[second] if len(orders) > 1 else []
        candidates.append(free[first] + [n for n in other if n not in free[first]])
        holes = [k for k, n in enumerate(one) if not n]
        if holes and holes == list(range(holes[0], holes[-1] + 1)):  # contracted together: the other goes there
            candidates.append(one[:holes[0]] + [n for n in other if n not in one] + one[holes[-1] + 1:])
    every = [n for order in orders for n in order if n]  # a third factor's free indices come last
    layouts = [tuple(dict.fromkeys(c + every)) for c in candidates]
    moving = [layout for layout in layouts if layout and lane in reads[layout[-1]].names]
    return (moving or layouts)[0]
