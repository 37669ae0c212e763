"""Common subexpressions, found before printing: which operations a kernel computes once into a temporary.

A pass over an expression read as a tree: :class:`SubexpressionKeys` numbers each distinct subexpression (equal
subtrees, equal numbers), and :func:`shared` gives the :class:`Sharing` of a root, the numbers of the operations
that occur in it more than once. The kernel printer (:mod:`.printer`) reads both: it remembers what it wrote under
each node's number, and stores a repeated operation into a temporary the first time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lang.expr import Affine, Binary, Expr, Sum, Unary, postorder, substitute


class SubexpressionKeys:
    """A number per distinct subexpression, found once per node object (the node is kept alive with it).

    The nodes' own hashes walk their whole subtree every time: on the deep, widely shared trees of derivatives
    that costs the cube of the depth, and recursion as deep as the tree. So each node's number is found from its
    own fields and its children's numbers, children first, from an explicit stack.
    """

    def __init__(self):
        self._keys: dict[int, tuple[Expr, int]] = {}  # id -> (node, key)
        self._signatures: dict[tuple, int] = {}
        self._renamed: dict[int, tuple] = {}  # id of a reduction -> (it, its canonical index, its body renamed)

    def __call__(self, node: Expr) -> int:
        pending = [node]
        while pending:
            current = pending[-1]
            if id(current) in self._keys:
                pending.pop()
                continue
            fields, children = self._canonical(current)
            missing = [child for child in children if id(child) not in self._keys]
            if missing:
                pending += missing
                continue
            pending.pop()
            signature = (type(current), *fields, *(self._keys[id(child)][1] for child in children))
            self._keys[id(current)] = (current, self._signatures.setdefault(signature, len(self._signatures)))
        return self._keys[id(node)][1]

    def _canonical(self, node: Expr) -> tuple[tuple, tuple]:
        """``node``'s own fields and children as its key sees them: a reduction's index renamed by how many
        reductions its body holds (a name no tensor or index has), so sums equal but for the name of their
        index, as derivations write them (``max{s}`` and ``max{s_1}`` of the same terms), share one key and
        are computed once. Along a chain of nested reductions the counts differ, so no two indices meet."""
        if not isinstance(node, Sum):
            return node.own_fields(), node.children()
        if id(node) not in self._renamed:
            inner = sum(isinstance(part, Sum) for part in postorder(node.body))
            index = f"\0{inner}"
            self._renamed[id(node)] = (node, index, substitute(node.body, {node.index: Affine.index(index)}))
        _, index, body = self._renamed[id(node)]
        return (index, node.lower, node.upper, node.op), (body,)


@dataclass(frozen=True)
class Sharing:
    """What a printer computes once: ``repeated``, the keys (numbers of ``keys``) of the operations that occur more
    than once in the expressions shared so far."""

    keys: SubexpressionKeys = field(default_factory=SubexpressionKeys)
    repeated: frozenset[int] = frozenset()

    def is_repeated(self, node: Expr) -> bool:
        return self.keys(node) in self.repeated


def shared(root: Expr, sharing: Sharing | None = None) -> Sharing:
    """``sharing`` (by default none) and the operations that occur more than once in ``root``, read as a tree: a
    node object reached along two paths counts twice. Only operations count (``Unary``, ``Binary``): an element
    or a number is read where it is needed, and reductions and branches write temporaries of their own."""
    sharing = sharing or Sharing()
    order = _parents_first(root)
    count = {id(root): 1}  # occurrences in the tree, counted on the shared nodes, up to 2
    for node in order:
        for child in node.children():
            count[id(child)] = min(2, count.get(id(child), 0) + count[id(node)])
    total: dict[int, int] = {}
    for node in order:
        if isinstance(node, (Unary, Binary)):
            key = sharing.keys(node)
            total[key] = min(2, total.get(key, 0) + count[id(node)])
    repeated = {key for key, n in total.items() if n > 1}
    return Sharing(sharing.keys, sharing.repeated | repeated)


def _parents_first(root: Expr) -> list[Expr]:
    """Every node object below ``root`` once, each after all the nodes that have it as a child."""
    done, order, pending = set(), [], [(root, False)]
    while pending:  # depth first; finished nodes in reverse are a topological order
        node, expanded = pending.pop()
        if expanded:
            order.append(node)
        elif id(node) not in done:
            done.add(id(node))
            pending.append((node, True))
            pending.extend((child, False) for child in node.children() if id(child) not in done)
    return order[::-1]
