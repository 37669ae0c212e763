"""Multilinear contractions handed to BLAS: ``f[i; j] = sum{k}_0^(n-1) (a[i; k] * b[k; j])`` as ``np.einsum``.

A definition whose body is, up to constant factors, a product of tensor elements under sums, each
element read at plain indices (one index each, no offset, no coefficient) and each sum over the whole
extent of every dimension its index reads, is a tensor contraction: numpy's ``einsum`` with
``optimize=True`` evaluates it as matrix products (BLAS, through ``tensordot``) in the best order of
pairwise contractions. A gather kernel would run one dot product per element, which the compiler cannot
vectorise without reordering the additions. Matrix products, dense layers, the scores and outputs of
attention, and the gradients Algorithm 4 derives for them (``da[i; k] = sum{j} (df[i; j] * b[k; j])``)
all have this form.

A contraction inside a larger expression (``log (1 + exp (sum{k}_0^127 (w[j; k] * x[i; k]) + b[j]))``, a
dense layer) is split off by :func:`split_contractions` into a tensor of its own, which BLAS computes and the
element-wise kernel then reads. Whatever is not of that form (conditions, offsets, strides, partial ranges,
functions of the product) stays in the element-wise kernels: the report's Kronecker deltas and loop bounds
decide what each definition is, this only recognizes the plain contractions in it.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

from ..lang.evaluate import element_terms
from ..lang.expr import Affine, Binary, Element, Expr, Number, Sum, free_indices, postorder, replace
from ..lang.function import Function
from ..lang.names import fresh_name

#: einsum's subscript letters
LETTERS = string.ascii_letters


@dataclass(frozen=True)
class Contraction:
    """``scale * einsum(subscripts, *operands)``: the operands are the names of the tensors read, in order."""

    subscripts: str
    operands: tuple[str, ...]
    scale: float | int = 1

    def code(self, operands: list[str]) -> str:
        """numpy code of the contraction over the operands' texts, C-contiguous. Two operands whose free
        indices are the output's, in order (``a[i; k] * b[j; k]`` -> ``[i; j]``, or swapped), are one
        ``np.tensordot``: a BLAS product written straight into a row-major result, where ``einsum`` may give a
        transposed view that then costs a copy as long as the product. Anything else is ``np.einsum``."""
        inputs, output = self.subscripts.split("->")
        terms = inputs.split(",")
        value = None
        if len(terms) == 2 and all(len(set(t)) == len(t) for t in (*terms, output)):
            summed = [letter for letter in terms[0] if letter in terms[1] and letter not in output]
            free = [[letter for letter in t if letter not in summed] for t in terms]
            batch = set(free[0]) & set(free[1])
            for first, second in ((0, 1), (1, 0)):
                if not batch and "".join(free[first] + free[second]) == output:
                    axes = ([terms[first].index(x) for x in summed], [terms[second].index(x) for x in summed])
                    value = f"np.tensordot({operands[first]}, {operands[second]}, axes={axes!r})"
                    break
        if value is None:
            value = f"np.ascontiguousarray(np.einsum({self.subscripts!r}, {', '.join(operands)}, optimize=True))"
        return value if self.scale == 1 else f"{self.scale!r} * {value}"


#: a contraction split off a definition: the tensor it makes, and how
Part = tuple[Function, Contraction]


def _plain(index) -> str | None:
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


def contraction_of(fn: Function) -> Contraction | None:
    """``fn`` as a contraction, or None where its body is not a plain one (see the module's docstring)."""
    shape = tuple(fn.shapes[fn.name])
    if not shape:  # kernels store a scalar as one element; leave scalars to them
        return None
    body, extents = fn.body, dict(zip(fn.indices, shape))
    summed = []
    while isinstance(body, Sum):
        if body.op != "sum" or len(body.lower) != 1 or len(body.upper) != 1:
            return None
        low, high = body.lower[0], body.upper[0]
        if not (low.is_constant and high.is_constant) or low.offset != 0 or body.index in extents:
            return None
        extents[body.index] = int(high.offset) + 1
        summed.append(body.index)
        body = body.body
    factors = _factors(body)
    if not summed or factors is None:
        return None
    elements = [f for f in factors if isinstance(f, Element)]
    if not elements or any(not fn.shapes[e.name] for e in elements):
        return None
    letters, read = {}, set()
    terms = []
    for element in elements:
        names = [_plain(index) for index in element.indices]
        if any(name is None or name not in extents for name in names):
            return None
        if any(extents[name] != size for name, size in zip(names, fn.shapes[element.name])):
            return None  # a sum over part of a dimension, or an index past the output's extent
        read.update(names)
        terms.append("".join(letters.setdefault(name, LETTERS[len(letters) % len(LETTERS)]) for name in names))
    if len(letters) > len(LETTERS) or not set(fn.indices) <= read or not set(summed) <= read:
        return None  # an output index no element reads would need a broadcast; an unread sum a count
    scale = math.prod(f.value for f in factors if isinstance(f, Number))
    output = "".join(letters[name] for name in fn.indices)
    return Contraction(f"{','.join(terms)}->{output}", tuple(e.name for e in elements), scale)


def split_contractions(fn: Function, used: set[str], minimum: int) -> tuple[list[Part], Function]:
    """The outermost sums of ``fn``'s body that are plain contractions of at least ``minimum`` element-terms,
    each a :class:`Function` of its own over the output indices it keeps (named fresh in ``used``), and ``fn``
    reading those tensors in their place. ``fn`` itself, and no parts, where there is none or where the
    whole body is the contraction (:func:`contraction_of` covers that)."""
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
        found = contraction_of(part)
        if found is None or element_terms(part) < minimum:
            used.discard(name)
            continue
        parts.append((part, found))
        shapes[name] = part.shapes[name]
        body = replace(body, node, Element(name, tuple(Affine.index(i) for i in kept)))
    if not parts:
        return [], fn
    return parts, Function(fn.name, fn.indices, body, shapes)
