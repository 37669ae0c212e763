"""Answers as data: what crosses between a student's sandboxed process and the grader.

The grader never runs a student's code and never unpickles what a student's process sends. Every answer
is encoded here as JSON of plain data (``None``, booleans, numbers, text, tuples, lists, sets, dicts,
ranges, fractions, numeric numpy arrays, the text and shapes of a tensoradbook function or program) and
decoded into exactly those types on the other side. A function the student wrote stays in the student's
process: it crosses as a handle, and calling it (:class:`RemoteFunction`) sends its arguments as data and
reads its result back as data. So patching, redefining or faking anything in the student's process cannot
reach the checks, which run in the grader on decoded values.

Messages are length-prefixed JSON over a pipe, at most :data:`MAX_MESSAGE` bytes. This module is also run
inside the sandbox (next to ``answer_worker.py``, without the rest of ``classroom``): standard library and
numpy only; tensoradbook is imported only to rebuild a function from its text.
"""

from __future__ import annotations

import base64
import inspect
import json
import math
import numbers
import os
import struct
from fractions import Fraction

import numpy as np

#: A message larger than this (64 MiB) is refused: an answer is small, a flood is not an answer.
MAX_MESSAGE = 64 * 2 ** 20
_HEADER = struct.Struct(">Q")
HEADER_SIZE = _HEADER.size
_NUMERIC_KINDS = "biufc"


class WireError(Exception):
    """A message that is not a valid answer encoding, too large, or cut off."""


# --- framing --------------------------------------------------------------------------------------------

def send(fd: int, message: dict) -> None:
    """Write one message (a JSON object) to ``fd``."""
    body = json.dumps(message, allow_nan=True, separators=(",", ":")).encode()
    if len(body) > MAX_MESSAGE:
        raise WireError(f"a message of {len(body)} bytes is over the limit of {MAX_MESSAGE}")
    data = memoryview(_HEADER.pack(len(body)) + body)
    while data:
        data = data[os.write(fd, data):]


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 2 ** 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def body_size(header: bytes) -> int:
    """The size of the message that a header announces; a size past :data:`MAX_MESSAGE` is refused."""
    (size,) = _HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes is over the limit of {MAX_MESSAGE}")
    return size


def parse(body: bytes) -> dict:
    """A message's body as the JSON object it must be."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as error:  # ints past Python's digit limit, nesting past the stack
        raise WireError(f"not a valid message: {error}") from None
    if not isinstance(message, dict):
        raise WireError("not a valid message: not a JSON object")
    return message


def receive(fd: int) -> dict:
    """Read one message from ``fd`` (blocking: the worker's side, which the grader feeds); ``EOFError`` when the
    other side is gone. The grader reads with a deadline instead (:mod:`classroom.sandbox`)."""
    return parse(_read_exactly(fd, body_size(_read_exactly(fd, HEADER_SIZE))))


# --- encoding (in the student's process) ----------------------------------------------------------------

def _signature(fn) -> list | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [[p.name, int(p.kind), p.default is not p.empty] for p in parameters]


def encode(value, callables: list, depth: int = 0):
    """``value`` as JSON data; a callable is appended to ``callables`` and sent as its position there."""
    if depth > 100:
        raise WireError("the answer is nested more than 100 levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return {"t": "float", "v": float(value)} if not math.isfinite(value) else float(value)
    if isinstance(value, numbers.Rational):  # Fraction, sympy's Rational
        return {"t": "fraction", "v": [int(value.numerator), int(value.denominator)]}
    if isinstance(value, numbers.Real):
        return {"t": "float", "v": float(value)}
    if isinstance(value, numbers.Complex):
        return {"t": "complex", "v": [float(value.real), float(value.imag)]}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _NUMERIC_KINDS:
            raise WireError(f"an array of {value.dtype} is not an answer; use numbers")
        array = np.ascontiguousarray(value)
        return {"t": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
                "data": base64.b64encode(array.tobytes()).decode()}
    if isinstance(value, range):
        return {"t": "range", "v": [value.start, value.stop, value.step]}
    kind = type(value).__name__
    if kind in ("Function", "Program") and type(value).__module__.startswith("tensoradbook."):
        return {"t": "tensoradbook", "text": str(value), "shapes": {k: list(v) for k, v in value.shapes.items()}}
    if isinstance(value, (tuple, list, set, frozenset)):
        tag = "list" if isinstance(value, list) else "tuple" if isinstance(value, tuple) else "set"
        items = [encode(item, callables, depth + 1) for item in value]
        return items if tag == "list" else {"t": tag, "v": items}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[encode(k, callables, depth + 1), encode(v, callables, depth + 1)]
                                   for k, v in value.items()]}
    if hasattr(value, "tolist") and callable(value.tolist):  # sympy matrices, numpy scalars
        return encode(value.tolist(), callables, depth + 1)
    if callable(value):
        callables.append(value)
        return {"t": "callable", "id": len(callables) - 1, "name": str(getattr(value, "__name__", kind))[:100],
                "signature": _signature(value)}
    return {"t": "unsupported", "type": kind[:100]}


# --- decoding (in the grader) ---------------------------------------------------------------------------

class UnsupportedAnswer:
    """An answer of a type that cannot cross as data; checks refuse it by its type name."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<an object of type {self.type_name}>"


class RemoteFunction:
    """A function that lives in the student's process: calling it sends the arguments as data there and
    returns the result as data. ``inspect.signature`` sees the student's parameters."""

    def __init__(self, call, handle: int, name: str, signature: list | None):
        self._call, self._handle, self.__name__ = call, handle, name
        if signature is not None:
            self.__signature__ = inspect.Signature([
                inspect.Parameter(pname, inspect._ParameterKind(pkind),
                                  **({"default": None} if has_default else {}))
                for pname, pkind, has_default in signature])

    def __call__(self, *args, **kwargs):
        return self._call(self._handle, args, kwargs)

    def __repr__(self) -> str:
        return f"<your function {self.__name__}>"


def decode(data, call=None, depth: int = 0):
    """The value that :func:`encode` encoded; ``call(handle, args, kwargs)`` runs a remote function."""
    if depth > 101:
        raise WireError("nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(item, call, depth + 1) for item in data]
    if not isinstance(data, dict) or not isinstance(data.get("t"), str):
        raise WireError(f"not an answer encoding: {type(data).__name__}")
    tag, value = data["t"], data.get("v")
    try:
        if tag == "float":
            return float(value)
        if tag == "fraction":
            return Fraction(int(value[0]), int(value[1]))
        if tag == "complex":
            return complex(float(value[0]), float(value[1]))
        if tag == "range":
            return range(*(int(v) for v in value))
        if tag in ("tuple", "set"):
            items = [decode(item, call, depth + 1) for item in value]
            return tuple(items) if tag == "tuple" else set(items)
        if tag == "dict":
            return {decode(k, call, depth + 1): decode(v, call, depth + 1) for k, v in value}
        if tag == "ndarray":
            dtype = np.dtype(data["dtype"])
            if dtype.kind not in _NUMERIC_KINDS or dtype.hasobject:
                raise WireError(f"an array of {dtype} is not an answer")
            shape = tuple(int(n) for n in data["shape"])
            return np.frombuffer(base64.b64decode(data["data"]), dtype=dtype).reshape(shape).copy()
        if tag == "tensoradbook":
            import tensoradbook as tab

            return tab.parse(str(data["text"]), {str(k): tuple(int(n) for n in v)
                                                 for k, v in data["shapes"].items()})
        if tag == "callable":
            if call is None:
                raise WireError("a function where none can be called")
            signature = data.get("signature")
            return RemoteFunction(call, int(data["id"]), str(data.get("name", "function"))[:100],
                                  [[str(n), int(k), bool(d)] for n, k, d in signature] if signature else None)
        if tag == "unsupported":
            return UnsupportedAnswer(str(data.get("type", "?"))[:100])
    except WireError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, RecursionError) as error:
        raise WireError(f"a malformed {tag}: {error}") from None
    raise WireError(f"unknown answer type {tag!r}")
