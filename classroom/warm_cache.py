"""A warm kernel cache for a class: every chapter's and demo's kernels compiled once, for every user to read.

``python -m classroom.warm_cache --into DIR [--only STEM ...] [--jobs N]`` executes every chapter
(``notebooks/*.ipynb``, copies in a temporary folder: the committed notebooks are not touched) and every demo (its
widget and first interaction, :func:`classroom.demo.warm`) with ``TENSORADBOOK_CACHE=DIR``, so that ``DIR`` holds
the generated modules and Numba's machine code for them. ``DIR`` is then left readable by all and writable by its
owner alone (folders 0755, files 0644), as :mod:`tensoradbook.codegen.cache` trusts a shared cache: point
``TENSORADBOOK_SHARED_CACHE`` at it and a user's kernels are copied from it with their machine code instead of
compiled (warmed by root, as the class server does; warmed by another user, name that user in
``TENSORADBOOK_SHARED_CACHE_OWNER``). A stamp in ``DIR`` (the package's sources, the notebooks, the Python, Numba and
NumPy versions and Numba's target CPU) makes a second run with nothing changed a no-op.

Only what this user made is shared, before a run and after it (:func:`_share`): ``DIR`` must be a path the cache would
trust (no link on the way, nothing above it that another user owns or can write), and anything in it this user did not
make (another user's file or folder, a link, a file with other names, a device) stops the run with an error naming it.
Nothing of it is changed, followed or removed: someone could write into the cache, which removing their files would
not mend; remove the folder and warm again.

The same run leaves the machine code of the package's own ``numba.njit(cache=True)`` functions
(``tensoradbook/inverse/engine.py``, ``tensoradbook/chaining/programs.py``) beside the package, in its
``__pycache__``, from where :func:`tensoradbook.codegen.cache.package_jit` serves the functions it decorates to a
user who cannot write the package. Not covered: kernels that only an interaction other than a demo's first one
compiles (a widget moved to a case its chapter does not run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import pwd
import shutil
import stat
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from importlib.metadata import version
from multiprocessing import get_context
from pathlib import Path

from classroom.demo import DEMOS
from classroom.demo import warm as warm_demos
from classroom.paths import NOTEBOOKS, REPO
from tensoradbook.codegen.cache import untrusted

STAMP = ".warm-stamp.json"
#: the sources whose change can change a kernel: the package, its widgets, and the demos' widget expressions
SOURCES = [REPO / "tensoradbook", REPO / "widgets", REPO / "classroom" / "demo.py"]
#: how the warm-up opens what it shares: never through a link, never waiting on a pipe
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Job:
    """A chapter (``path``, its notebook) or a demo (``path`` None: :data:`classroom.demo.DEMOS` names it)."""

    stem: str
    path: Path | None = None

    @property
    def kind(self) -> str:
        return "demo" if self.path is None else "chapter"


def jobs(only=None) -> list[Job]:
    """Every chapter with code, then every demo; with ``only``, those of these stems (each must name one)."""
    import nbformat

    chapters = [Job(path.stem, path) for path in sorted(NOTEBOOKS.glob("*.ipynb"))
                if any(cell.cell_type == "code" for cell in nbformat.read(path, as_version=4).cells)]
    every = chapters + [Job(demo.stem) for demo in DEMOS]
    if only is None:
        return every
    unknown = set(only) - {job.stem for job in every}
    if unknown:
        names = ", ".join(job.stem for job in every)
        raise SystemExit(f"error: no chapter or demo {', '.join(sorted(unknown))}; there are: {names}")
    return [job for job in every if job.stem in only]


def execute(path: Path, timeout: int = 900) -> float:
    """Execute a notebook in place, in its folder, in the ``python3`` kernel; its wall time in seconds."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    ExecutePreprocessor(timeout=timeout, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(path.parent)}})
    seconds = time.perf_counter() - start
    nbformat.write(nb, path)
    return seconds


def _digest(paths) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stamp(selected: list[Job]) -> dict:
    """What the kernels in a warm cache depend on: a change in any of it means warming again."""
    sources = [p for root in SOURCES for p in ([root] if root.is_file() else root.rglob("*.py"))]
    return {
        "sources": _digest(sources),
        "chapters": {job.stem: _digest([job.path]) for job in selected if job.path},
        "demos": [job.stem for job in selected if job.path is None],
        "python": sys.version, "numba": version("numba"), "numpy": version("numpy"),
        # Numba's cache keys hold its target CPU: NUMBA_CPU_NAME=generic makes them portable (a built image)
        "cpu": [platform.machine(), os.environ.get("NUMBA_CPU_NAME"), os.environ.get("NUMBA_CPU_FEATURES")],
    }


def _enter(directory: str, scratch: str) -> None:
    """A worker's set-up: the kernels compile into ``directory``; chapters run beside the helpers they import."""
    os.environ["TENSORADBOOK_CACHE"] = directory
    os.chdir(scratch)


def _run(job: Job) -> tuple[Job, float]:
    if job.path is None:
        (seconds,) = warm_demos([demo for demo in DEMOS if demo.stem == job.stem]).values()
        return job, seconds
    copy = Path.cwd() / job.path.name
    shutil.copyfile(job.path, copy)
    return job, execute(copy)


def _share(directory: Path) -> None:
    """Leave ``directory`` writable by this user alone and readable by all (folders 0755, files 0644), where the cache
    would trust its path and this user made all it holds; else stop (``SystemExit``) saying why, with nothing planted
    changed. Each entry is opened without following a link and changed through that handle, so that neither a link
    nor an entry swapped meanwhile is followed."""
    # first: a path through a link or a folder of another user's could lead anywhere, /etc as well as here
    problem = untrusted(directory, frozenset({os.getuid()}))
    if problem:
        raise SystemExit(f"error: {directory} cannot be shared: {problem}")
    planted = []
    top = os.open(directory, _OPEN | os.O_DIRECTORY)
    try:
        _share_entry(directory, top, os.fstat(top), planted)
    finally:
        os.close(top)
    if planted:
        raise SystemExit(f"error: {directory} is not shared: this warm-up did not make\n  " + "\n  ".join(planted)
                         + "\nnothing of them was changed (another user could write into the cache); remove the "
                         "folder and warm again")


def _share_entry(path: Path, handle: int, found: os.stat_result, planted: list[str]) -> None:
    """Share the file or folder open as ``handle``, which was ``found`` (an ``lstat``) at ``path``, and what a folder
    holds; what this user did not make is named in ``planted`` instead."""
    status = os.fstat(handle)
    if (status.st_dev, status.st_ino) != (found.st_dev, found.st_ino):
        planted.append(f"{path} was replaced while it was shared")
        return
    if not stat.S_ISDIR(status.st_mode):
        os.fchmod(handle, 0o644)
        return
    os.fchmod(handle, 0o755)  # first: no one else may add to the folder while it is read
    for name in sorted(os.listdir(handle)):
        entry = os.lstat(name, dir_fd=handle)
        why = _foreign(entry)
        if not why:
            try:
                inner = os.open(name, _OPEN | (os.O_DIRECTORY if stat.S_ISDIR(entry.st_mode) else 0), dir_fd=handle)
            except OSError as error:  # a link or a file now where a file or a folder was
                why = f"was replaced while it was shared ({error.strerror})"
        if why:
            planted.append(f"{path / name} {why}")
            continue
        try:
            _share_entry(path / name, inner, entry, planted)
        finally:
            os.close(inner)


def _foreign(status: os.stat_result) -> str | None:
    """Why the entry of ``status`` (an ``lstat``) was not made by this user's warm-up, else None."""
    if status.st_uid != os.getuid():
        try:
            return f"belongs to {pwd.getpwuid(status.st_uid).pw_name}"
        except KeyError:
            return f"belongs to uid {status.st_uid}"
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if stat.S_ISREG(status.st_mode):  # a hard link to a file of ours elsewhere (0600) would be made readable
        return f"has {status.st_nlink - 1} other name(s) (hard links)" if status.st_nlink > 1 else None
    return None if stat.S_ISDIR(status.st_mode) else "is not a file or a folder"


def _unreachable(directory: Path) -> Path | None:
    """The first folder above ``directory`` that other users cannot enter, else None."""
    return next((p for p in reversed(directory.parents) if not p.stat().st_mode & stat.S_IXOTH), None)


def summary(directory: Path) -> dict:
    """The generated modules, Numba's compiled kernels (one data file each) and the bytes in ``directory``, and the
    package's own compiled functions beside it."""
    files = [p for p in directory.rglob("*") if p.is_file()]
    return {"modules": len(list(directory.glob("k_*.py"))),
            "kernels": sum(p.suffix == ".nbc" for p in files),
            "bytes": sum(p.stat().st_size for p in files),
            "package_kernels": len(list((REPO / "tensoradbook").rglob("__pycache__/*.nbc")))}


def warm(directory, only=None, workers: int | None = None) -> dict:
    """Compile every chapter's and demo's kernels (or those of the stems ``only``) into ``directory`` and share it
    read-only; a no-op where its stamp says it is warm for these sources already. Returns :func:`summary`'s
    figures with ``seconds``, ``warmed`` (the stems run, none for a no-op) and ``failed`` (stem: error)."""
    directory = Path(os.path.abspath(directory))  # not resolved: a link on the way is refused, not followed
    selected = jobs(only)
    wanted = stamp(selected)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    _share(directory)  # before anything in it is read or added to: all it holds must be this user's
    stamp_file = directory / STAMP
    if stamp_file.exists() and json.loads(stamp_file.read_text()) == wanted:
        print(f"{directory} is warm already (same sources, notebooks and versions as in {STAMP}): nothing to do")
        return {**summary(directory), "seconds": 0.0, "warmed": [], "failed": {}}
    stamp_file.unlink(missing_ok=True)  # an interrupted run leaves no stamp behind
    start = time.perf_counter()
    failed = {}
    with tempfile.TemporaryDirectory(prefix="tensoradbook-warm-") as scratch:
        for helper in NOTEBOOKS.glob("*.py"):  # bookdata.py: the chapters import it from their folder
            shutil.copy(helper, scratch)
        context = get_context("spawn")  # fresh workers: nothing of this process (a cache, a warning) carries over
        with ProcessPoolExecutor(workers or min(os.cpu_count(), len(selected)), mp_context=context, initializer=_enter,
                                 initargs=(str(directory), scratch)) as pool:
            futures = {pool.submit(_run, job): job for job in selected}
            for done, future in enumerate(as_completed(futures), 1):
                job = futures[future]
                try:
                    _, seconds = future.result()
                    print(f"[{done}/{len(selected)}] {job.kind} {job.stem}: {seconds:.1f} s", flush=True)
                except Exception as error:  # a chapter that fails still leaves the others' kernels
                    failed[job.stem] = f"{type(error).__name__}: {error}"
                    # the end of it: a failed cell's message ends with its traceback's last lines
                    print(f"[{done}/{len(selected)}] {job.kind} {job.stem}: FAILED ...{failed[job.stem][-1500:]}",
                          file=sys.stderr, flush=True)
    _share(directory)
    if not failed:  # only once shared: a run stopped by something planted is not warm
        with os.fdopen(os.open(stamp_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "w") as out:
            os.fchmod(out.fileno(), 0o644)  # the umask would drop bits
            out.write(json.dumps(wanted, indent=1) + "\n")
    figures = {**summary(directory), "seconds": round(time.perf_counter() - start, 1),
               "warmed": [job.stem for job in selected], "failed": failed}
    print(f"{directory}: {figures['modules']} modules, {figures['kernels']} kernels, "
          f"{figures['bytes'] / 2 ** 20:.1f} MiB ({figures['package_kernels']} of the package's own beside it), "
          f"{figures['seconds']:.0f} s for {len(selected)} chapters and demos"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    blocked = _unreachable(directory)
    if blocked:
        print(f"warning: other users cannot reach {directory}: {blocked} is mode {blocked.stat().st_mode & 0o777:o}",
              file=sys.stderr)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.warm_cache", description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", required=True, type=Path, help="the shared cache to warm (made where missing)")
    parser.add_argument("--only", nargs="+", metavar="STEM", help="these chapters or demos only (file stems)")
    parser.add_argument("--jobs", type=int, help="chapters and demos run at once (default: one per CPU)")
    args = parser.parse_args(argv)
    return 1 if warm(args.into, args.only, args.jobs)["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
