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
you, root or (for ``$TENSORADBOOK_SHARED_CACHE`` alone) the user ``$TENSORADBOOK_SHARED_CACHE_OWNER`` names (a user
name or uid) could have written: a shared cache of anyone else is refused, whoever owns it when it is read (the class
server's warm cache is root's and needs no owner named). A directory is refused, with a warning saying why, where it
or a directory above it is a symbolic link, belongs to another user, or can be written by its group or by other users
who can reach it (a sticky directory above it, such as ``/tmp``, is fine); a file in it likewise. Directories named by
the environment are resolved once, then used resolved; the per-uid temporary directory must not be a link at all, and
files are opened without following links. Group members count as other users; access control lists are not read.

Numba's cache locators: Numba asks them in turn where a function's machine code is kept, ``NUMBA_CACHE_DIR``'s first
(a directory nothing checks, whoever made it). For the generated modules' kernels and the package's own functions the
package's locator is asked before any other (first in Numba's list, in numba-cuda's for CUDA kernels, and in
``NUMBA_CACHE_LOCATOR_CLASSES`` where that replaces the list), so no other is:

* a generated module's kernels keep their machine code beside it, in the private cache's ``__pycache__``, checked
  (below) before the module is imported;
* the package's own ``numba.njit(cache=True)`` functions (``inverse/engine.py``, ``chaining/programs.py``, decorated
  with :func:`package_jit`) keep theirs in the package's ``__pycache__`` where this user can write it and trusts it
  (its owner's files are trusted as the package's code is); else (a package installed by root, on a class server)
  in the private cache under ``package/``, first filled from the package's ``__pycache__`` (warmed by whoever
  installed it) where that holds a newer, trusted, sound index. Their index and data files there are checked as a
  module's before Numba reads them. A package imported from a zip archive is not cached: Numba would keep its machine
  code user-wide, unchecked.

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

from .threads import read_text

_MODULES: dict[str, object] = {}
_WARNED: set[str] = set()
#: the private directory of this process, where no other is trusted (made once, removed at exit)
_process_directory: Path | None = None
#: the private caches generated modules were imported from (real paths): their kernels' machine code is kept there
_GENERATED: set[Path] = set()

#: the permission bits of a file's group and of all other users, who may not write what we load
_GROUP, _OTHERS = 0o070, 0o007
#: how Numba's file names tell this Python (``.py311.nbi``) from others sharing the cache
_NUMBA_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}{sys.abiflags}"
#: the package, whose own njit(cache=True) functions :func:`package_jit` caches
_PACKAGE = Path(__file__).resolve().parent.parent
#: the package's Numba cache locator, by the name ``NUMBA_CACHE_LOCATOR_CLASSES`` gives a class
_LOCATOR = f"{__name__}.PackageCacheLocator"


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
    _GENERATED.add(private.path)
    if "cache=True" in source:  # its kernels are cached as it is imported: the package's locator must be asked first
        _claim_numba()
        if "from numba import cuda" in source:
            _claim_cuda()
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
        place = _trusted_place(Path(os.path.realpath(named)), _shared_owners(),
                               note=" (a shared cache is trusted where it is root's, yours or the user's that "
                                    "TENSORADBOOK_SHARED_CACHE_OWNER names)")
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


def _shared_owners() -> frozenset[int]:
    """Whose files in ``$TENSORADBOOK_SHARED_CACHE`` are trusted besides root's: this user's, and those of the user
    ``$TENSORADBOOK_SHARED_CACHE_OWNER`` names (a user name or uid), where it names one."""
    uid = os.getuid()
    named = os.environ.get("TENSORADBOOK_SHARED_CACHE_OWNER", "").strip()
    if not named:
        return frozenset({uid})
    try:
        return frozenset({uid, pwd.getpwnam(named).pw_uid})
    except KeyError:
        if named.isdigit():
            return frozenset({uid, int(named)})
    _warn(f"TENSORADBOOK_SHARED_CACHE_OWNER={named} names no user: only root and you are trusted in a shared cache")
    return frozenset({uid})


def _trusted_place(path: Path, owners: frozenset[int], note: str = "") -> _Place | None:
    """``path`` as a cache directory; None where it is missing or out of reach, or (with a warning, ``note`` after
    why) not trusted."""
    try:
        problem, reach = _survey(path, owners)
    except OSError:
        return None
    if problem:
        _warn(f"the kernel cache {path} is not used: {problem}{note}")
        return None
    return _Place(path, owners, reach, os.access(path, os.W_OK | os.X_OK))


def untrusted(path: Path, owners: frozenset[int]) -> str | None:
    """Why the directory ``path`` may not hold code for this user to load, by the rule of the module's docstring (root
    and ``owners`` trusted), else None; an ``OSError`` where it is missing or out of reach. The warm-up of a shared
    cache (``classroom/warm_cache.py``) shares no directory the readers would refuse."""
    return _survey(path, owners)[0]


def _survey(path: Path, owners: frozenset[int]) -> tuple[str | None, int]:
    """Why ``path`` is not trusted (None where it is), and the permission classes that can reach inside it."""
    reach = _GROUP | _OTHERS
    for step in [*reversed(path.parents), path]:
        status = os.lstat(step)
        problem = _exposure(status, owners, reach, sticky_protects=step != path)
        if problem:
            return f"{step} {problem}", reach
        reach &= _entered(status)
    return (None if stat.S_ISDIR(status.st_mode) else "it is not a directory"), reach


def _exposure(status: os.stat_result, owners: frozenset[int], reach: int, sticky_protects: bool = False) -> str | None:
    """Why a user other than root and ``owners`` could change the file or directory of ``status`` (an ``lstat``),
    which the permission classes ``reach`` can get at, else None. In a sticky directory (``sticky_protects``) others
    may add names but not replace ours."""
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if status.st_uid not in owners and status.st_uid not in _root_uids():
        return f"belongs to {_user(status.st_uid)}"
    if sticky_protects and status.st_mode & stat.S_ISVTX:
        return None
    writers = [who for bits, who in ((_GROUP, "its group"), (_OTHERS, "other users"))
               if status.st_mode & reach & bits & 0o222]
    return f"can be written by {' and '.join(writers)}" if writers else None


@functools.cache
def _root_uids() -> frozenset[int]:
    """The owners that stand for root here: 0, and in a user namespace that does not map root (the grading sandbox,
    bubblewrap started by an ordinary user) the overflow uid as which the kernel shows root's files. Such a namespace
    shows every other outside user's files as that uid too; it only sees what was bound into it, read-only."""
    return frozenset({0} | ({_overflow_uid()} if not _maps_root(read_text("/proc/self/uid_map")) else set()))


def _maps_root(uid_map: str | None) -> bool:
    """Whether a ``/proc/<pid>/uid_map`` maps root of this namespace to a user outside it (None: no such file)."""
    if uid_map is None:
        return True
    for line in uid_map.splitlines():
        fields = line.split()
        if len(fields) == 3 and int(fields[0]) <= 0 < int(fields[0]) + int(fields[2]):
            return True
    return False


def _overflow_uid() -> int:
    text = read_text("/proc/sys/kernel/overflowuid")
    return int(text) if text and text.strip().isdigit() else 65534


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
        _process_directory = Path(os.path.realpath(tempfile.mkdtemp(prefix="tensoradbook-kernels-")))
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
    numba_file = _numba_files(name)
    try:
        entries = list(os.scandir(cache))
    except PermissionError:  # a shared cache's, not listed: nothing of it is copied
        entries = []
    for entry in entries:
        if entry.name == bytecode or numba_file.fullmatch(entry.name):
            path = Path(entry.path)
            try:
                sound[path] = _check(path, place.owners, place.reach & _entered(status))
            except _Fault as fault:
                faults[path] = str(fault)
    return sound, faults


def _numba_files(stem: str) -> re.Pattern:
    """The names of Numba's index and data files for this Python of module ``stem``'s functions; group 1 is the
    function's (its index is that and ``.nbi``)."""
    return re.compile(rf"({re.escape(stem)}\..+\.{re.escape(_NUMBA_TAG)})(\.\d+\.nbc|\.nbi)")


def _check(path: Path, owners: frozenset[int], reach: int) -> bytes:
    """The bytes of the cache file ``path`` where it is trusted and sound; a :class:`_Fault` saying why not."""
    data = _read(path, owners, reach)
    corrupt = _corruption(path.name, data)
    if corrupt:
        raise _Fault(f"is corrupt ({corrupt})")
    return data


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
    """``numba.njit(cache=True, **options)`` for the package's own functions, the package's locator asked first when
    each is decorated (see the module's docstring). Numba is imported here, not with this module: a chapter sets
    ``NUMBA_ENABLE_CUDASIM`` before Numba's first import."""
    import numba

    def decorate(function):
        _claim_numba()
        # from a zip archive Numba would keep the machine code user-wide, where nothing is checked: compiled instead
        return numba.njit(cache=_PACKAGE.is_dir(), **options)(function)

    return decorate


def helper_for(path: str) -> None:
    """In a helper process that compiles kernels of the generated module at ``path`` into the cache for the process
    that loaded it (:func:`~.compile.precompile`): that module's machine code goes where :func:`load_module` has
    Numba keep it, beside the module, which that process checked; not to ``NUMBA_CACHE_DIR``."""
    _GENERATED.add(Path(os.path.realpath(path)).parent)
    _claim_numba()


def _claim_numba() -> None:
    """The package's locator first among Numba's, also where ``NUMBA_CACHE_LOCATOR_CLASSES`` replaces their list
    (Numba imports it by name from there: :func:`__getattr__`)."""
    from numba.core import caching, config

    _claim(caching.CacheImpl)
    listed = getattr(config, "CACHE_LOCATOR_CLASSES", "")
    if listed and not listed.startswith(f"{_LOCATOR},"):
        config.CACHE_LOCATOR_CLASSES = f"{_LOCATOR},{listed}"


def _claim_cuda() -> None:
    """The package's locator first among numba-cuda's (its own list, for CUDA kernels)."""
    try:
        from numba.cuda.dispatcher import CUDACacheImpl
    except ImportError:  # the simulator (NUMBA_ENABLE_CUDASIM), which caches nothing
        return
    _claim(CUDACacheImpl)


def _claim(impl: type) -> None:
    """Put the package's locator, built on the in-tree locator of ``impl``'s list, first in that list."""
    locators = impl._locator_classes
    ours = _locator(next(c for c in locators if c.__name__.lstrip("_") == "InTreeCacheLocator"))
    if locators[0] is not ours:
        locators.insert(0, ours)


def __getattr__(name: str):
    # NUMBA_CACHE_LOCATOR_CLASSES names the package's locator by this module; it is built when first asked, on
    # Numba's in-tree locator, as Numba is not imported with this module
    if name == "PackageCacheLocator":
        from numba.core.caching import InTreeCacheLocator

        return _locator(InTreeCacheLocator)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _locator(in_tree: type) -> type:
    """The package's cache locator, on Numba's or numba-cuda's in-tree locator ``in_tree``: for a generated module's
    or the package's own function, the directory :func:`_numba_cache` names; for any other, None (Numba asks its own
    locators then)."""

    class PackageCacheLocator(in_tree):
        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.isfile(py_file):  # a placeholder, as IPython's "<ipython-input-...>"
                return None
            source = Path(os.path.realpath(py_file))
            directory = _numba_cache(source, cls.get_suitable_cache_subpath(str(source)))
            if directory is None:
                return None
            self = cls(py_func, str(source))
            self._cache_path = str(directory)
            return self

    return PackageCacheLocator


def _numba_cache(source: Path, subpath: str) -> Path | None:
    """Where Numba keeps the machine code of the functions in ``source`` (a real path), by the module's docstring,
    with Numba's files there for them checked; None where ``source`` is neither a generated module nor the
    package's."""
    if source.parent in _GENERATED:
        return source.parent / "__pycache__"  # checked by _prepare before the module was imported
    if _PACKAGE not in source.parents:
        return None
    tree = source.parent / "__pycache__"
    with suppress(OSError):  # as Python and Numba make it, where this user can write the package
        tree.mkdir(exist_ok=True)
    beside = _trusted_place(tree, frozenset({os.getuid(), os.stat(source.parent).st_uid}))
    if beside and beside.writable:
        place = beside
    else:
        place = _package_place(_places()[0].path, subpath) or _package_place(_process_place().path, subpath)
        if place is None:  # refused rather than left to a locator that checks nothing
            raise OSError(f"tensoradbook: no directory of this user's alone for the machine code of {source}")
    _heal(place, source.stem)
    if beside and place is not beside:
        _seed(beside, place.path, source.stem)
    return place.path


def _package_place(private: Path, subpath: str) -> _Place | None:
    """``package/<subpath>`` in the private cache ``private``, made 0700 where missing, where it is trusted."""
    target = private / "package" / subpath
    with suppress(OSError):
        target.parent.mkdir(mode=0o700, exist_ok=True)
        target.mkdir(mode=0o700, exist_ok=True)
    place = _trusted_place(target, frozenset({os.getuid()}))
    return place if place and place.writable else None


def _heal(place: _Place, stem: str) -> None:
    """Remove, with a warning naming each, Numba's files of module ``stem``'s functions in ``place`` that are not
    trusted or not sound: those functions are compiled again."""
    pattern = _numba_files(stem)
    with suppress(FileNotFoundError):
        for entry in os.scandir(place.path):
            if pattern.fullmatch(entry.name):
                try:
                    _check(Path(entry.path), place.owners, place.reach)
                except _Fault as fault:
                    _remove(Path(entry.path))
                    _warn(f"{entry.path} {fault}: removed and rebuilt")


def _seed(tree: _Place, target: Path, stem: str) -> None:
    """Copy Numba's index and data files of module ``stem``'s functions from the package's ``__pycache__`` ``tree``
    into ``target`` where ``target`` has no index of that function or an older one (the package upgraded and warmed
    again); a function whose files are not trusted or not sound is left to compile."""
    pattern = _numba_files(stem)
    functions: dict[str, list[os.DirEntry]] = {}
    with suppress(OSError):
        for entry in os.scandir(tree.path):
            match = pattern.fullmatch(entry.name)
            if match:
                functions.setdefault(match.group(1), []).append(entry)
    for base, entries in functions.items():
        index, mine = tree.path / f"{base}.nbi", target / f"{base}.nbi"
        try:
            newer = not mine.exists() or index.stat().st_mtime > mine.stat().st_mtime
        except FileNotFoundError:  # no index there: its data files alone are never loaded
            newer = False
        if not newer:
            continue
        try:
            files = {entry.name: _check(Path(entry.path), tree.owners, tree.reach) for entry in entries}
        except (_Fault, OSError):
            continue
        for name in sorted(files, key=lambda name: name.endswith(".nbi")):  # the index last: it names the data
            _write(target / name, files[name])
