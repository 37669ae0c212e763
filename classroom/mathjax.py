"""One MathJax for the pages the book writes: MathJax 3 from npm (``make install``, classroom/assets.py).

The static site's pages (classroom/site.py), the decks (classroom/deck.py) and the graded feedback
(classroom/grading.py) have their TeX typeset into SVG when they are written, in node (:func:`typeset_math`,
``site_math.js``), so that they read offline and from file://; a page that draws widget views live loads the same
MathJax to typeset what the views ask for (:data:`MATHJAX_URL`, :data:`MATHJAX_CONFIG`, :data:`MATHJAX_HUB`).
Voila's pages (the demos, the live slides) bring Voila's own MathJax 3.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from classroom.assets import asset
from classroom.paths import ASSETS_URL

# MathJax 3 in one file (every TeX package, SVG output: no font to fetch, no extension to load), for the math of
# widget views drawn live; the page's own math is typeset already (site_math.js), so it typesets only what they
# ask for, without its menu.
MATHJAX_URL = f"{ASSETS_URL}/mathjax/tex-svg-full.js"
MATHJAX_CONFIG = """window.MathJax = {
  tex: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true},
  svg: {fontCache: "global"},
  options: {enableMenu: false},
  startup: {typeset: false}
};"""
# The widget manager typesets a view's math with MathJax 2's call, MathJax.Hub.Queue(["Typeset", hub, element]).
MATHJAX_HUB = "MathJax.Hub = {Queue: (call) => MathJax.startup.promise.then(() => MathJax.typesetPromise([call[2]]))};"
#: Typesets the pages' TeX at build time (node, with MathJax 3 from classroom.assets).
SITE_MATH = Path(__file__).resolve().parent / "site_math.js"


def typeset_math(pages: list[Path]) -> None:
    """Typeset the TeX of ``pages`` in place (:data:`SITE_MATH`); warns of each formula MathJax rejects."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("error: the site's math is typeset with node at build time: apt-get install -y nodejs")
    done = subprocess.run([node, str(SITE_MATH), str(asset("mathjax", "es5")), *map(str, pages)],
                          capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: typesetting the math failed:\n{done.stderr.strip()}")
    for line in done.stdout.splitlines():
        report = json.loads(line)
        for tex in report["errors"]:
            print(f"warning: {Path(report['page']).name}: MathJax rejects ${tex}$", file=sys.stderr)
