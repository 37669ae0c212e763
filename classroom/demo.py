"""The lecture demos: what each one shows, the gallery of their notebooks, and their first interactions.

The gallery ``demos/`` holds one short notebook per widget, generated from :data:`DEMOS` by
``python -m classroom.demo build``: the goal in two sentences, the widget, one task for the audience. Voila
hides the code. Widgets are drawn at the presentation scale (``TENSORADBOOK_WIDGET_SCALE``, see
``tensoradbook.widgets.set_scale``), and ``warm`` runs every demo once, with its first interaction, so that
Numba's disk cache holds every kernel before a fresh demo kernel needs it (``python -m classroom.demo warm``).
A demo's kernel imports this module for :func:`interact`, so it imports no more than the standard library; Voila
serves the demos and the slides (classroom/voila_serve.py).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path

from classroom.paths import NOTEBOOKS, REPO

DEMO_DIR = REPO / "demos"
SCALE_ENV = "TENSORADBOOK_WIDGET_SCALE"
DEFAULT_SCALE = "2"  # tensoradbook.widgets.PRESENTATION_SCALE, without importing the widgets here


@dataclass(frozen=True)
class Demo:
    """One demo: its file stem, title, the widget (an import and an expression), what it is for, the audience's
    task, the chapter it comes from, and its first interaction (:func:`interact`): ``button:<label>``,
    ``slider:<k>`` (the k-th slider one step up) or ``select:<k>`` (the k-th menu's next option)."""

    stem: str
    title: str
    widget: str
    make: str
    goal: str
    task: str
    chapter: str
    interaction: str


DEMOS = [
    Demo("01_smith_stepper", "Smith normal form, one operation at a time", "SmithStepper",
         "SmithStepper([[2, 4, 4], [-6, 6, 12], [10, -4, -16]])",
         "Algorithm 1 turns an integer matrix into its Smith normal form S = U A V using only unimodular row and "
         "column operations. U and V record every operation, so the integer solutions of A x = b can be read off.",
         "Before pressing Forward: which entry will be the first pivot, and why must it divide every other entry "
         "of its row and column by the end?", "04a_integer_equations", "button:Forward"),
    Demo("02_kernel_lattice", "All integer solutions in the index box", "KernelLattice",
         "KernelLattice([[2, -4]], (7, 5), beta=[-2])",
         "The integer solutions of A alpha = beta are alpha = I beta + K z, a shifted lattice. Only the points "
         "inside the index box are summed over in the gradient.",
         "Move beta: for which values are there no solutions at all, and why?", "04a_integer_equations", "slider:0"),
    Demo("03_polytope_view", "Fourier-Motzkin: loop bounds from inequalities", "PolytopeView",
         "PolytopeView([[1, -2, -2]], (12, 5, 5), beta=[3])",
         "The index box becomes a polytope in z-space, and Fourier-Motzkin elimination turns it into loop bounds. "
         "Each step removes one variable and keeps every integer point.",
         "Step through the elimination: which inequality gives the outer loop's upper bound?",
         "04b_fourier_motzkin", "slider:0"),
    Demo("04_graph_view", "Reverse accumulation on a graph", "GraphView",
         'GraphView("f[] = exp (sin (cos (x[]) * tanh (x[])))")',
         "Reverse accumulation sends the adjoint of the output back through the graph, one node at a time. Where "
         "a value is used twice, the adjoints of its uses add up.",
         "Before each step, say which node receives an adjoint next and what it is.",
         "02_reverse_accumulation", "button:Forward"),
    Demo("05_derivation_explorer", "Algorithm 4 for one argument", "DerivationExplorer",
         'DerivationExplorer(preset="sec. 6 example")',
         "Algorithm 4 turns the derivative of an element-wise tensor function into one closed-form expression "
         "per gradient element. Index matrices, Smith forms and loop bounds decide its sums and deltas.",
         "Pick the argument d: why does its derivative have a sum that f's expression does not?",
         "05_elementwise_derivatives", "select:1"),
    Demo("06_gradient_lab", "Gradient kernels, checked and timed", "GradientLab",
         'GradientLab(preset="sec. 6 example").prepare()',
         "The derived expressions compile to lock-free kernels, one thread per gradient element. They are checked "
         "against the reference evaluator and finite differences, and timed.",
         "Run the example: which argument's kernel is slowest, and why?", "06a_kernels", "button:Run"),
    Demo("07_step_inverse", "One step and its inverse", "StepInverse", "StepInverse(a=1.5, b=1.0)",
         "A binary step has a Jacobian J with partials a and b; inverse accumulation runs it backwards with "
         "J^-1. As a goes to 0 the inverse blows up.",
         "Slide a towards 0: which of the four flow graphs breaks first?", "08_inverse_accumulation", "slider:0"),
    Demo("08_register_machine", "The four sweeps of Fig. 2", "RegisterMachine",
         'RegisterMachine(mode="reverse_inverse")',
         "The program of Fig. 2 swept forward, in reverse, and in the two inverse modes, with its registers and "
         "tape. The reverse-inverse sweep computes J^-T v without forming J.",
         "Step through the sweep: when is the tape read, and when is it written?",
         "08_inverse_accumulation", "button:Forward"),
    Demo("09_newton_demo", "Newton's method with inverse sweeps", "NewtonDemo", "NewtonDemo()",
         "Newton's method needs J^-1 F at every step; the inverse sweep gives it without a Jacobian matrix. "
         "Its convergence is compared with a finite-difference Jacobian.",
         "Change the start point: when does Newton's method stop converging quadratically?",
         "08_inverse_accumulation", "slider:1"),
    Demo("10_lump_explorer", "Lumps and live values", "LumpExplorer", "LumpExplorer()",
         "A program with temporaries is cut into lumps along a topological order. The number of live values at "
         "each cut decides what inverse accumulation must keep.",
         "Choose another order: can you lower the largest number of live values?",
         "08_inverse_accumulation", "button:later ▶"),
    Demo("11_two_factor", "Eight schedules for two factors", "TwoFactorExplorer",
         'TwoFactorExplorer(preset="sec. 3 case 5: n₁=4, m₁=2, m₂=4")',
         "The Jacobian of F2 o F1 can be accumulated in eight ways, tangents or adjoints, products or "
         "preaccumulation. Their costs differ by the sizes of the factors.",
         "Change the sizes: when do adjoints win over tangents?", "09a_jacobian_chaining", "slider:0"),
    Demo("12_chain_table", "The dynamic programming table", "ChainTable", 'ChainTable(preset="sec. 5 example")',
         "Naumann's dynamic program fills a table diagonal by diagonal, each cell the best way to accumulate a "
         "sub-chain. Each cell's candidates show why it chose what it did.",
         "Step to the last diagonal: which split wins the whole chain?", "09a_jacobian_chaining", "button:Back"),
    Demo("13_schedule_view", "The chosen schedule as a tree", "ScheduleView",
         'ScheduleView(preset="sec. 5 example")',
         "The optimal schedule is a tree of products and sweeps. Beside it, the baselines show what plain "
         "tangent or adjoint mode would cost.",
         "Lower the memory bound: where does the tree change?", "09a_jacobian_chaining", "select:1"),
    Demo("14_memory_budget", "Cost against the tape bound", "MemoryBudget", 'MemoryBudget(preset="sec. 4: R⁸ → R")',
         "Adjoint sweeps need a tape, and memory is bounded. The paper's rule is compared with the exact optimum "
         "as the bound moves.",
         "Find a bound where the paper's rule is not optimal.", "09b_tape_bounds", "slider:0"),
    Demo("15_program_graph", "Reverse accumulation across definitions", "ProgramGraph", "ProgramGraph()",
         "A program of several definitions is a graph of tensors. Reverse accumulation visits the definitions "
         "from the last up; an intermediate read twice gets the sum of both contributions.",
         "Before each step: which tensors receive a contribution, and whose adjoint becomes complete?",
         "10_tensor_programs", "button:Forward"),
]


def _chapter_title(stem: str) -> str:
    import nbformat

    notebook = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    return notebook.cells[0].source.splitlines()[0].lstrip("# ").strip()


def _demo_notebook(demo: Demo):
    import nbformat

    chapter = _chapter_title(demo.chapter)
    cells = [
        nbformat.v4.new_markdown_cell(f"# {demo.title}\n\n{demo.goal}\n\n"
                                      f"*From {chapter}.* [All demos](index.ipynb)"),
        nbformat.v4.new_code_cell(f"from tensoradbook.widgets import {demo.widget}\n\ndemo = {demo.make}\ndemo"),
        nbformat.v4.new_markdown_cell(f"**Your task.** {demo.task}"),
    ]
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})


def _gallery_notebook():
    import nbformat

    rows = "\n".join(f"| [{d.title}]({d.stem}.ipynb) | `{d.widget}` | {_chapter_title(d.chapter)} |" for d in DEMOS)
    text = ("# tensoradbook: demos for the lecture hall\n\n"
            "One widget per page, drawn large enough for a hall to read; each page says its goal and gives the "
            "audience one task. The code is hidden; every widget is live.\n\n"
            "| demo | widget | chapter |\n|---|---|---|\n" + rows)
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])


def build(directory: Path = DEMO_DIR) -> list[Path]:
    """Write the gallery (``index.ipynb``) and one notebook per :data:`DEMOS` entry into ``directory``."""
    import nbformat  # only here: a demo kernel imports this module for interact() and should stay light

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, notebook in [("index", _gallery_notebook())] + [(d.stem, _demo_notebook(d)) for d in DEMOS]:
        path = directory / f"{name}.ipynb"
        for k, cell in enumerate(notebook.cells):
            cell.id = f"{name[:3].rstrip('_')}-{k}"  # stable ids: a rebuild changes nothing that did not change
        nbformat.validate(notebook)
        nbformat.write(notebook, path)
        written.append(path)
    return written


def _controls(widget, kind) -> list:
    """The controls of class ``kind`` in ``widget``'s tree, in the order a page shows them."""
    found, stack = [], [widget]
    while stack:
        node = stack.pop(0)
        if isinstance(node, kind):
            found.append(node)
        stack[:0] = list(getattr(node, "children", ()))
    return found


def interact(widget, interaction: str) -> None:
    """Do a demo's first interaction (see :class:`Demo`) from Python, as a user would in the page."""
    import ipywidgets as W

    kind, _, which = interaction.partition(":")
    if kind == "button":
        (button,) = [b for b in _controls(widget, W.Button) if b.description == which]
        button.click()
    elif kind == "slider":
        slider = _controls(widget, (W.IntSlider, W.FloatSlider, W.FloatLogSlider))[int(which)]
        if isinstance(slider, W.FloatLogSlider):
            slider.value = min(slider.value * slider.base ** slider.step, slider.base ** slider.max)
        else:
            slider.value = min(slider.value + slider.step, slider.max)
    elif kind == "select":
        menu = _controls(widget, W.Dropdown)[int(which)]
        options = list(menu.options)
        labels = [o[0] if isinstance(o, tuple) else o for o in options]
        menu.label = labels[(labels.index(menu.label) + 1) % len(labels) if menu.label in labels else 0]
    else:
        raise ValueError(f"unknown interaction {interaction!r}")


def warm(demos=DEMOS) -> dict[str, float]:
    """Make every demo's widget and press its first button once, so Numba's disk cache holds its kernels (a
    fresh kernel then loads them instead of compiling). Returns the seconds each took here."""
    import tensoradbook.widgets as widgets

    seconds = {}
    for demo in demos:
        start = time.perf_counter()
        # the expressions of DEMOS, written above; each names its widget alone (imported at first use)
        widget = eval(demo.make, {demo.widget: getattr(widgets, demo.widget)})
        interact(widget, demo.interaction)
        seconds[demo.stem] = time.perf_counter() - start
    return seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m classroom.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build", "warm"])
    args = parser.parse_args(argv)
    if args.command == "build":
        for path in build():
            print(f"wrote {path.relative_to(REPO)}")
        return
    os.environ.setdefault(SCALE_ENV, DEFAULT_SCALE)  # as the demos' kernels draw them
    for stem, seconds in warm().items():
        print(f"{stem}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
