"""The kernel representation (tensoradbook/codegen/kernel_ir.py): what the planner decides for a few subjects, and
that each target renders the same plan with its own spelling, every line written once (no text edited after
rendering). The developer's guide's example of adding a target runs as written."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.codegen import kernel_ir as ir
from tensoradbook.codegen.module import function_module, function_source, gradients_module, gradients_source
from tensoradbook.codegen.render import Renderer, render
from tensoradbook.codegen.targets import KERNEL_TARGETS, THREADS_PER_BLOCK
from tensoradbook.codegen.thresholds import MIN_LANES

REPO = Path(__file__).resolve().parents[1]

# a row of MIN_LANES lanes and more, too little work for threads or BLAS
LANES = ("f[i; j] = sum{k}_0^3 (a[i; k] * b[k; j])", {"f": (4, 16), "a": (4, 4), "b": (4, 16)})
# element-wise, one element at a time (a row shorter than MIN_LANES)
PLAIN = ("f[i; j] = x[i; j] * y[j; i] + 1", {"f": (3, 4), "x": (3, 4), "y": (4, 3)})
# a plain contraction of 64 * 64 * 128 element-terms: past BLAS_WORK
DENSE = ("f[i; j] = sum{k}_0^127 (a[i; k] * b[j; k])", {"f": (64, 64), "a": (64, 128), "b": (64, 128)})
# a padded convolution large enough for an im2col gather, a BLAS product over its padded copy and the gather
# kept by the forward pass for the filter's gradient
CONVOLUTION = ("y[n; f; i; j] = sum{c}_0^2 (sum{p}_0^4 (sum{q}_0^4 (if {i + p - 2 >= 0 and 65 - i - p >= 0 and "
               "j + q - 2 >= 0 and 65 - j - q >= 0} then (w[f; c; p; q] * x[n; c; i + p - 2; j + q - 2]) else (0))))",
               {"y": (8, 16, 64, 64), "w": (16, 3, 5, 5), "x": (8, 3, 64, 64)})


def nodes(root, kind):
    """Every node of type ``kind`` under ``root`` (its fields walked, tuples included)."""
    found, pending = [], [root]
    while pending:
        node = pending.pop()
        if isinstance(node, kind):
            found.append(node)
        if isinstance(node, tuple):
            pending += node
        elif hasattr(node, "__dataclass_fields__") and type(node).__module__ == ir.__name__:
            pending += [getattr(node, name) for name in node.__dataclass_fields__]
    return found


def test_a_plain_element_kernel():
    fn = tab.parse(*PLAIN)
    module = function_module(fn, KERNEL_TARGETS["numba"])
    (kernel,) = module.kernels
    assert kernel.name == "f_kernel" and kernel.params == ("x", "y", "_out")
    assert kernel.shapes == ((3, 4), (4, 3), (3, 4)) and not kernel.parallel and kernel.typed
    (loop,) = kernel.body
    assert isinstance(loop, ir.ElementLoop) and loop.count == 12 and loop.indices == ("i", "j")
    assert loop.unflatten == (ir.Unflatten(("i", "j"), (3, 4)),)
    (printed,) = loop.body
    store = printed.body[-1]
    assert isinstance(printed, ir.Statements) and not printed.lanes
    assert store == ir.Store(("i", "j"), store.value, shape=(3, 4))
    assert module.setup is None and module.table == ir.ArraysTable((("f_kernel", kernel.shapes),))
    (entry,) = module.entries
    assert entry.body == (ir.Allocate("f", (3, 4)), ir.Launch("f_kernel", ("x", "y", "f"), 12))
    assert entry.returns == ir.Return(("f",))


def test_each_target_renders_the_element_loop_its_way():
    """One plan's loop as each target spells it: numba a loop over element numbers, CUDA one thread each, numpy no
    loop at all but a grid; the body the printer wrote is the same lines in each."""
    fn = tab.parse(*PLAIN)
    sources = {name: function_source(fn, name) for name in ("numpy", "numba", "cuda")}
    assert "    for _element in range(12):\n        _flat = np.int64(_element)\n        i = _flat // 4" in \
        sources["numba"]
    assert "    _flat = cuda.grid(1)\n    if _flat < 12:\n        i = _flat // 4" in sources["cuda"]
    assert "    _GRID = (3, 4)\n    i, j, = np.indices(_GRID, sparse=True)\n" in sources["numpy"]
    assert "_out[...] = " in sources["numpy"] and "_out[i, j] = " in sources["numba"]
    assert f"f_kernel[{-(-12 // THREADS_PER_BLOCK)}, THREADS](x, y, f)" in sources["cuda"]
    for name in ("numba", "cuda"):
        (kernel,) = function_module(fn, KERNEL_TARGETS[name]).kernels
        printed = kernel.body[0].body[0]
        assert "\n".join(Renderer(KERNEL_TARGETS[name]).lines([printed], 2)) in sources[name]


def test_a_lanes_kernel():
    fn = tab.parse(*LANES)
    assert MIN_LANES.reached(16)
    (kernel,) = function_module(fn, KERNEL_TARGETS["numba"]).kernels
    (loop,) = kernel.body
    assert loop.count == 4 and loop.unflatten == (ir.Unflatten(("i",), (4,)),)  # one iteration per row
    (printed,) = loop.body
    store = printed.body[-1]
    assert printed.lanes and store.row is not None and store.row.name == "j" and store.row.width == 16
    assert printed.declarations and all(d.width == 16 for d in printed.declarations)
    # the numpy target computes no rows of lanes: the planner asked the target, not its name
    (grid,) = function_module(fn, KERNEL_TARGETS["numpy"]).kernels
    assert grid.body[0].body[-1].body[-1].row is None
    source = function_source(fn, "numba")
    declarations = "\n".join(Renderer(KERNEL_TARGETS["numba"]).lines(printed.declarations, 2))
    assert f"        i = _flat\n{declarations}\n" in source  # declared before the body, after the indices
    assert "        for j in range(16):\n            _out[i, j] = " in source


def test_a_blas_contraction():
    fn = tab.parse(*DENSE)
    module = function_module(fn, KERNEL_TARGETS["numba"])
    assert module.kernels == () and module.table == ir.ArraysTable(())
    (product,) = module.entries[0].body
    assert isinstance(product, ir.BlasProduct) and product.out == "f" and product.contraction.operands == ("a", "b")
    source = function_source(fn, "numba")
    product_line = "    f = (a.reshape(-1, 128) @ b.reshape(-1, 128).T).reshape((64, 64))  # a plain contraction: BLAS"
    assert product_line in source
    # CUDA plans no BLAS: the same function is one kernel there
    cuda = function_module(fn, KERNEL_TARGETS["cuda"])
    assert [k.name for k in cuda.kernels] == ["f_kernel"] and not nodes(cuda, ir.BlasProduct)


@pytest.mark.parametrize("target", ["numba-scatter", "cuda-scatter"])
def test_a_scatter_target(target):
    """Eq. 40's module: the gradients start from zero, the scatter kernel adds into them; no gather kernels."""
    fn = tab.parse(*PLAIN)
    module = gradients_module(tab.derive(fn).simplified, KERNEL_TARGETS[target])
    assert [k.name for k in module.kernels] == ["f_kernel", "scatter"]
    scatter = module.kernels[1]
    assert isinstance(scatter.body[0], ir.ScatterLoop) and scatter.body[0].count == 12 and not scatter.parallel
    assert scatter.params[-2:] == ("dx", "dy")
    backward = module.entries[-1]
    assert backward.body[:2] == (ir.Allocate("dx", (3, 4), "zeroed"), ir.Allocate("dy", (4, 3), "zeroed"))
    assert backward.body[-1] == ir.Launch("scatter", (*scatter.params[:-2], "dx", "dy"), 12)
    assert backward.returns == ir.ReturnGradients((("x", "dx"), ("y", "dy")))
    source = gradients_source(tab.derive(fn).simplified, target)
    accumulate = "cuda.atomic.add(dx, " if target == "cuda-scatter" else "dx[np.uint64(i), np.uint64(j)] += "
    assert accumulate in source


def test_a_cuda_launch_and_its_device_arrays():
    """CUDA's spelling of the same nodes: launches over blocks of THREADS, arrays allocated on the device (zeroed
    ones copied there), no errstate guard (no numpy arithmetic runs in its entry points)."""
    fn = tab.parse(*PLAIN)
    grads = tab.derive(fn).simplified
    gather = gradients_module(grads, KERNEL_TARGETS["cuda"])
    launches = nodes(gather.entries[-1], ir.Launch)
    assert {launch.kernel for launch in launches} == {"dx_kernel", "dy_kernel"}
    source = gradients_source(grads, "cuda")
    for launch in launches:
        blocks = -(-launch.size // THREADS_PER_BLOCK)
        assert f"    {launch.kernel}[{blocks}, THREADS]({', '.join(launch.args)})" in source
    assert "dx = cuda.device_array((3, 4))" in source and "errstate" not in source
    assert "dx = cuda.to_device(np.zeros((3, 4)))" in gradients_source(grads, "cuda-scatter")
    assert set(gather.compiled_kernels()) == {"f_kernel", "dx_kernel", "dy_kernel"}
    assert gather.compiled_kernels()["f_kernel"] == {"x": (3, 4), "y": (4, 3), "_out": (3, 4)}
    assert gather.table is None  # CUDA types its kernels at their first launch


def test_the_kept_fallback_and_the_guarded_product_are_nodes():
    """The backward pass reads the forward pass's gathers where given (FillKept), and the product over a padded
    copy only where the other factor is finite (GuardedProduct): nodes whose rendering holds their parts'
    renderings one level deeper, unchanged."""
    fn = tab.parse(*CONVOLUTION)
    target = KERNEL_TARGETS["numba"]
    module = gradients_module(tab.derive(fn).simplified, target)
    backward = module.entries[-1]
    kept = nodes(backward, ir.FillKept)
    assert sorted(node.kept for node in kept) == ["x_pad", "y_g"]
    assert backward.params[-2:] == ("x_pad=None", "y_g=None")
    (guarded,) = [node for node in nodes(backward, ir.GuardedProduct) if node.product.out == "dw"]
    assert guarded.finite == ("dy",) and nodes(guarded.fallback, ir.Launch)[0].kernel == "dw_kernel"
    assert not next(k for k in module.kernels if k.name == "dw_kernel").typed  # compiled where it is needed
    renderer = Renderer(target)
    for node in (*kept, guarded):
        inner = node.compute if isinstance(node, ir.FillKept) else node.fallback
        lines = renderer.lines([node], 2)
        assert "\n".join(renderer.lines(inner, 3)) in "\n".join(lines)
    scratch = [node for node in nodes(module, ir.Allocate) if node.how == "scratch"]
    assert {node.name for node in scratch} == {"x_pad", "y_g"} and module.setup == ir.ScratchSetup()
    assert "x_pad = _scratch.array('x_pad', (8, 3, 68, 68))" in render(module, target)


def test_a_product_the_forward_pass_keeps_is_read_where_given():
    """A dense layer's gradient reads ``x w^T`` again: the backward pass takes the forward pass's product where the
    caller gave it (ReadKept), else computes it into a scratch array."""
    fn = tab.parse("y[i; j] = exp (sum{k}_0^255 (x[i; k] * w[j; k])) * b[j]",
                   {"y": (256, 256), "x": (256, 256), "w": (256, 256), "b": (256,)})
    target = KERNEL_TARGETS["numba"]
    grads = tab.derive(fn).simplified
    module = gradients_module(grads, target)
    (kept,) = nodes(module, ir.ReadKept)
    (product,) = kept.otherwise
    assert kept.kept == "y_c" and product.into_scratch and product.contraction.operands == ("x", "w")
    assert module.entries[1].returns == ir.Return(("y", "y_c"), every=True)  # _values hands it over
    assert module.entries[-1].params[-1] == "y_c=None"
    source = gradients_source(grads, "numba")
    fallback = f"        if y_c is not None:\n            {kept.out} = y_c\n        else:\n            {kept.out} = np."
    assert fallback in source


@pytest.mark.parametrize("target", ["numpy", "numba", "cuda", "numba-scatter", "cuda-scatter"])
@pytest.mark.parametrize("subject", [PLAIN, LANES, DENSE])
def test_a_module_is_its_pieces_rendered_once(subject, target):
    """Each top-level piece's rendering stands in the source verbatim, in the plan's order, and nothing else does
    but blank lines: nothing rendered is edited, moved or indented again afterwards."""
    fn = tab.parse(*subject)
    kind = KERNEL_TARGETS[target]
    module = gradients_module(tab.derive(fn).simplified, kind)
    renderer = Renderer(kind)
    source = render(module, kind)
    position, covered = 0, 0
    for piece in (module.header, module.setup, *module.kernels, *module.entries, module.table):
        if piece is not None:
            text = "\n".join(renderer.lines([piece]))
            found = source.find(text, position)
            assert found >= position, (type(piece).__name__, text[:200])
            position = found + len(text)
            covered += len(text)
    assert len(source) - covered == source.count("\n\n\n") * 3 + 1  # two blank lines between pieces, one at the end


def test_the_planner_and_compile_name_no_target():
    """module.py, compile.py and the gradient lab compare no target's name: they ask the target."""
    names = set(KERNEL_TARGETS)
    for path in ("tensoradbook/codegen/module.py", "tensoradbook/codegen/compile.py", "widgets/gradient_lab.py"):
        tree = ast.parse((REPO / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                texts = [part.value for part in (node.left, *node.comparators)
                         if isinstance(part, ast.Constant) and isinstance(part.value, str)]
                assert not [t for t in texts if t in names or "numba" in t or "cuda" in t], (path, ast.unparse(node))
            assert not (isinstance(node, ast.Attribute) and node.attr in ("vector", "scatter")), (path, node.attr)


def readme_example() -> str:
    """The Python block of the developer's guide's section "How the code is laid out"."""
    readme = (REPO / "docs" / "developer.md").read_text()
    section = readme.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return block


def test_the_readme_example_adds_a_target():
    """The developer's guide's serial Numba target plans, renders, compiles and computes the function's values."""
    code = readme_example()
    assert 20 <= len(code.splitlines()) <= 40
    scope: dict = {}
    exec(compile(code, "docs/developer.md", "exec"), scope)  # noqa: S102 -- the guide's own example
    source, result = scope["source"], scope["result"]
    assert "numba.prange" not in source and "parallel=True" not in source and "for _flat in range(" in source
    fn = scope["fn"]
    np.testing.assert_allclose(result, fn.evaluate(scope["args"]), rtol=1e-12)
