"""Scratch arrays of generated modules: the tensors a module computes and reads within one call and never returns
(a convolution's gather, ``im2col``; a contraction split off a kernel's body), kept from call to call rather than
allocated anew.

A fresh array of megabytes costs the operating system a page fault per page on its first write, as much as a
kernel's whole work for a strided convolution's gradients (benchmarks/workloads.py, whose docstring and results
give the figures). Each thread has its own arrays, so two threads calling one module never share one; a module's
arrays live as long as the thread.
"""

from __future__ import annotations

import threading

import numpy as np


class Scratch:
    """Per thread, one float64 array per name and shape, handed out again on each call."""

    def __init__(self):
        self._local = threading.local()

    def array(self, name: str, shape: tuple) -> np.ndarray:
        """The array for ``name`` of ``shape``, its contents whatever the last call left there."""
        arrays = self._local.__dict__
        key = (name, shape)
        if key not in arrays:
            arrays[key] = np.empty(shape)
        return arrays[key]
