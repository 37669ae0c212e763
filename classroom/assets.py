"""Browser assets for lecture halls without a network: fetched from the npm registry at ``make install`` time
(``npm pack``, by exact version), never from a CDN while a page is shown.

``python -m classroom.assets`` fills :data:`ASSETS` (inside ``.venv/``); :func:`asset` finds one file there
and says how to get it when it is missing. MathJax 3 (classroom/mathjax.py: the site, the decks, the feedback)
comes from npm, the reveal.js script from Voila's own wheel; npm brings what no PyPI package ships.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from classroom.paths import REPO

#: Where the fetched assets live: next to the interpreter that runs the book.
ASSETS = Path(sys.prefix) / "share" / "tensoradbook" / "assets"

#: npm package -> (exact version, the files to keep, relative to the package root). reveal.js matches the
#: reveal.js script that Voila 0.5 bundles (6.0.1), whose style sheets it does not ship; the slides run their own
#: copy of the script (and the speaker notes plugin) to set options that Voila's fixes (classroom/voila_slides).
NPM_PACKAGES = {
    "reveal.js": ("6.0.1", ["dist/reveal.css", "dist/theme/white.css", "dist/reveal.js", "dist/plugin/notes.js"]),
    "@jupyter-widgets/html-manager": ("1.0.15", ["dist/embed-amd.js"]),
    "requirejs": ("2.3.7", ["require.js"]),
    "jquery": ("3.7.1", ["dist/jquery.min.js"]),
    # MathJax 3's components, which `make site` runs in node to typeset the pages at build time (classroom/site_math.js)
    "mathjax": ("3.2.2", ["es5"]),
}


VOILA_TEMPLATES = Path(sys.prefix) / "share" / "jupyter" / "voila" / "templates"
#: The Voila template of ``make demo``: Voila's lab template without links to a CDN.
DEMO_TEMPLATE = "tensoradbook-demo"
#: The Voila template of ``make slides``: Voila's reveal template with local jQuery and reveal.js style sheets.
SLIDES_TEMPLATE = "tensoradbook-slides"
SLIDES_TEMPLATE_DIR = VOILA_TEMPLATES / SLIDES_TEMPLATE


class MissingAsset(RuntimeError):
    """An asset that ``make install`` should have fetched is not there."""


def package_dir(package: str) -> Path:
    return ASSETS / package


def asset(package: str, relative: str) -> Path:
    """The path of one fetched file, or a :class:`MissingAsset` that says how to fetch it."""
    path = package_dir(package) / relative
    if not path.exists():
        raise MissingAsset(f"{path} is missing: run `make install` (or `{sys.executable} -m classroom.assets`), "
                           f"which fetches {package} from the npm registry")
    return path


def fetch(npm: str = "npm") -> None:
    """Fetch every package of :data:`NPM_PACKAGES` not yet in :data:`ASSETS` (a version stamp per package)."""
    if shutil.which(npm) is None:
        raise SystemExit("error: npm is needed once, at install time, to fetch reveal.js and the widget "
                         "manager for offline slides and the static site: apt-get install -y npm")
    for package, (version, keep) in NPM_PACKAGES.items():
        target = package_dir(package)
        stamp = target / ".version"
        if stamp.exists() and stamp.read_text() == version and all((target / k).exists() for k in keep):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([npm, "pack", "--silent", f"{package}@{version}", "--pack-destination", tmp],
                           check=True, stdout=subprocess.DEVNULL)
            (tarball,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tarball) as archive:
                archive.extractall(tmp, filter="data")
            if target.exists():
                shutil.rmtree(target)
            for relative in keep:
                source = Path(tmp) / "package" / relative
                destination = target / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                if source.is_dir():
                    shutil.copytree(source, destination)
                else:
                    shutil.copy2(source, destination)
        stamp.write_text(version)
        print(f"fetched {package}@{version} into {target}")


def install_voila_templates() -> None:
    """Put :data:`DEMO_TEMPLATE` (``classroom/voila_demo``) and :data:`SLIDES_TEMPLATE` (``classroom/voila_slides``)
    where Voila finds templates, the latter with the fetched reveal.js style sheets and jQuery in its static
    folder (served at ``voila/templates/<name>/static/``)."""
    for name, source in ((DEMO_TEMPLATE, "voila_demo"), (SLIDES_TEMPLATE, "voila_slides")):
        if (VOILA_TEMPLATES / name).exists():
            shutil.rmtree(VOILA_TEMPLATES / name)
        shutil.copytree(REPO / "classroom" / source, VOILA_TEMPLATES / name)
    # Not "reveal.js": Voila serves this folder at voila/static/ too, where reveal.js is its own script.
    for package, folder in (("reveal.js", "revealjs"), ("jquery", "jquery")):
        shutil.copytree(package_dir(package), SLIDES_TEMPLATE_DIR / "static" / folder)


if __name__ == "__main__":
    fetch()
    install_voila_templates()


# The widget manager's icons (a Button's icon="play") use Font Awesome 5, whose font files the fetched
# html-manager (only dist/embed-amd.js) does not carry; Voila's wheel ships the same fonts (FA 5.15) under
# hashed names. Found by the font's own name, they are declared again at the end of each page that draws widget
# views: the last @font-face with the same family and weight wins, so the manager's own rule (which points at
# files that are not there) is never used. They are inlined as data: URLs, since chromium refuses a font file
# from another file:// page (CORS), and a site opened from a USB stick is on file://.
ICON_FONTS = {  # the font's full name -> (CSS family, weight)
    "Font Awesome 5 Free Solid": ("Font Awesome 5 Free", 900),
    "Font Awesome 5 Free Regular": ("Font Awesome 5 Free", 400),
    "Font Awesome 5 Brands Regular": ("Font Awesome 5 Brands", 400),
}


def find_icon_fonts() -> dict[str, Path]:
    """Font Awesome 5's woff files (by :data:`ICON_FONTS` name) from the installed Voila templates."""
    try:
        from fontTools.ttLib import TTFont  # matplotlib's dependency
    except ImportError:
        return {}
    found: dict[str, Path] = {}
    for woff in sorted((Path(sys.prefix) / "share" / "jupyter" / "voila" / "templates").glob("*/static/*.woff")):
        try:
            with TTFont(woff, lazy=True) as font:
                name = font["name"].getDebugName(4)
        except Exception:  # noqa: BLE001 -- not a font fontTools reads: not one of ours
            continue
        if name in ICON_FONTS and name not in found:
            found[name] = woff
    return found


def icon_fonts_css() -> str:
    """The CSS that declares the icon fonts, each inlined (empty if none is found)."""
    found = find_icon_fonts()
    if len(found) < len(ICON_FONTS):
        missing = ", ".join(sorted(set(ICON_FONTS) - set(found)))
        print(f"warning: no {missing} font in Voila's templates: widget icons may not show", file=sys.stderr)
    css = []
    for name, path in found.items():
        family, weight = ICON_FONTS[name]
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        css.append(f'@font-face {{ font-family: "{family}"; font-style: normal; font-weight: {weight}; '
                   f'font-display: block; src: url(data:font/woff;base64,{data}) format("woff"); }}')
    return "\n".join(css)
