"""Lecture demos and slides on Voila: ``make demo`` (the gallery, or ``CHAPTER=...`` one chapter) and
``make slides CHAPTER=...`` (a chapter as reveal.js slides with live widgets, offline).

``serve`` is made for a room (:mod:`classroom.voila_room`): a page's kernel ends when the page closes and an
idle one after ``--cull-idle`` minutes, ``--pool`` kernels per demo are preheated (the page is drawn before
anyone asks for it), at most ``--max-kernels`` run at once (a page beyond them says the server is full), and
the demo template draws controls, labels and tables at ``--scale`` as the widgets draw their figures. The demos
themselves are classroom/demo.py's, warmed first; the slides' speaker view shows the static deck
(classroom/deck.py). The notebooks it serves are signed as trusted first (the book ships them), and the address is
printed once it answers, not while Voila and its kernels are still starting.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from classroom import deck, voila_room
from classroom.assets import DEMO_TEMPLATE, SLIDES_TEMPLATE, SLIDES_TEMPLATE_DIR, VOILA_TEMPLATES
from classroom.demo import DEFAULT_SCALE, DEMO_DIR, SCALE_ENV, warm
from classroom.paths import NOTEBOOKS, REPO


# JupyterLab extensions that expect JupyterLab itself (nbgrader's menus, Notebook 7's) and fail inside Voila.
LAB_ONLY_EXTENSIONS = ["@jupyter/nbgrader", "@jupyter-notebook/lab-extension"]
#: A static file every Voila page loads: it answers once the server is up, and asking for it starts no kernel.
READY_PATH = "voila/templates/lab/static/voila.js"


def voila_command(target: Path, ip: str, port: int, extra: list[str] = ()) -> list[str]:
    """The Voila command line for a notebook or a folder of them, on ``ip:port`` (the demo template unless
    ``extra`` names another)."""
    template = [] if any(e.startswith("--template=") for e in extra) else [f"--template={DEMO_TEMPLATE}"]
    # a list option one item a flag, as traitlets 5 reads lists from the command line
    denylist = [f"--VoilaConfiguration.extension_denylist={name}" for name in LAB_ONLY_EXTENSIONS]
    # Kernels on Unix sockets in Voila's connection folder: over TCP, every kernel warns that it is unencrypted.
    return [sys.executable, "-m", "voila", str(target), "--no-browser", f"--Voila.ip={ip}", f"--port={port}",
            "--Voila.port_retries=0", "--KernelManager.transport=ipc", *denylist, *template, *extra]


def refresh_template() -> None:
    """Copy the demo and slides templates (``classroom/voila_demo``, ``classroom/voila_slides``) where Voila finds
    them, as ``make install`` does, where they differ: an edit to them is served without installing again."""
    for name, installed in (("voila_demo", VOILA_TEMPLATES / DEMO_TEMPLATE), ("voila_slides", SLIDES_TEMPLATE_DIR)):
        source = REPO / "classroom" / name
        for path in source.rglob("*"):
            target = installed / path.relative_to(source)
            if path.is_file() and (not target.exists() or target.read_bytes() != path.read_bytes()):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def trust(paths) -> None:
    """Sign the notebooks at ``paths`` as trusted, as ``jupyter trust`` does (in this user's signature store):
    the book ships them, and Voila warns of every unsigned one it renders."""
    notary = NotebookNotary()
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        if not notary.check_signature(notebook):
            notary.sign(notebook)


def slides_options(chapter: str, base_url: str = "/") -> list[str]:
    """Voila's options for a chapter as reveal.js slides from local assets (see classroom.assets). The speaker
    view's previews of the current and next slide show the chapter's static deck (classroom.deck, written into the
    template's static folder here): pointed at the live page, each preview would start a kernel and run the chapter."""
    if not (SLIDES_TEMPLATE_DIR / "static" / "revealjs" / "dist" / "reveal.css").exists():
        raise SystemExit(f"error: {SLIDES_TEMPLATE_DIR} is incomplete: run `make install`")
    static = f"{base_url}voila/templates/{SLIDES_TEMPLATE}/static"
    deck.build([chapter], SLIDES_TEMPLATE_DIR / "static" / "deck")
    # The chapter runs in a preheated kernel as soon as Voila starts, not when the page is opened: what it computes
    # or compiles (Numba, on a cold cache) is done before the lecture, and the page waits for the browser only.
    # reveal.js's own settings are the template's (its conf.json); a dict option is key=value for traitlets 5.
    speaker_deck = f"{static}/deck/{chapter}.html"
    return [f"--template={SLIDES_TEMPLATE}", f"--VoilaConfiguration.resources=speaker_deck={speaker_deck}",
            "--preheat_kernel=True", "--pool_size=1", voila_room.SHUTDOWN_ON_CLOSE]


def chapter_path(chapter: str) -> Path:
    path = NOTEBOOKS / f"{chapter.removesuffix('.ipynb')}.ipynb"
    if not path.exists():
        names = ", ".join(p.stem for p in sorted(NOTEBOOKS.glob("*.ipynb")))
        raise SystemExit(f"error: no chapter {chapter!r} in notebooks/; the chapters are: {names}")
    return path


def answers(url: str, server: subprocess.Popen, timeout_s: float = 600) -> bool:
    """Whether ``url`` answers (any HTTP status) before ``server`` exits or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while server.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    return False


def run(command: list[str], url: str, message: str) -> int:
    """Run Voila (``command``) until it stops; print ``message`` once the server at ``url`` (its root) answers.
    A ``kill`` or a closed terminal (SIGTERM, SIGHUP) reaches this process alone: it is passed on to Voila, which
    stops its kernels and exits, rather than leaving them running with no one to stop them."""
    voila = subprocess.Popen(command)

    def stop(signum, frame):
        voila.terminate()

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if answers(url + READY_PATH, voila):
            print(message, flush=True)
        return voila.wait()
    except KeyboardInterrupt:
        return voila.wait()  # the terminal's Ctrl-C reached Voila too: it stops its kernels, then exits
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.voila_serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["serve", "slides"])
    parser.add_argument("--ip", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8866)
    parser.add_argument("--chapter", default="")
    parser.add_argument("--scale", default=os.environ.get(SCALE_ENV) or DEFAULT_SCALE,
                        help="the widgets' presentation scale (figure size, dpi and fonts together)")
    parser.add_argument("--max-kernels", type=int, default=0,
                        help="serve: the most kernels at once, preheated ones included (default: what 3/4 of "
                             "this machine's memory holds); a page beyond them is told the server is full")
    parser.add_argument("--pool", type=int, default=1,
                        help="serve: preheated kernels kept ready per demo (0: start one per page)")
    parser.add_argument("--cull-idle", type=float, default=None, metavar="MINUTES",
                        help="serve: end a kernel whose page sent nothing for this long (default: 20)")
    args = parser.parse_args(argv)
    os.environ[SCALE_ENV] = args.scale  # for the warm-up here and for every kernel Voila starts
    refresh_template()
    url = f"http://{args.ip}:{args.port}/"
    if args.command == "slides":
        path = chapter_path(args.chapter or "00_start_here")
        trust([path])
        command = voila_command(path, args.ip, args.port, slides_options(path.stem))
        print(f"Starting the slides of {path.stem}; the chapter runs as Voila starts...", flush=True)
        return run(command, url, f"Slides of {path.stem}: open {url} (Space and the arrows visit every slide, "
                                 "S opens the speaker view with notes; Ctrl-C to stop)")
    print("Warming the kernels' disk cache (quick when it is warm already)...", flush=True)
    warm()
    max_kernels = args.max_kernels or voila_room.default_max_kernels()
    cull = voila_room.CULL_IDLE_MINUTES if args.cull_idle is None else args.cull_idle
    room = voila_room.room_options(max_kernels, args.pool, cull, args.scale)
    print(f"At most {max_kernels} kernels ({args.pool} preheated per demo); idle ones end after {cull:g} min")
    if args.chapter:
        path = chapter_path(args.chapter)
        trust([path])
        return run(voila_command(path, args.ip, args.port, room), url,
                   f"Demo of chapter {path.stem}: open {url} (Ctrl-C to stop)")
    trust(sorted(DEMO_DIR.glob("*.ipynb")))
    return run(voila_command(DEMO_DIR, args.ip, args.port, room), url,
               f"Demo gallery: open {url}voila/render/index.ipynb (Ctrl-C to stop)")


if __name__ == "__main__":
    sys.exit(main())
