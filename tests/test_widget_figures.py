"""Static pictures of the widgets: every widget displays a PNG of what it shows beside its live view,
for GitHub's notebook view and the static site, and the site shows that picture with a caption.

Each widget is built as a chapter builds it. The pictures go to screenshots/widget-<Name>.png for a person to
look at.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import nbformat
import pytest
from PIL import Image

import tensoradbook.widgets as tw
from classroom import paths, site
from tensoradbook.widgets import picture, typeset
from tensoradbook.widgets.base import WIDGET_VIEW
from tensoradbook.widgets.graph import FIG1, sweep_picture
from alarm import time_limit

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "screenshots"

# As the chapters build them (00, 02, 04a, 04b, 05, 06a, 08, 09a, 09b, 10)
MADE = {
    "SmithStepper": lambda: tw.SmithStepper([[2, 4], [6, 8]]),
    "GraphView": lambda: tw.GraphView("f[] = sin (x[] ** 2) * cos (x[] ** 2)"),
    "KernelLattice": lambda: tw.KernelLattice([[2, -4]], (7, 5), beta=[-2]),
    "PolytopeView": lambda: tw.PolytopeView([[1, -2, -2]], (12, 5, 5), beta=[3]),
    "DerivationExplorer": lambda: tw.DerivationExplorer(preset="sec. 6 example"),
    "GradientLab": lambda: tw.GradientLab(preset="sec. 6 example"),
    "ProgramGraph": lambda: tw.ProgramGraph(),
    "StepInverse": lambda: tw.StepInverse(a=1.5, b=1.0),
    "RegisterMachine": lambda: tw.RegisterMachine(mode="reverse_inverse"),
    "NewtonDemo": lambda: tw.NewtonDemo(),
    "LumpExplorer": lambda: tw.LumpExplorer(),
    "TwoFactorExplorer": lambda: tw.TwoFactorExplorer(preset="sec. 3 case 5: n₁=4, m₁=2, m₂=4"),
    "ChainTable": lambda: tw.ChainTable(preset="sec. 5 example"),
    "ScheduleView": lambda: tw.ScheduleView(preset="sec. 5 example"),
    "MemoryBudget": lambda: tw.MemoryBudget(preset="sec. 4: R⁸ → R"),
}


def test_every_exported_widget_is_covered():
    exported = {name for name in tw.__all__ if isinstance(getattr(tw, name), type)}
    assert exported == set(MADE)


@pytest.mark.parametrize("name", sorted(MADE))
def test_widget_displays_its_picture_beside_its_view(name):
    widget = MADE[name]()
    with time_limit():  # a hang check: a picture takes well under a second
        bundle = widget._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == widget.model_id, "the live view must stay in the bundle"
    assert "text/plain" in bundle
    png = base64.b64decode(bundle["image/png"], validate=True)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    # big enough to show something, small enough to show at 100 % in a page about 1000 pixels wide
    assert 300 <= image.width <= typeset.MAX_WIDTH + 2 * picture.PAD and 100 <= image.height <= 2000, image.size
    # more than a frame: a good share of the pixels are drawn
    gray = image.convert("L")
    inked = sum(gray.histogram()[:200]) / (image.width * image.height)
    assert inked > 0.01, f"{name}: the picture is nearly empty"
    SCREENSHOTS.mkdir(exist_ok=True)
    (SCREENSHOTS / f"widget-{name}.png").write_bytes(png)


def test_the_picture_shows_what_the_widget_shows_when_displayed():
    view = tw.GraphView("f[] = exp (x[] * y[]) + sin (x[])")
    first = view._repr_mimebundle_()["image/png"]
    view.step = view.n_steps - 1
    assert view._repr_mimebundle_()["image/png"] != first


def test_a_failing_picture_leaves_the_live_view(monkeypatch):
    def broken(widget):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(picture, "picture_base64", broken)
    widget = tw.SmithStepper([[2, 4], [6, 8]])
    with pytest.warns(UserWarning, match="SmithStepper: no static picture"):
        bundle = widget._repr_mimebundle_()
    assert WIDGET_VIEW in bundle and "image/png" not in bundle


def test_text_laid_out():
    html = ("<p><b>Step 1</b> of <code>f</code>, $x^2$ and</p>$$S = \\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}$$"
            "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td style='text-align:right'>22</td></tr></table>"
            "<ul><li>one</li><li>two</li></ul><details><summary>more</summary>hidden</details>")
    image = typeset.html_picture(html, math=True)
    assert image.width > 100 and image.height > 5 * typeset.SIZE
    # the closed details shows its summary only: the same picture without its body
    same = html.replace("hidden", "")
    assert typeset.html_picture(same, math=True).tobytes() == image.tobytes()


def test_tex_helpers():
    assert typeset.split_top(r"a & {b & c} & \begin{pmatrix}1 & 2\end{pmatrix}", "&") == [
        "a ", " {b & c} ", r" \begin{pmatrix}1 & 2\end{pmatrix}"]
    # too wide for a line: cut at its top-level operators, each piece still TeX mathtext reads
    wide = " + ".join(rf"\left(a_{{{k}}} \cdot b_{{{k}}}\right)" for k in range(40))
    atoms = typeset.math_atoms(wide, typeset.Style(), width=300)
    assert len(atoms) > 1 and all(a.width <= 300 for a in atoms)
    # what mathtext cannot read is shown as its source, not dropped
    (atom,) = typeset.math_atoms(r"\unknowncommand{x}", typeset.Style())
    assert atom.width > 50
    assert picture._grid_columns("4em repeat(3, minmax(7.5em, max-content))") == 4


def test_site_shows_the_picture_with_a_badge():
    png = base64.b64encode(picture.picture_png(tw.SmithStepper([[2, 4], [6, 8]]))).decode()
    view = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "m1"}, "text/plain": "SmithStepper(…)"}
    nb = nbformat.v4.new_notebook(metadata={"widgets": {paths.WIDGET_STATE_MIME: {"state": {}}}})
    nb.cells = [nbformat.v4.new_code_cell("SmithStepper(A)", outputs=[
        nbformat.v4.new_output("display_data", data={**view, "image/png": png})])]
    assert site.show_widget_pictures(nb, site.parse_repository("a/b").binder_url("04a_integer_equations")) == 1
    page, _ = site.make_exporter().from_notebook_node(nb, resources={"site": {
        "assets": paths.ASSETS_URL, "mathjax_config": "", "icon_fonts": "", "binder_url": "", "prev": None,
        "next": None}})
    assert f'class="{site.PICTURE_CLASS}"' in page and f"data:image/png;base64,{png}" in page
    assert "static picture — <a " in page and "run the chapter</a> to use it" in page
    assert 'alt="Static picture of the SmithStepper widget' in page
    assert WIDGET_VIEW not in page and paths.WIDGET_STATE_MIME not in page, "no widget left to draw live"
    # a view without its picture is still drawn live from the stored state
    live = nbformat.v4.new_notebook(metadata={"widgets": {paths.WIDGET_STATE_MIME: {"state": {}}}})
    live.cells = [nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output("display_data", data=view)])]
    assert site.show_widget_pictures(live, "https://mybinder.org/") == 0 and "widgets" in live.metadata


def test_widget_counts(tmp_path):
    view = {WIDGET_VIEW: {"model_id": "m"}, "text/plain": "w"}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("w", outputs=[
        nbformat.v4.new_output("display_data", data=view),
        nbformat.v4.new_output("display_data", data={**view, "image/png": "iVBORw0KGgo="})])]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert site.widget_view_count(path) == 1 and site.widget_picture_count(path) == 1


def test_sweep_picture_is_the_graph_views_last_step():
    view = tw.GraphView(FIG1)
    view.step = view.n_steps - 1
    assert sweep_picture(FIG1) == view.image.value
    assert sweep_picture(FIG1, step=0) == tw.GraphView(FIG1).image.value
