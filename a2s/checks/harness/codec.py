"""The harness's plain-value codec: encode/decode."""

from __future__ import annotations

import collections
import struct
from typing import Any

import numpy as np

from a2s.checks.errors import (
    CheckFailure,
)

_MAX_DEPTH = 64
_LEN = struct.Struct("<Q")
_F64 = struct.Struct("<d")
_C128 = struct.Struct("<dd")
_KINDS = "biufcSU"  # numeric, bytes and str dtypes
_DICTS = (dict, collections.Counter, collections.OrderedDict, collections.defaultdict)


def _numpy_scalar(kind: type) -> bool:
    return (
        issubclass(kind, np.generic)
        and kind.__module__ == "numpy"
        and getattr(np, kind.__name__, None) is kind
    )


def _refuse(x: Any, what: str) -> CheckFailure:
    kind = type(x)
    if isinstance(x, (bool, int, float, complex, str, bytes, tuple, list, dict)):
        base = next(b.__name__ for b in kind.__mro__[1:] if b.__module__ == "builtins")
        why = f"a {kind.__qualname__} (a subclass of {base})"
    else:
        why = f"a {kind.__module__}.{kind.__qualname__}"
    return CheckFailure(
        f"{what} is {why}; only plain values cross to the grader (numbers, strings, bytes, "
        "tuples, lists, dicts, numpy arrays of numbers): a value may not decide its own "
        "equality."
    )


def encode(x: Any, what: str = "the result") -> bytes:
    """``x`` as bytes of the harness's plain-value format (refuses anything else)."""
    out: list[bytes] = []
    _enc(x, out, what, 0)
    return b"".join(out)


def _enc(x: Any, out: list[bytes], what: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise CheckFailure(f"{what} is nested more than {_MAX_DEPTH} levels deep.")
    kind = type(x)
    if x is None:
        out.append(b"N")
    elif kind is bool:
        out.append(b"T" if x else b"F")
    elif kind is int:
        text = int.__repr__(x).encode("ascii")
        out += [b"I", _LEN.pack(len(text)), text]
    elif kind is float:
        out += [b"D", _F64.pack(x)]
    elif kind is complex:
        out += [b"C", _C128.pack(x.real, x.imag)]
    elif kind is str:
        data = x.encode("utf-8", "surrogatepass")
        out += [b"S", _LEN.pack(len(data)), data]
    elif kind is bytes:
        out += [b"B", _LEN.pack(len(x)), x]
    elif kind in (tuple, list):
        out += [b"(" if kind is tuple else b"[", _LEN.pack(len(x))]
        for v in x:
            _enc(v, out, what, depth + 1)
    elif kind in _DICTS:
        out += [b"{", _LEN.pack(len(x))]
        for k, v in dict.items(x):
            _enc(k, out, what, depth + 1)
            _enc(v, out, what, depth + 1)
    elif kind is np.ndarray or _numpy_scalar(kind):
        dtype = x.dtype
        if type(dtype).__module__ != "numpy.dtypes" or dtype.kind not in _KINDS or dtype.fields:
            raise CheckFailure(f"{what} has dtype {dtype}; only numbers, str and bytes cross.")
        name = dtype.str.encode("ascii")
        arr = np.ascontiguousarray(x) if kind is np.ndarray else np.asarray(x)
        data = arr.tobytes()
        out += [b"A" if kind is np.ndarray else b"G", _LEN.pack(len(name)), name]
        out += [_LEN.pack(arr.ndim), *(_LEN.pack(n) for n in arr.shape)]
        out += [_LEN.pack(len(data)), data]
    else:
        raise _refuse(x, what)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def length(self) -> int:
        return int(_LEN.unpack(self.take(8))[0])


def decode(data: bytes) -> Any:
    """The value :func:`encode` wrote; a malformed message is a ``CheckFailure``."""
    reader = _Reader(bytes(data))
    try:
        value = _dec(reader, 0)
        if reader.pos != len(reader.data):
            raise ValueError("trailing bytes")
    except CheckFailure:
        raise
    except Exception as exc:  # anything malformed: never executed, only refused
        raise CheckFailure(
            f"a message from the learner's process was malformed ({exc}); the channel carries "
            "only what the harness writes."
        ) from None
    return value


def _dec(r: _Reader, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deep")
    tag = r.take(1)
    if tag == b"N":
        return None
    if tag in (b"T", b"F"):
        return tag == b"T"
    if tag == b"I":
        text = r.take(r.length()).decode("ascii")
        if not text.lstrip("-").isdigit():
            raise ValueError("bad int")
        return int(text)
    if tag == b"D":
        return float(_F64.unpack(r.take(8))[0])
    if tag == b"C":
        re_, im = _C128.unpack(r.take(16))
        return complex(re_, im)
    if tag == b"S":
        return r.take(r.length()).decode("utf-8", "surrogatepass")
    if tag == b"B":
        return r.take(r.length())
    if tag in (b"(", b"["):
        items = [_dec(r, depth + 1) for _ in range(r.length())]
        return tuple(items) if tag == b"(" else items
    if tag == b"{":
        out = {}
        for _ in range(r.length()):
            key = _dec(r, depth + 1)
            out[key] = _dec(r, depth + 1)
        return out
    if tag in (b"A", b"G"):
        name = r.take(r.length()).decode("ascii")
        if not all(c.isalnum() or c in "<>|=" for c in name):
            raise ValueError(f"bad dtype {name!r}")
        dtype = np.dtype(name)
        if dtype.kind not in _KINDS or dtype.fields:
            raise ValueError(f"dtype {dtype} not allowed")
        shape = tuple(r.length() for _ in range(r.length()))
        data = r.take(r.length())
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dtype.itemsize != len(data):
            raise ValueError("array size")
        arr = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
        return arr if tag == b"A" else arr[()]
    raise ValueError(f"unknown tag {tag!r}")
