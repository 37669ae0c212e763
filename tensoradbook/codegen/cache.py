"""The disk cache of generated modules (report sec. 6's kernels, as files).

Modules are written once per distinct source, named by its hash, into the cache directory
(``$TENSORADBOOK_CACHE``, else ``$XDG_CACHE_HOME/tensoradbook`` or ``~/.cache/tensoradbook``), so
Numba's on-disk cache (``cache=True``) finds its machine code again in a new process and tracebacks
show the generated lines.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

_MODULES: dict[str, object] = {}


def cache_directory() -> Path:
    """Where generated modules (and, beside them, Numba's compiled code) are kept."""
    configured = os.environ.get("TENSORADBOOK_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensoradbook" / "kernels"


def load_module(source: str):
    """Import generated ``source`` from a module file named by its hash (written once, then reused)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    if digest in _MODULES:
        return _MODULES[digest]
    directory = cache_directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: a per-user temporary directory still lets numba cache
        directory = Path(tempfile.gettempdir()) / f"tensoradbook-kernels-{os.getuid()}"
        directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"k_{digest}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        # Write aside, then link into place only if no other process did first: a reader never sees
        # half a module, and an existing file keeps its time stamp, on which Numba's cache depends.
        handle, partial = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(source)
        try:
            if path.exists():  # a different text under the same hash prefix: replace it
                os.replace(partial, path)
            else:
                os.link(partial, path)
        except FileExistsError:
            pass
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    name = f"tensoradbook_kernels.k_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _MODULES[digest] = module
    return module
