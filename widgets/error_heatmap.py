"""The per-element error heatmap of GradientLab: |kernel - finite difference| of every gradient element,
one panel per argument on a shared logarithmic colour scale, redrawn on a cached figure background.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter

from ._common import canvas_png, figure_dpi

HEATMAP_WIDTH, HEATMAP_ROW, HEATMAP_TOP = 8.0, 2.3, 0.6  # inches: width, per row of panels, title
MAX_WIDTH_PX = 1200  # two columns only where they fit a 1280-pixel screen at the current scale


def shape_text(shape) -> str:
    """``3×4``, or "scalar"."""
    return "×".join(str(n) for n in shape) or "scalar"


def _panel(values: np.ndarray) -> tuple[np.ndarray, str, str, str]:
    """A tensor as a 2-D image with its axis labels and a note: 1-D as one row, 3-D+ rows flattened."""
    if values.ndim == 0:
        return values.reshape(1, 1), "", "", ""
    if values.ndim == 1:
        return values.reshape(1, -1), "", "index 0", ""
    if values.ndim == 2:
        return values, "index 0", "index 1", ""
    last = values.ndim - 1
    return (values.reshape(-1, values.shape[-1]), f"indices 0–{last - 1} (flattened)", f"index {last}",
            f"{values.ndim}-D, rows flattened")


def heatmap_columns(n_panels: int) -> int:
    """Panels side by side: two, or one for a single panel and at a scale where two would not fit the screen."""
    return 2 if n_panels > 1 and HEATMAP_WIDTH * figure_dpi() <= MAX_WIDTH_PX else 1


def heatmap_width(n_panels: int) -> float:
    """The heatmap's width in inches: two columns of panels, or one."""
    return HEATMAP_WIDTH if heatmap_columns(n_panels) == 2 else HEATMAP_WIDTH * 0.6


def _color_range(errors: dict[str, np.ndarray]) -> tuple[float, float]:
    """Whole decades from below the smallest nonzero error (at most 8 decades down) to above the largest."""
    positive = np.concatenate([e[e > 0].ravel() for e in errors.values()] + [np.zeros(0)])
    top = float(positive.max()) if positive.size else 1e-16
    bottom = max(float(positive.min()) if positive.size else top, top * 1e-8)
    bottom, top = 10.0 ** math.floor(math.log10(bottom)), 10.0 ** math.ceil(math.log10(top))
    return (top / 10, top) if bottom >= top else (bottom, top)


class _HeatmapFrame:
    """A heatmap figure drawn once, then reused: later pictures with the same panels, titles and colour
    range only redraw the cells over the kept pixels (matplotlib's blitting), which takes a few ms
    where drawing the axes, ticks and colour bar afresh takes a few hundred."""

    def __init__(self, panels: tuple, title: str, color_range: tuple[float, float]):
        names = [name for name, _, _ in panels]
        cols = heatmap_columns(len(names))
        rows = -(-len(names) // cols)
        self.width, height = heatmap_width(len(names)), HEATMAP_TOP + HEATMAP_ROW * rows
        self.figure = Figure(figsize=(self.width, height), dpi=figure_dpi())
        self.canvas = FigureCanvasAgg(self.figure)
        self.bottom = color_range[0]
        norm = LogNorm(*color_range, clip=True)
        # Panels left of the colour bar; margins in inches, so any number of rows fits.
        bar_left = 1 - 1.15 / self.width
        grid = self.figure.add_gridspec(rows, cols, left=0.75 / self.width, right=bar_left - 0.35 / self.width,
                                        top=1 - HEATMAP_TOP / height, bottom=0.45 / height,
                                        hspace=0.85 / (HEATMAP_ROW - 0.85), wspace=0.3)
        self.images = []
        for k, (_, shape, heading) in enumerate(panels):
            ax = self.figure.add_subplot(grid[k // cols, k % cols])
            values, ylabel, xlabel, _ = _panel(np.zeros(shape))
            image = ax.imshow(np.full(values.shape, self.bottom), norm=norm, cmap="viridis",
                              interpolation="nearest", aspect="auto")
            # square cells where the shape allows; long vectors become thin strips, not blocks
            ax.set_box_aspect(min(3.0, max(0.1, values.shape[0] / values.shape[1])))
            ax.set_title(heading, fontsize=10)
            ax.set_xlabel(xlabel, fontsize=9)
            ax.set_ylabel(ylabel, fontsize=9)
            ax.tick_params(labelsize=8)
            if values.size == 1:
                ax.set_xticks([])
            else:
                ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
            if values.shape[0] == 1:
                ax.set_yticks([])
            else:
                ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
            self.images.append(image)
        bar = self.figure.add_axes((bar_left, 0.45 / height, 0.022 * HEATMAP_WIDTH / self.width,
                                    1 - (HEATMAP_TOP + 0.45) / height))
        colorbar = self.figure.colorbar(self.images[0], cax=bar)
        colorbar.ax.yaxis.set_minor_formatter(NullFormatter())
        colorbar.set_label("|kernel − central difference|", fontsize=9)
        colorbar.ax.tick_params(labelsize=8)
        if title:
            self.figure.suptitle(title, fontsize=11, x=(bar_left + 0.3 / self.width) / 2, y=1 - 0.08 / height,
                                 va="top")
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.figure.bbox)

    def png(self, arrays: list[np.ndarray]) -> bytes:
        self.canvas.restore_region(self.background)
        for image, values in zip(self.images, arrays):
            image.set_data(np.maximum(_panel(np.asarray(values, dtype=np.float64))[0], self.bottom))
            image.axes.draw_artist(image)
            for spine in image.axes.spines.values():  # the cells cover the inner half of the frame
                image.axes.draw_artist(spine)
        return canvas_png(self.canvas)


@lru_cache(maxsize=4)
def _heatmap_frame(panels: tuple, title: str, color_range: tuple[float, float], dpi: float) -> _HeatmapFrame:
    """A frame per layout, colour range and dpi (the scale it was made at)."""
    return _HeatmapFrame(panels, title, color_range)


def error_heatmap(errors: dict[str, np.ndarray], title: str = "", sizes: dict | None = None) -> bytes:
    """One panel per argument of ``|kernel - central differences|`` per element, on one log colour scale
    of whole decades (exact zeros are drawn at its bottom): 1-D arguments as one row, 3-D and more with
    their leading indices flattened into rows. ``sizes`` (argument -> largest ``|gradient|``) goes into
    the panel titles: what the errors compare to. A fixed layout (matplotlib's constrained layout
    re-solves every panel on each draw), kept for the next picture with the same panels."""
    panels = []
    for name, values in errors.items():
        shape = tuple(np.shape(values))
        note = _panel(np.zeros(shape))[3]
        heading = f"d{name} ({shape_text(shape)}{', ' + note if note else ''})"
        if sizes is not None:
            heading += f", |d{name}| ≤ {sizes[name]:.1e}"
        panels.append((name, shape, heading))
    frame = _heatmap_frame(tuple(panels), title, _color_range(errors), figure_dpi())
    return frame.png(list(errors.values()))
