"""The map of the book: the chapters and what each builds on, drawn from ``bookdata.PREREQUISITES`` alone.

Run: .venv/bin/python benchmarks/book_map.py            (writes notebooks/figures/book_map.svg)
     .venv/bin/python benchmarks/book_map.py --check    (exit 1 if the committed picture is stale)

The chapters stand in columns by depth (the longest chain of prerequisites before them), so every arrow points to
the right. An arrow that a longer path already implies is left out (the transitive reduction): 05 needs 02, but
02 -> 03 -> 05 says so already. The picture keeps, for the tests, the table's digest in its metadata, an id
``node-<chapter>`` on every box and ``edge-<from>-<to>`` on every arrow.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch  # noqa: E402
from matplotlib.textpath import TextPath  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "notebooks"))
import bookdata  # noqa: E402

OUTPUT = ROOT / "notebooks" / "figures" / "book_map.svg"

#: A short title per chapter for the boxes (the chapters' own titles are too long to draw).
TITLES = {
    "01": "Introduction:\nsums, deltas,\nindex maps",
    "02": "Reverse\naccumulation",
    "03": "Tensor functions:\nvec, Jacobians",
    "04a": "Integer equations:\nSmith normal form",
    "04b": "Inequalities:\nFourier-Motzkin",
    "05": "Algorithm 4:\nelement-wise\nderivatives",
    "06a": "Kernels I:\ngenerated, checked",
    "06b": "Kernels II:\ngather vs scatter",
    "07": "Higher order;\nwhat the report\nleaves open",
    "08": "Inverse\naccumulation\n(Pearlmutter &\nSiskind)",
    "09a": "Jacobian chaining I\n(Naumann)",
    "09b": "Jacobian chaining\nII: tape bounds",
    "10": "Tensor programs,\ndata-dependent ops",
    "11": "Capstone: a CNN\ntrained with\nderived kernels",
    "12": "Build it yourself:\nthe core in\nfive functions",
}

#: The parts of the book, each a colour: (name, chapters, fill, edge).
PARTS = (
    ("the report: foundations (secs. 1-3)", ("01", "02", "03"), "#dbe9f6", "#2b6cb0"),
    ("the report: integer tools (sec. 4)", ("04a", "04b"), "#e3f1df", "#2f855a"),
    ("the report: the algorithm and its kernels (secs. 5-7)", ("05", "06a", "06b", "07"), "#fdebd3", "#c05621"),
    ("neighbouring papers", ("08", "09a", "09b"), "#ece4f6", "#6b46c1"),
    ("programs, capstone, build it yourself", ("10", "11", "12"), "#fbe0e6", "#b83280"),
)


def transitive_reduction(table: dict[str, tuple[str, ...]]) -> set[tuple[str, str]]:
    """The arrows (prerequisite, chapter) that no longer path implies."""

    def reachable(start: str) -> set[str]:
        seen, todo = set(), list(table[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(table[node])
        return seen

    edges = set()
    for chapter, needs in table.items():
        for need in needs:
            implied = any(need in reachable(other) for other in needs if other != need)
            if not implied:
                edges.add((need, chapter))
    return edges


def depths(table: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """The length of the longest chain of prerequisites before each chapter (raises on a cycle)."""
    depth: dict[str, int] = {}

    def visit(chapter: str, path: tuple[str, ...]) -> int:
        if chapter in path:
            raise ValueError(f"the prerequisites form a cycle: {' -> '.join(path + (chapter,))}")
        if chapter not in depth:
            depth[chapter] = 1 + max((visit(n, path + (chapter,)) for n in table[chapter]), default=-1)
        return depth[chapter]

    for chapter in table:
        visit(chapter, ())
    return depth


def layout(table: dict[str, tuple[str, ...]], edges: set[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Columns by depth; within a column, chapters ordered by the mean row of their neighbours (a few sweeps of
    the barycenter heuristic), which keeps crossings few."""
    depth = depths(table)
    columns: dict[int, list[str]] = {}
    for chapter in table:  # the table's order, i.e. the book's, breaks ties
        columns.setdefault(depth[chapter], []).append(chapter)
    rows = {c: float(i) for col in columns.values() for i, c in enumerate(col)}
    for sweep in range(6):
        order = sorted(columns) if sweep % 2 == 0 else sorted(columns, reverse=True)
        for d in order:
            def centre(c, d=d):
                near = [rows[a] for a, b in edges if b == c and depth[a] < d] if sweep % 2 == 0 else \
                       [rows[b] for a, b in edges if a == c and depth[b] > d]
                return sum(near) / len(near) if near else rows[c]
            columns[d].sort(key=lambda c: (centre(c), rows[c]))
            for i, c in enumerate(columns[d]):
                rows[c] = float(i)
    tallest = max(len(col) for col in columns.values())
    return {c: (float(d), (tallest - 1) / 2 - (i - (len(col) - 1) / 2))
            for d, col in columns.items() for i, c in enumerate(col)}


def draw(table: dict[str, tuple[str, ...]] | None = None) -> bytes:
    """The book map as SVG bytes: the same table gives the same bytes."""
    table = bookdata.PREREQUISITES if table is None else table
    missing = sorted(set(table) - set(TITLES))
    if missing:
        raise SystemExit(f"error: no short title for chapter(s) {missing} in TITLES of {Path(__file__).name}")
    edges = transitive_reduction(table)
    position = layout(table, edges)
    part_of = {c: part for part in PARTS for c in part[1]}

    plt.rcParams.update({"svg.hashsalt": "book-map", "svg.fonttype": "none", "font.family": "DejaVu Sans"})
    columns = 1 + max(x for x, _ in position.values())
    rows = 1 + max(y for _, y in position.values())
    dx, dy, w, h = 2.0, 1.5, 1.7, 1.2  # column and row pitch, box size (inches = data units)
    fig = plt.figure(figsize=(dx * columns + 0.3, dy * rows + 1.45))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-w / 2 - 0.15, dx * (columns - 1) + w / 2 + 0.15)
    ax.set_ylim(-h / 2 - 1.2, dy * (rows - 1) + h / 2 + 0.3)
    ax.axis("off")

    def box(c):
        x, y = position[c]
        return dx * x, dy * y

    for a, b in sorted(edges):
        (x0, y0), (x1, y1) = box(a), box(b)
        arrow = FancyArrowPatch((x0 + w / 2, y0), (x1 - w / 2, y1), arrowstyle="-|>", mutation_scale=20,
                                color="#4a5568", linewidth=1.6, shrinkA=2, shrinkB=3)
        arrow.set_gid(f"edge-{a}-{b}")
        ax.add_patch(arrow)
    titles = []
    for c in table:
        x, y = box(c)
        _, _, fill, edge = part_of[c]
        patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                               facecolor=fill, edgecolor=edge, linewidth=1.8)
        patch.set_gid(f"node-{c}")
        ax.add_patch(patch)
        ax.text(x, y + h / 2 - 0.2, c, ha="center", va="center", fontsize=16, fontweight="bold", color=edge)
        title = ax.text(x, y - 0.14, TITLES[c], ha="center", va="center", fontsize=11, color="#1a202c",
                        linespacing=1.2)
        titles.append((c, title))
    ax.legend(handles=[Patch(facecolor=fill, edgecolor=edge, label=name) for name, _, fill, edge in PARTS],
              loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=3, frameon=False, fontsize=10.5)
    ax.text(dx * (columns - 1) / 2, -h / 2 - 0.45, "An arrow points from a chapter to one that builds on it; "
            "read a chapter after every chapter with a path to it.", ha="center", va="center", fontsize=10,
            color="#4a5568", style="italic")

    for c, title in titles:  # a title wider than its box would run into the arrows: shorten it in TITLES
        width = max(TextPath((0, 0), line, size=title.get_fontsize(), prop=title.get_fontproperties())
                    .get_extents().width for line in title.get_text().split("\n")) / 72
        if width > w - 0.08:
            raise SystemExit(f"error: the title of {c} is {width:.2f} in wide, its box {w} in: break it in TITLES")
    out = io.BytesIO()
    fig.savefig(out, format="svg", metadata={
        "Title": "The map of the book: chapters and their prerequisites",
        "Description": f"drawn by benchmarks/book_map.py from bookdata.PREREQUISITES, "
                       f"digest {bookdata.prerequisites_digest()}",
        "Date": None})
    plt.close(fig)
    svg = out.getvalue()
    # text stays text (small, searchable, read aloud); a browser without DejaVu Sans gets another sans-serif
    svg = svg.replace(b"font-family: 'DejaVu Sans'", b"font-family: 'DejaVu Sans', 'Helvetica Neue', Arial, sans-serif")
    # no fixed size: the picture scales to the width of the page or slide it is shown on (the viewBox keeps its shape)
    return re.sub(rb'<svg ([^>]*?)width="[0-9.]+pt" height="[0-9.]+pt" ', rb'<svg \1width="100%" ', svg, count=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed picture")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    svg = draw()
    if args.check:
        if not args.output.exists() or args.output.read_bytes() != svg:
            print(f"{args.output} is stale: run .venv/bin/python benchmarks/book_map.py", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(svg)
    print(f"wrote {args.output} ({len(svg):,} bytes) from {len(bookdata.PREREQUISITES)} chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
