"""The disk cache of generated modules (report sec. 6's kernels, as files).

Modules are written once per distinct source, named by its hash (``k_<digest>.py``), so Numba's on-disk cache
(``cache=True``: an index ``.nbi`` and data ``.nbc`` per kernel, in the ``__pycache__`` folder beside the module) finds
its machine code again in a new process, and tracebacks show the generated lines.

Where a module is looked for, in this order:

1. The private cache, the one directory this process writes: ``$TENSORADBOOK_CACHE``, else
   ``$XDG_CACHE_HOME/tensoradbook/kernels`` or ``~/.cache/tensoradbook/kernels`` (created with mode 0700) where this
   user can write it and trusts it; else ``$TMPDIR/tensoradbook-kernels-<uid>`` (created 0700) where trusted; else a
   new directory of this process alone (``tempfile.mkdtemp``, removed at exit), with a warning.
2. The shared caches, read and never written: ``$TENSORADBOOK_SHARED_CACHE`` (a warm cache a class shares on a
   server), then the directory of 1 where it is trusted but this user cannot write it. A module found there with the
   same text is copied into the private cache with Numba's files for it (Numba keeps its cache only in a
   ``__pycache__`` it can write), so Numba loads its machine code rather than compiling again.
3. Else the module is written into the private cache, and Numba compiles its kernels there.

Trust: importing a module, or Numba's pickled index and data, runs code, so nothing is loaded that a user other than
you, root or (for ``$TENSORADBOOK_SHARED_CACHE`` alone, which names whom you trust) the shared directory's owner
could have written. A directory is refused, with a warning saying why, where it or a directory above it is a symbolic
link, belongs to another user, or can be written by its group or by other users who can reach it (a sticky directory
above it, such as ``/tmp``, is fine); a file in it likewise. Directories named by the environment are resolved once,
then used resolved; the per-uid temporary directory must not be a link at all, and files are opened without following
links. Group members count as other users; access control lists are not read.

The package's own ``numba.njit(cache=True)`` functions (``inverse/engine.py``, ``chaining/programs.py``): Numba keeps
their machine code in the package's ``__pycache__``, and a user who cannot write there (a package installed by root,
on a class server) would compile them again into ``~/.cache/numba``. Decorated with :func:`package_jit`, they are
cached for such a user in the private cache under ``package/`` instead, first filled from the package's
``__pycache__`` (warmed by whoever installed it, and trusted as the package's code is) where that holds a newer index.

Healing: before a module is imported, its files are checked: the module's text against its source, the ``.pyc`` this
Python would read (a code object after the header), Numba's index and data files for this Python (complete, well-formed
pickles). A file that fails, or is not trusted, is removed from the private cache with a warning naming it, and
rebuilt: the module written again, the bytecode and kernels compiled again. A shared cache is never changed: a module
whose files fail there is compiled in the private cache instead.
"""

from __future__ import annotations

import atexit
import errno
import functools
import hashlib
import importlib.util
import io
import marshal
import os
import pickletools
import pwd
import re
import shutil
import stat
import sys
import tempfile
import types
import warnings
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

_MODULES: dict[str, object] = {}
_WARNED: set[str] = set()
#: the private directory of this process, where no other is trusted (made once, removed at exit)
_process_directory: Path | None = None

#: the permission bits of a file's group and of all other users, who may not write what we load
_GROUP, _OTHERS = 0o070, 0o007
#: how Numba's file names tell this Python (``.py311.nbi``) from others sharing the cache
_NUMBA_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}{sys.abiflags}"
#: the package, whose own njit(cache=True) functions :func:`package_jit` caches
_PACKAGE = Path(__file__).resolve().parent.parent


class KernelCacheWarning(UserWarning):
    """A cache directory not used (not trusted), or a cache file removed and rebuilt (corrupt or not trusted)."""


class _Fault(Exception):
    """Why a cache file must not be loaded."""


@dataclass(frozen=True)
class _Place:
    """A cache directory trusted to hold code: its real path, the users besides root whose files in it are trusted,
    the permission classes (``_GROUP``, ``_OTHERS``) that can reach inside it, and whether this process can write it."""

    path: Path
    owners: frozenset[int]
    reach: int
    writable: bool


def cache_directory() -> Path:
    """The configured private cache (``$TENSORADBOOK_CACHE``, else under ``$XDG_CACHE_HOME`` or ``~/.cache``); where
    it cannot be written or is not trusted, :func:`load_module` uses another (see the module's docstring)."""
    configured = os.environ.get("TENSORADBOOK_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensoradbook" / "kernels"


def load_module(source: str):
    """Import generated ``source`` from a module file named by its hash (written once, then reused), after checking
    the files it and Numba would load (see the module's docstring)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    if digest in _MODULES:
        return _MODULES[digest]
    private, shared = _places()
    name = f"k_{digest}"
    _prepare(private, shared, name, source)
    module_name = f"tensoradbook_kernels.{name}"
    spec = importlib.util.spec_from_file_location(module_name, private.path / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    _MODULES[digest] = module
    return module


def _places() -> tuple[_Place, list[_Place]]:
    """The private cache this process writes, and the shared caches it reads, in order."""
    uid = os.getuid()
    shared = []
    named = os.environ.get("TENSORADBOOK_SHARED_CACHE")
    if named:
        path = Path(os.path.realpath(named))
        try:
            owner = os.lstat(path).st_uid
        except OSError:  # missing: nothing to read
            owner = uid
        place = _trusted_place(path, frozenset({uid, owner}))
        if place:
            shared.append(place)
    configured = Path(os.path.realpath(cache_directory()))
    with suppress(OSError):  # a read-only home: the kernels go elsewhere
        configured.mkdir(mode=0o700, parents=True, exist_ok=True)
    place = _trusted_place(configured, frozenset({uid}))
    if place and place.writable:
        return place, shared
    if place:
        shared.append(place)
    # the temporary directory resolved, not this name in it: where all users write, it must be ours, not a link
    fallback = Path(os.path.realpath(tempfile.gettempdir())) / f"tensoradbook-kernels-{uid}"
    with suppress(OSError):
        fallback.mkdir(mode=0o700)
    place = _trusted_place(fallback, frozenset({uid}))
    if place and place.writable:
        return place, shared
    return _process_place(), shared


def _trusted_place(path: Path, owners: frozenset[int]) -> _Place | None:
    """``path`` as a cache directory; None where it is missing or out of reach, or (with a warning) not trusted."""
    reach = _GROUP | _OTHERS
    try:
        for step in [*reversed(path.parents), path]:
            status = os.lstat(step)
            problem = _exposure(status, owners, reach, sticky_protects=step != path)
            if problem:
                _warn(f"the kernel cache {path} is not used: {step} {problem}")
                return None
            reach &= _entered(status)
    except OSError:
        return None
    if not stat.S_ISDIR(status.st_mode):
        _warn(f"the kernel cache {path} is not used: it is not a directory")
        return None
    return _Place(path, owners, reach, os.access(path, os.W_OK | os.X_OK))


def _exposure(status: os.stat_result, owners: frozenset[int], reach: int, sticky_protects: bool = False) -> str | None:
    """Why a user other than root and ``owners`` could change the file or directory of ``status`` (an ``lstat``),
    which the permission classes ``reach`` can get at, else None. In a sticky directory (``sticky_protects``) others
    may add names but not replace ours."""
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if status.st_uid not in owners and status.st_uid != 0:
        return f"belongs to {_user(status.st_uid)}"
    if sticky_protects and status.st_mode & stat.S_ISVTX:
        return None
    writers = [who for bits, who in ((_GROUP, "its group"), (_OTHERS, "other users"))
               if status.st_mode & reach & bits & 0o222]
    return f"can be written by {' and '.join(writers)}" if writers else None


def _entered(status: os.stat_result) -> int:
    """The permission classes that may enter the directory of ``status``."""
    return sum(bits for bits in (_GROUP, _OTHERS) if status.st_mode & bits & 0o111)


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _process_place() -> _Place:
    """A new directory for this process alone, where no cache directory it may write is trusted."""
    global _process_directory
    if _process_directory is None:
        _process_directory = Path(tempfile.mkdtemp(prefix="tensoradbook-kernels-"))
        atexit.register(shutil.rmtree, _process_directory, ignore_errors=True)
    return _Place(_process_directory, frozenset({os.getuid()}), reach=0, writable=True)


def _prepare(private: _Place, shared: list[_Place], name: str, source: str) -> None:
    """Leave module ``name`` in the private cache with only sound, trusted files beside it: healed where it is there,
    else copied with Numba's files from the first shared cache that holds it (where they are all sound), else
    written."""
    module = private.path / f"{name}.py"
    sound, faults = _inspect(private, name, source)
    for path, why in faults.items():
        _remove(path)
        _warn(f"{path} {why}: removed and rebuilt")
    if module in sound:
        return
    for place in shared:
        sound, faults = _inspect(place, name, source)
        held = place.path / f"{name}.py"
        if held not in sound and held not in faults:
            continue
        for path, why in faults.items():
            _warn(f"{path} {why}: a shared cache is left as it is, so {name} is compiled in {private.path} instead")
        if not faults:
            for path, data in sound.items():
                if path.suffix in (".nbi", ".nbc"):
                    (private.path / "__pycache__").mkdir(exist_ok=True)
                    _write(private.path / "__pycache__" / path.name, data)
        break
    _write(module, source.encode())


def _inspect(place: _Place, name: str, source: str) -> tuple[dict[Path, bytes], dict[Path, str]]:
    """The files of module ``name`` in ``place`` that Python and Numba would load: the sound ones (their contents),
    and those that must not be loaded (why not)."""
    sound, faults = {}, {}
    module = place.path / f"{name}.py"
    with suppress(FileNotFoundError):
        try:
            data = _read(module, place.owners, place.reach)
            if data == source.encode():
                sound[module] = data
            else:
                faults[module] = "does not hold its source (truncated or changed)"
        except _Fault as fault:
            faults[module] = str(fault)
    cache = place.path / "__pycache__"
    try:
        status = os.lstat(cache)
    except FileNotFoundError:
        return sound, faults
    problem = _exposure(status, place.owners, place.reach) or (None if stat.S_ISDIR(status.st_mode)
                                                               else "is not a directory")
    if problem:
        faults[cache] = problem
        return sound, faults
    bytecode = Path(importlib.util.cache_from_source(str(module))).name
    numba_file = re.compile(rf"{name}\..+\.{re.escape(_NUMBA_TAG)}(\.\d+\.nbc|\.nbi)")
    try:
        entries = list(os.scandir(cache))
    except PermissionError:  # a shared cache's, not listed: nothing of it is copied
        entries = []
    for entry in entries:
        if entry.name == bytecode or numba_file.fullmatch(entry.name):
            path = Path(entry.path)
            try:
                data = _read(path, place.owners, place.reach & _entered(status))
                corrupt = _corruption(entry.name, data)
                if corrupt:
                    raise _Fault(f"is corrupt ({corrupt})")
                sound[path] = data
            except _Fault as fault:
                faults[path] = str(fault)
    return sound, faults


def _read(path: Path, owners: frozenset[int], reach: int) -> bytes:
    """The bytes of the file ``path``, opened without following a link; a :class:`_Fault` where it is not trusted."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except PermissionError:
        raise _Fault("cannot be read") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _Fault("is a symbolic link") from None
        raise
    with os.fdopen(handle, "rb") as file:
        status = os.fstat(handle)
        problem = _exposure(status, owners, reach) if stat.S_ISREG(status.st_mode) else "is not a regular file"
        if problem:
            raise _Fault(problem)
        return file.read()


def _corruption(filename: str, data: bytes) -> str | None:
    """Why Python's bytecode or Numba's index or data ``data`` would fail to load (truncated, garbage), else None."""
    if filename.endswith(".pyc"):
        if data[:4] != importlib.util.MAGIC_NUMBER:
            return "not this Python's bytecode"
        try:  # the code after the header (magic, flags, source stamp), as the import reads it
            code = marshal.loads(data[16:])
        except Exception as error:  # marshal raises what it meets: EOFError, ValueError, TypeError, SystemError
            return str(error)
        return None if isinstance(code, types.CodeType) else "no code object"
    # Numba pickles an index as its own version, then the index proper; a data file as one object. Walking the
    # opcodes finds what unpickling fails on (truncated, garbage) without running them.
    stream = io.BytesIO(data)
    try:
        for _ in range(2 if filename.endswith(".nbi") else 1):
            for _ in pickletools.genops(stream):
                pass
    except ValueError as error:
        return str(error)
    return "bytes after its end" if stream.read(1) else None


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` aside, then move it into place: a reader never sees half a file."""
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            os.fchmod(out.fileno(), 0o644)  # readable by others, as Numba's own files: a warm cache may be shared
            out.write(data)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _remove(path: Path) -> None:
    """Remove a cache file, or a ``__pycache__`` folder not trusted, from the private cache (where another process
    healing it may have done so first)."""
    with suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _warn(message: str) -> None:
    """Warn once per process: a directory refused is refused again for every module."""
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(f"tensoradbook: {message}", KernelCacheWarning, stacklevel=2)


def package_jit(**options):
    """``numba.njit(cache=True, **options)`` for the package's own functions, with :func:`_package_locator` among
    Numba's cache locators (see the module's docstring). Numba is imported here, not with this module: a chapter
    sets ``NUMBA_ENABLE_CUDASIM`` before Numba's first import."""
    import numba
    from numba.core.caching import CacheImpl

    if _package_locator() not in CacheImpl._locator_classes:
        CacheImpl._locator_classes.insert(1, _package_locator())  # after NUMBA_CACHE_DIR's, before Numba's own
    return numba.njit(cache=True, **options)


@functools.cache
def _package_locator() -> type:
    """Numba's cache locator for the package's own functions, where this user cannot write the package's
    ``__pycache__``: the private cache's ``package/``; anything else, or a package this user can write, is left to
    Numba's own locators."""
    from numba.core.caching import InTreeCacheLocator

    class PackageCacheLocator(InTreeCacheLocator):
        @classmethod
        def from_function(cls, py_func, py_file):
            source = Path(os.path.realpath(py_file))
            tree = source.parent / "__pycache__"
            if _PACKAGE not in source.parents or os.access(tree if tree.is_dir() else source.parent,
                                                           os.W_OK | os.X_OK):
                return None
            self = cls(py_func, str(source))
            self._cache_path = str(_places()[0].path / "package" / self.get_suitable_cache_subpath(str(source)))
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            _seed(tree, Path(self._cache_path), source)
            return self

    return PackageCacheLocator


def _seed(tree: Path, target: Path, source: Path) -> None:
    """Copy Numba's index and data files of ``source``'s functions from the package's ``__pycache__`` into
    ``target`` where ``target`` has no index of that function or an older one (the package upgraded and warmed
    again); a function whose files are not trusted or not sound is left to compile."""
    place = _trusted_place(tree, frozenset({os.getuid(), os.stat(source.parent).st_uid}))
    if place is None:
        return
    numba_file = re.compile(rf"({re.escape(source.stem)}\..+\.{re.escape(_NUMBA_TAG)})(\.\d+\.nbc|\.nbi)")
    functions: dict[str, list[os.DirEntry]] = {}
    with suppress(OSError):
        for entry in os.scandir(tree):
            match = numba_file.fullmatch(entry.name)
            if match:
                functions.setdefault(match.group(1), []).append(entry)
    for base, entries in functions.items():
        index, mine = tree / f"{base}.nbi", target / f"{base}.nbi"
        try:
            newer = not mine.exists() or index.stat().st_mtime > mine.stat().st_mtime
        except FileNotFoundError:  # no index there: its data files alone are never loaded
            newer = False
        if not newer:
            continue
        try:
            files = {entry.name: _read(Path(entry.path), place.owners, place.reach) for entry in entries}
        except (_Fault, OSError):
            continue
        if any(_corruption(name, data) for name, data in files.items()):
            continue
        for name in sorted(files, key=lambda name: name.endswith(".nbi")):  # the index last: it names the data
            _write(target / name, files[name])

