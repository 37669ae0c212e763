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
from collections.abc import Callable
from dataclasses import dataclass
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


# --- the types of answers, each with its encoder and decoder ---------------------------------------------

def _signature(fn) -> list | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [[p.name, int(p.kind), p.default is not p.empty] for p in parameters]


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


def _array(value, inner, callables):
    if value.dtype.kind not in _NUMERIC_KINDS:
        raise WireError(f"an array of {value.dtype} is not an answer; use numbers")
    array = np.ascontiguousarray(value)
    return {"t": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
            "data": base64.b64encode(array.tobytes()).decode()}


def _from_array(data, inner, call):
    dtype = np.dtype(data["dtype"])
    if dtype.kind not in _NUMERIC_KINDS or dtype.hasobject:
        raise WireError(f"an array of {dtype} is not an answer")
    shape = tuple(int(n) for n in data["shape"])
    return np.frombuffer(base64.b64decode(data["data"]), dtype=dtype).reshape(shape).copy()


def _is_tensoradbook(value) -> bool:
    return type(value).__name__ in ("Function", "Program") and type(value).__module__.startswith("tensoradbook.")


def _from_tensoradbook(data, inner, call):
    import tensoradbook as tab  # only here: the sandbox's copy of this module runs without the library otherwise

    return tab.parse(str(data["text"]), {str(k): tuple(int(n) for n in v) for k, v in data["shapes"].items()})


def _callable(value, inner, callables):
    callables.append(value)
    return {"t": "callable", "id": len(callables) - 1,
            "name": str(getattr(value, "__name__", type(value).__name__))[:100], "signature": _signature(value)}


def _from_callable(data, inner, call):
    if call is None:
        raise WireError("a function where none can be called")
    signature = data.get("signature")
    return RemoteFunction(call, int(data["id"]), str(data.get("name", "function"))[:100],
                          [[str(n), int(k), bool(d)] for n, k, d in signature] if signature else None)


def _tagged(tag: str, value) -> dict:
    return {"t": tag, "v": value}


@dataclass(frozen=True)
class AnswerType:
    """One type an answer may have: which values it takes (``accepts``), their encoding
    (``encode(value, inner, callables)``, ``inner`` encoding an item one level deeper) and, for an encoding tagged
    ``{"t": tag, ...}``, its decoding (``decode(data, inner, call)``); plain JSON decodes as itself."""

    tag: str | None
    accepts: Callable[[object], bool]
    encode: Callable
    decode: Callable | None = None


#: Every type of answer, in the order :func:`encode` tries them (a bool is an integer, an integer a fraction).
TYPES = (
    AnswerType(None, lambda v: v is None or isinstance(v, (bool, str)), lambda v, inner, _: v),
    AnswerType(None, lambda v: isinstance(v, numbers.Integral), lambda v, inner, _: int(v)),
    AnswerType("fraction", lambda v: isinstance(v, numbers.Rational),  # Fraction, sympy's Rational
               lambda v, inner, _: _tagged("fraction", [int(v.numerator), int(v.denominator)]),
               lambda d, inner, _: Fraction(int(d["v"][0]), int(d["v"][1]))),
    AnswerType("float", lambda v: isinstance(v, numbers.Real),  # JSON has no inf or nan
               lambda v, inner, _: float(v) if math.isfinite(v) else _tagged("float", float(v)),
               lambda d, inner, _: float(d["v"])),
    AnswerType("complex", lambda v: isinstance(v, numbers.Complex),
               lambda v, inner, _: _tagged("complex", [float(v.real), float(v.imag)]),
               lambda d, inner, _: complex(float(d["v"][0]), float(d["v"][1]))),
    AnswerType("ndarray", lambda v: isinstance(v, np.ndarray), _array, _from_array),
    AnswerType("range", lambda v: isinstance(v, range),
               lambda v, inner, _: _tagged("range", [v.start, v.stop, v.step]),
               lambda d, inner, _: range(*(int(n) for n in d["v"]))),
    AnswerType("tensoradbook", _is_tensoradbook,
               lambda v, inner, _: {"t": "tensoradbook", "text": str(v),
                                    "shapes": {k: list(s) for k, s in v.shapes.items()}},
               _from_tensoradbook),
    AnswerType(None, lambda v: isinstance(v, list), lambda v, inner, _: [inner(item) for item in v]),
    AnswerType("tuple", lambda v: isinstance(v, tuple), lambda v, inner, _: _tagged("tuple", [inner(i) for i in v]),
               lambda d, inner, _: tuple(inner(item) for item in d["v"])),
    AnswerType("set", lambda v: isinstance(v, (set, frozenset)),
               lambda v, inner, _: _tagged("set", [inner(item) for item in v]),
               lambda d, inner, _: {inner(item) for item in d["v"]}),
    AnswerType("dict", lambda v: isinstance(v, dict),
               lambda v, inner, _: _tagged("dict", [[inner(k), inner(x)] for k, x in v.items()]),
               lambda d, inner, _: {inner(k): inner(x) for k, x in d["v"]}),
    AnswerType(None, lambda v: callable(getattr(v, "tolist", None)),  # sympy matrices, numpy scalars
               lambda v, inner, _: inner(v.tolist())),
    AnswerType("callable", callable, _callable, _from_callable),
    AnswerType("unsupported", lambda v: True, lambda v, inner, _: {"t": "unsupported", "type": type(v).__name__[:100]},
               lambda d, inner, _: UnsupportedAnswer(str(d.get("type", "?"))[:100])),
)
_DECODERS = {t.tag: t.decode for t in TYPES if t.decode is not None}


def encode(value, callables: list, depth: int = 0):
    """``value`` as JSON data (in the student's process); a callable is appended to ``callables`` and sent as its
    position there."""
    if depth > 100:
        raise WireError("the answer is nested more than 100 levels deep")
    kind = next(t for t in TYPES if t.accepts(value))
    return kind.encode(value, lambda item: encode(item, callables, depth + 1), callables)


def decode(data, call=None, depth: int = 0):
    """The value that :func:`encode` encoded (in the grader); ``call(handle, args, kwargs)`` runs a remote
    function."""
    if depth > 101:
        raise WireError("nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(item, call, depth + 1) for item in data]
    if not isinstance(data, dict) or not isinstance(data.get("t"), str):
        raise WireError(f"not an answer encoding: {type(data).__name__}")
    tag = data["t"]
    if tag not in _DECODERS:
        raise WireError(f"unknown answer type {tag!r}")
    try:
        return _DECODERS[tag](data, lambda item: decode(item, call, depth + 1), call)
    except WireError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, RecursionError) as error:
        raise WireError(f"a malformed {tag}: {error}") from None
