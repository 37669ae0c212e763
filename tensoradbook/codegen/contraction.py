"""Multilinear contractions handed to BLAS: ``f[i; j] = sum{k}_0^(n-1) (a[i; k] * b[k; j])`` as a matrix product.

A definition whose body is, up to constant factors, a product of tensor elements under sums, each
element read at plain indices (one index each, no offset, no coefficient) and each sum over the whole
extent of every dimension its index reads, is a tensor contraction. Two operands are one matrix product
(``@``, BLAS) of views of them (:meth:`Contraction.code`); more go to numpy's ``einsum`` with
``optimize=True``, which picks an order of pairwise products. A gather kernel would run one dot product per
element, which the compiler cannot vectorise without reordering the additions. Matrix products, dense
layers, the scores and outputs of attention, and the gradients Algorithm 4 derives for them
(``da[i; k] = sum{j} (df[i; j] * b[k; j])``) all have this form.

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
import os
import string
from dataclasses import dataclass
from fractions import Fraction

from ..lang.evaluate import typical_terms
from ..lang.expr import (Affine, Atom, Binary, Element, Expr, If, Number, Sum, free_indices, postorder, replace,
                         substitute)
from ..lang.function import Function
from ..lang.names import fresh_name
from .thresholds import GATHER_SHARE, INNER_SHARE, Threshold

#: einsum's subscript letters
LETTERS = string.ascii_letters


@dataclass(frozen=True)
class Contraction:
    """``scale * einsum(subscripts, *operands)``: the operands are the names of the tensors read, in order;
    ``sizes`` the extents of the subscripts' letters, in alphabetical order."""

    subscripts: str
    operands: tuple[str, ...]
    scale: float | int
    sizes: tuple[int, ...]

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
        inputs, output = self.subscripts.split("->")
        terms = inputs.split(",")
        value = None
        if len(terms) == 2 and all(len(set(t)) == len(t) for t in (*terms, output)):
            value = self._product(terms, output, operands, buffer if self.scale == 1 else None)
        if value is None:
            value = f"np.ascontiguousarray(np.einsum({self.subscripts!r}, {', '.join(operands)}, optimize=True))"
        return value if self.scale == 1 else f"{self.scale!r} * {value}"

    def _product(self, terms: list[str], output: str, operands: list[str], buffer: str | None) -> str | None:
        summed = [letter for letter in terms[0] if letter in terms[1] and letter not in output]
        free = [[letter for letter in t if letter not in summed] for t in terms]
        if set(free[0]) & set(free[1]) or len(free[0]) + len(free[1]) != len(output):
            return None  # a batch index, or an index summed within one operand: not one product
        size = dict(zip(LETTERS, self.sizes))
        batched = _batched(terms, output, operands, size, summed, buffer)
        if batched:
            return batched
        swapped = "".join(free[0] + free[1]) != output and "".join(free[1] + free[0]) == output
        first, second = (1, 0) if swapped else (0, 1)
        landed = "".join(free[first] + free[second])
        # the summed indices in the order an operand holds them: both operands viewed, else the larger one
        pair = (terms[first], terms[second])

        def viewed(order):
            views = [term for term in pair if _lies_together(term, order)]
            return len(views), max((math.prod(size[x] for x in term) for term in views), default=0)

        order = max(("".join(x for x in term if x in summed) for term in pair), key=viewed)
        rows = _matrix(operands[first], terms[first], order, size, summed_last=True)
        columns = _matrix(operands[second], terms[second], order, size, summed_last=False)
        shape = tuple(size[letter] for letter in landed)
        if buffer and landed == output:
            matrix = (math.prod(size[x] for x in free[first]), math.prod(size[x] for x in free[second]))
            value = f"np.matmul({rows}, {columns}, out={buffer.format(shape=matrix)}).reshape({shape!r})"
        else:
            value = f"({rows} @ {columns}).reshape({shape!r})"
        if landed != output:
            value = f"np.ascontiguousarray({value}.transpose({tuple(landed.index(x) for x in output)!r}))"
        return value


def _batched(terms: list[str], output: str, operands: list[str], size: dict, summed: list[str],
             buffer: str | None) -> str | None:
    """A product batched over an operand's leading free indices, as a convolution's layouts make them, or None.

    ``x[n; k; z] * w[f; k] -> [n; f; z]``: per leading ``n``, the matrix ``w`` times ``x``'s slice, written as it
    lands (a convolution from its gather ``[n; c p q; i j]``, or its image gradient's contraction ``[n; c p q; i
    j]`` of ``dy[n; f; i j]`` and ``w[f; c p q]``). ``a[n; f; z] * b[n; g; z] -> [f; g]``: per ``n`` a product
    over ``z``, then the sum over ``n`` in order (a convolution's filter gradient)."""
    letters = "".join(summed)

    def volume(text):
        return math.prod(size[x] for x in text)

    for a, b in ((0, 1), (1, 0)):
        ta, tb = terms[a], terms[b]
        start = ta.find(letters) if "".join(x for x in ta if x in summed) == letters else -1
        lead, trail = ta[:start], ta[start + len(letters):]
        if start > 0 and trail and output.startswith(lead) and output.endswith(trail):
            middle = output[len(lead):len(output) - len(trail)]  # b's free indices, in its own order
            if middle == "".join(x for x in tb if x not in summed):
                shape = (volume(lead), volume(middle), volume(trail))
                matrix = _matrix(operands[b], tb, letters, size, summed_last=True)
                out = f", out={buffer.format(shape=shape)}" if buffer else ""
                rows = f"{operands[a]}.reshape({volume(lead)}, {volume(letters)}, {volume(trail)})"
                return f"np.matmul({matrix}, {rows}{out}).reshape({tuple(size[x] for x in output)!r})"
    lead = os.path.commonprefix(terms)
    trail = os.path.commonprefix([t[::-1] for t in terms])[::-1]
    middles = [t[len(lead):len(t) - len(trail)] for t in terms]
    order = (0, 1) if "".join(middles) == output else (1, 0)
    if lead and trail and set(lead + trail) == set(summed) and "".join(middles[k] for k in order) == output:
        first, second = (f"{operands[k]}.reshape({volume(lead)}, {volume(middles[k])}, {volume(trail)})"
                         for k in order)
        return (f"np.matmul({first}, {second}.transpose(0, 2, 1)).sum(axis=0)"
                f".reshape({tuple(size[x] for x in output)!r})")
    return None


def _lies_together(term: str, order: str) -> bool:
    return term.startswith(order) or term.endswith(order)


def _matrix(text: str, term: str, order: str, size: dict, summed_last: bool) -> str:
    """The operand ``text`` (C-contiguous, indices ``term``) as a matrix whose columns (``summed_last``) or rows
    are its summed indices ``order``: a view, transposed or not, where they lie together in that order, first or
    last; else a copy with its indices in that place."""
    count = math.prod(size[letter] for letter in order)
    if term.endswith(order):
        return f"{text}.reshape(-1, {count})" + ("" if summed_last else ".T")
    if term.startswith(order):
        return f"{text}.reshape({count}, -1)" + (".T" if summed_last else "")
    free = [term.index(letter) for letter in term if letter not in order]
    summed = [term.index(letter) for letter in order]
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


def reads_plainly(element: Element, shapes: dict, extents: dict) -> bool:
    """Whether every index of ``element`` is one index alone ranging over its whole dimension."""
    names = [plain_index(index) for index in element.indices]
    return all(name is not None and extents.get(name) == size for name, size in zip(names, shapes[element.name]))


def contraction_of(fn: Function) -> Contraction | None:
    """``fn`` as a contraction, or None where its body is not a plain one (see the module's docstring)."""
    shape = tuple(fn.shapes[fn.name])
    if not shape:  # kernels store a scalar as one element; leave scalars to them
        return None
    extents = dict(zip(fn.indices, shape))
    sums, body = _chain(fn.body)
    for node in sums:
        if _full_extent(node) is None or node.index in extents:
            return None
        extents[node.index] = _full_extent(node)
    factors = _factors(body)
    if not sums or factors is None:
        return None
    elements = [f for f in factors if isinstance(f, Element)]
    if not elements or any(not fn.shapes[e.name] for e in elements):
        return None
    if not all(reads_plainly(e, fn.shapes, extents) for e in elements):
        return None  # an offset, a stride, a sum over part of a dimension, an index past the output's extent
    letters, read = {}, set()
    terms = []
    for element in elements:
        names = [plain_index(index) for index in element.indices]
        read.update(names)
        terms.append("".join(letters.setdefault(name, LETTERS[len(letters) % len(LETTERS)]) for name in names))
    if len(letters) > len(LETTERS) or not set(fn.indices) <= read or not {s.index for s in sums} <= read:
        return None  # an output index no element reads would need a broadcast; an unread sum a count
    scale = math.prod(f.value for f in factors if isinstance(f, Number))
    output = "".join(letters[name] for name in fn.indices)
    sizes = tuple(extents[name] for name in letters)
    return Contraction(f"{','.join(terms)}->{output}", tuple(e.name for e in elements), scale, sizes)


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
        found, gathers = contraction_of(part), []
        if found is None and minimum.reached(typical_terms(part)):
            gathered = gathered_contraction(part, used, known, padded)
            if gathered:
                gathers, part = gathered
                found = contraction_of(part)
        if found is None or not minimum.reached(typical_terms(part)):
            used.discard(name)
            padded.pop(name, None)  # the name may be given again, to another part
            continue
        parts += [*gathers, (part, found)]
        shapes[name] = part.shapes[name]
        body = replace(body, node, Element(name, tuple(Affine.index(i) for i in kept)))
    if not parts:
        return [], fn
    return parts, Function(fn.name, fn.indices, body, shapes)


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
    sums, body = _chain(fn.body)
    extents = dict(zip(fn.indices, fn.shapes[fn.name]))
    for node in sums:
        if _full_extent(node) is None or node.index in extents:
            return None
        extents[node.index] = _full_extent(node)
    condition = ()
    if isinstance(body, If) and isinstance(body.otherwise, Number) and body.otherwise.value == 0:
        condition, body = body.condition, body.then
    factors = _factors(body)
    if not sums or factors is None or not fn.shapes[fn.name]:
        return None
    elements = [f for f in factors if isinstance(f, Element)]
    gathered = [e for e in elements if not reads_plainly(e, fn.shapes, extents)]
    if len(gathered) != 1 or len(elements) < 2:
        return None
    element = gathered[0]
    names = {name for index in element.indices for name in index.names}
    if not names <= extents.keys() or not all(index.is_integral for index in element.indices):
        return None
    if not GATHER_SHARE.reached(Fraction(typical_terms(fn), math.prod(extents[n] for n in names))):
        return None
    shape = tuple(fn.shapes[element.name])
    padding = _padding(element, shape, condition, extents)
    if padding is None:
        return None
    parts, read = [], element
    if any(low or high for low, high in padding):
        pad = _padded_copy(element.name, shape, padding, used, known)
        parts.append((pad, None))
        padded[fn.name] = fn, sorted({e.name for e in elements if e is not element})
        shape = tuple(pad.shapes[pad.name])
        read = Element(pad.name, tuple(index + low for index, (low, _) in zip(element.indices, padding)))
    others = {n for e in elements if e is not element for index in e.indices for n in index.names}
    layout = _gather_layout(read, shape, fn.indices, others, [node.index for node in sums], names)
    name = fresh_name(f"{fn.name}_g", used)
    gather, layout = _known(Function(name, layout, read, {read.name: shape, name: tuple(extents[n] for n in layout)}),
                            known)
    parts.append((gather, None))
    reading = Element(gather.name, tuple(Affine.index(n) for n in layout))
    rewritten = body
    for node in reversed(sums):  # the gate, if any, is the padded copy's now
        rewritten = node.renewed(body=rewritten)
    shapes = {**fn.shapes, gather.name: gather.shapes[gather.name]}
    return parts, Function(fn.name, fn.indices, replace(rewritten, element, reading), shapes)


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
    in_bounds = {name for node in sums for a in (*node.lower, *node.upper) for name in a.names}
    plain_reads = {}  # index name -> the sizes of the dimensions it is read at plainly
    for element in elements:
        for index, size in zip(element.indices, fn.shapes[element.name]):
            for name in index.names:
                plain_reads.setdefault(name, set()).add(size if plain_index(index) == name else None)
    inside = [node for node in sums if node.index not in in_bounds and _full_extent(node) is not None
              and plain_reads.get(node.index) == {_full_extent(node)}]
    if not inside or len(inside) == len(sums):
        return None
    contracted = {node.index for node in inside}
    extents, fresh, reads, orders = {}, {}, {}, []  # orders: per element its indices, "" for a contracted one
    for element in elements:
        indices, order = [], []
        for index, size in zip(element.indices, fn.shapes[element.name]):
            if plain_index(index) in contracted:
                indices.append(index)
                order.append("")
                continue
            name = plain_index(index) or fresh.get(index) or fresh.setdefault(index, fresh_name(f"{fn.name}_v", used))
            if extents.setdefault(name, size) != size:
                return None
            reads.setdefault(name, index)
            indices.append(Affine.index(name))
            order.append(name)
        body = replace(body, element, Element(element.name, tuple(indices)))
        orders.append(order)
    layout = _inner_layout(orders, reads, fn.indices[-1] if fn.indices else None)
    name = fresh_name(f"{fn.name}_p", used)
    shapes = {**fn.shapes, name: tuple(extents[n] for n in layout)}
    for node in reversed(inside):
        body = node.renewed(body=body)
    part = Function(name, tuple(layout), body, shapes)
    if contraction_of(part) is None or INNER_SHARE.exceeded(Fraction(typical_terms(part), typical_terms(fn))):
        return None
    kept = Element(name, tuple(reads[n] for n in layout))  # the sums left read it where they read the factors
    for node in reversed([node for node in sums if node.index not in contracted]):
        kept = node.renewed(body=kept)
    return part, Function(fn.name, fn.indices, kept, shapes)


def _inner_layout(orders: list[list[str]], reads: dict, lane: str | None) -> tuple[str, ...]:
    """The indices of :func:`inner_contraction`'s tensor: one factor's free indices, and the other's in their place
    where the first holds the contracted ones together (a convolution's ``[n; c; p; q; i; j]`` from ``dy[n; f; i;
    j]`` and ``w[f; c; p; q]``, a batched product), or after them; the first of these whose last index moves with
    the kernel's lanes (the last output index), so that the kernel reads it contiguously."""
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
