"""Names in generated code and derivations: fresh names that clash with nothing the user wrote.

The notation keeps tensors and indices apart (``f[x] = x[x]`` is legal), but generated code has one
namespace, and the derivation liberates every sum (report sec. 5.2), so two sums over ``k`` must become
``k`` and ``k_1``. :func:`apart` makes a function's names distinct; :func:`fresh_name` gives the
derivation's adjoints, gradients and kernel temporaries names that no user name can shadow.
"""

from __future__ import annotations

from .expr import Affine, Expr, Sum, postorder, rebuild, substitute, with_children
from .function import Function


def fresh_name(base: str, used: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``used``, which then holds it."""
    name, n = base, 1
    while name in used:
        name, n = f"{base}_{n}", n + 1
    used.add(name)
    return name


def _unique_sums(node: Expr, used: set[str]) -> Expr:
    """Rename sum indices so that each sum of the function has its own (sec. 5.2 liberates them),
    fresh in ``used``, outer sums first; unchanged subtrees are kept as they are."""
    with_sums: set[int] = set()  # ids of the nodes with a sum below: nothing to rename elsewhere

    def mark(current, below):
        if isinstance(current, Sum) or any(below):
            with_sums.add(id(current))
            return True
        return False

    rebuild(node, mark)
    results: list[Expr] = []
    pending = [(node, None, False)]
    while pending:  # a stack instead of recursion: derivative trees are deep
        current, name, expanded = pending.pop()
        children = current.children()
        if id(current) not in with_sums:
            results.append(current)
            continue
        if not expanded:
            name = fresh_name(current.index, used) if isinstance(current, Sum) else None
            pending.append((current, name, True))
            pending.extend((child, None, False) for child in reversed(children))
            continue
        rebuilt = results[len(results) - len(children):]
        del results[len(results) - len(children):]
        if isinstance(current, Sum) and name != current.index:
            body = substitute(rebuilt[0], {current.index: Affine.index(name)})
            current = current.renewed(index=name, body=body)
        else:
            current = with_children(current, rebuilt)
        results.append(current)
    return results[0]


def all_names(fn: Function) -> set[str]:
    """Every name in ``fn``: its tensors (output and arguments), output indices and sum indices."""
    sums = {node.index for node in postorder(fn.body) if isinstance(node, Sum)}
    return set(fn.indices) | set(fn.shapes) | sums


def apart(fn: Function) -> Function:
    """``fn`` with its index names apart from its tensor names and each sum with an index of its own.

    The notation tells the index of ``f[x] = x[x]`` from the tensor, but
    generated code has one namespace, and the derivation liberates every sum
    (sec. 5.2), so two sums over ``k`` must become ``k`` and ``k_1``.
    Clashing names are renamed fresh; ``fn`` itself where nothing clashes.
    """
    taken = all_names(fn)
    renamed = {i: fresh_name(i, taken) for i in fn.indices if i in fn.shapes}
    indices = tuple(renamed.get(i, i) for i in fn.indices)
    body = substitute(fn.body, {old: Affine.index(new) for old, new in renamed.items()})
    body = _unique_sums(body, set(indices) | set(fn.shapes))
    if indices == fn.indices and body is fn.body:
        return fn
    return Function(fn.name, indices, body, fn.shapes, fn.source)
