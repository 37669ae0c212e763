"""Scratch arrays of generated modules: the tensors a module computes and reads within one call and never returns
(a convolution's gather, ``im2col``; a contraction split off a kernel's body), kept from call to call rather than
allocated anew.

A fresh array of megabytes costs the operating system a page fault per page on its first write, as much as a
kernel's whole work for a strided convolution's gradients (benchmarks/workloads.py, whose docstring and results
give the figures). Each thread has its own arrays, so two threads calling one module never share one.

The arrays a call returns are fresh, and so are the forward values a gradients call computes and drops. glibc's
malloc hands a freed block of megabytes back to the system once the free memory at the top of the heap passes its
trim threshold, and the next call's array of that size then faults in every page again: in a process that had
not raised the thresholds (PyTorch's import does), layer normalization's gradients took 13 ms instead of 1.1 ms.
:func:`keep_freed_memory` sets the thresholds once, as the first compiled module loads: blocks up to
:data:`MMAP_THRESHOLD` come from the heap, and up to :data:`TRIM_THRESHOLD` of freed memory stays for the next
call. A threshold given in the environment (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) is kept.

Bounds: a thread keeps one array per name of the module's plan (a call of another shape replaces it), and a module's
arrays are freed, in every thread, once no compiled function or gradients that loaded it is left
(:func:`held_by`): a class server keeps one process per student, each compiling many modules over a session.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import weakref
from collections import Counter
from functools import lru_cache

import numpy as np

#: Bytes from which glibc maps a block by itself (returned to the system when freed): its dynamic maximum.
MMAP_THRESHOLD = 32 << 20
#: Bytes of freed memory at the top of the heap that glibc keeps for later blocks rather than returning.
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)

_holders: Counter = Counter()  # module name -> the live objects that hold it
_lock = threading.Lock()


class Scratch:
    """Per thread, one float64 array per name, handed out again on each call of the same shape."""

    def __init__(self):
        self._local = threading.local()

    def array(self, name: str, shape: tuple) -> np.ndarray:
        """The array for ``name`` of ``shape``, its contents whatever the last call left there."""
        arrays = self._local.__dict__
        kept = arrays.get(name)
        if kept is None or kept.shape != shape:
            kept = arrays[name] = np.empty(shape)
        return kept

    def clear(self) -> None:
        """Every thread's arrays let go (each thread's are freed with the old thread-local store)."""
        self._local = threading.local()


def held_by(owner, module):
    """``module``, whose scratch arrays (where it has any) are freed once ``owner`` and every other holder of it
    are gone. The module itself stays loaded: the next compile of the same text finds it at once."""
    with _lock:
        _holders[module.__name__] += 1
    weakref.finalize(owner, _let_go, module)
    return module


def _let_go(module) -> None:
    with _lock:
        _holders[module.__name__] -= 1
        if _holders[module.__name__]:
            return
        del _holders[module.__name__]
    scratch = getattr(module, "_scratch", None)
    if isinstance(scratch, Scratch):
        scratch.clear()


@lru_cache(maxsize=1)
def keep_freed_memory() -> dict[str, int]:
    """glibc's thresholds raised to :data:`MMAP_THRESHOLD` and :data:`TRIM_THRESHOLD`, where this is glibc and the
    environment names none; the thresholds set, by name (empty where none was)."""
    if platform.libc_ver()[0] != "glibc":
        return {}
    mallopt = ctypes.CDLL(None).mallopt
    chosen = {}
    for name, parameter, value in (("MALLOC_MMAP_THRESHOLD_", _M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                   ("MALLOC_TRIM_THRESHOLD_", _M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        if name not in os.environ and mallopt(parameter, value) == 1:
            chosen[name] = value
    return chosen
