"""Framing and the child side of the harness: frames, channels, request()."""

from __future__ import annotations

import fcntl
import os
from typing import Any

from a2s.checks.errors import (
    CheckFailure,
    ForbiddenCallError,
    ReferenceCalledError,
    StudentError,
)
from a2s.checks.harness.codec import _LEN, decode, encode


# ----------------------------------------------------------------------------- framing
def _write(fd: int, payload: bytes) -> None:
    view = memoryview(_LEN.pack(len(payload)) + payload)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Channel:
    """Reads length-prefixed frames from one file descriptor without blocking the loop."""

    __slots__ = ("buf", "eof", "fd")

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.eof = fd, bytearray(), False

    def fill(self) -> None:
        chunk = os.read(self.fd, 1 << 20)
        if chunk:
            self.buf += chunk
        else:
            self.eof = True

    def frame_ready(self) -> bool:
        return len(self.buf) >= 8 and len(self.buf) >= 8 + _LEN.unpack(self.buf[:8])[0]

    def frame(self) -> bytes | None:
        if len(self.buf) < 8:
            return None
        n = _LEN.unpack(self.buf[:8])[0]
        if n > 1 << 34:
            raise CheckFailure("a message from the learner's process was malformed (size).")
        if len(self.buf) < 8 + n:
            return None
        out = bytes(self.buf[8 : 8 + n])
        del self.buf[: 8 + n]
        return out


def _read_frame(fd: int) -> bytes:
    """Blocking read of one frame (child side)."""
    head = b""
    while len(head) < 8:
        chunk = os.read(fd, 8 - len(head))
        if not chunk:
            os._exit(3)  # the parent went away: nothing left to do
        head += chunk
    n = _LEN.unpack(head)[0]
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            os._exit(3)
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# ----------------------------------------------------------------------------- child side
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_CHILD: list[int] = []  # [write fd, read fd] in a child of run_apart; empty in the parent

_RELAYED_ERRORS: dict[str, type[BaseException]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "IndexError": IndexError,
    "KeyError": KeyError,
    "RuntimeError": RuntimeError,
}
_COURSE_ERRORS: dict[str, type[BaseException]] = {
    "CheckFailure": CheckFailure,
    "ReferenceCalledError": ReferenceCalledError,
    "ForbiddenCallError": ForbiddenCallError,
    "StudentError": StudentError,
}


def request(name: str, *args: Any, **kwargs: Any) -> Any:
    """Child side: run ``serve[name](*args, **kwargs)`` in the parent; return its result."""
    if not _CHILD:
        raise RuntimeError("harness.request() works only inside a child of run_apart/run_ranks")
    wfd, rfd = _CHILD
    _write(wfd, b"Q" + encode((str(name), tuple(args), dict(kwargs)), what=f"{name}'s arguments"))
    reply = decode(_read_frame(rfd))
    if type(reply) is not tuple or len(reply) != 2:
        raise RuntimeError("harness: malformed reply")
    status, value = reply
    if status == "ok":
        return value
    kind, message = value
    cls = _COURSE_ERRORS.get(kind) or _RELAYED_ERRORS.get(kind, RuntimeError)
    raise cls(message)
