"""What the inverse-mode widgets share: colours, the formatting of numbers and vectors, the reading of a
typed vector, and redrawing only what changed on a cached figure background.
"""

from __future__ import annotations

import math
import re
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from tensoradbook.integer.matrix import shown
from .._common import canvas_png


_TABLE = "style='border-collapse:collapse;font-family:monospace;font-size:1em'"
_CELL = "style='padding:0.15em 0.4em;border-bottom:1px solid #ddd;text-align:right'"  # 9 columns fit 1280 px at scale 2


def number(value: float) -> str:
    """A number in at most 4 significant digits, ``-0`` shown as ``0``."""
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


def numbers(values) -> str:
    return "(" + ", ".join(number(float(v)) for v in values) + ")"


# A number as typed: ASCII digits (float() would also read '١٢', '1_0' and 'nan').
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def parse_vector(text, n: int, what: str) -> np.ndarray:
    """``n`` numbers typed as ``2, 3, 5`` (or spaces), or given as a sequence; ValueError says what is wrong."""
    if isinstance(text, str):
        tokens = [t for t in re.split(r"[,;\s()\[\]]+", text) if t]
        values = []
        for k, token in enumerate(tokens):
            if not _NUMBER.fullmatch(token):
                raise ValueError(f"{what}: entry {k} is {token!r}, not a number")
            values.append(float(token))
    else:
        try:
            values = [float(v) for v in text]
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{what}: expected {n} finite numbers, got {shown(text)}") from None
    if len(values) != n:
        raise ValueError(f"{what}: expected {n} numbers (one per register), got {len(values)}")
    bad = [k for k, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"{what}: entry {bad[0]} is {values[bad[0]]}, not a finite number")
    return np.array(values)


def blit_png(canvas: FigureCanvasAgg, background, artists) -> bytes:
    """Restore ``background``, draw ``artists`` on it once (they are removed again) and return the PNG.

    The static parts of a picture (axes, nodes, legend) are drawn once and kept
    as pixels (matplotlib's blitting): an interaction redraws only what changed,
    well inside 100 ms.
    """
    canvas.restore_region(background)
    for artist in artists:
        (artist.axes or canvas.figure).draw_artist(artist)
        artist.remove()
    return canvas_png(canvas)
