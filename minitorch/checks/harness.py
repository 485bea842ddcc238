"""The process boundary: learner code runs in a forked child, trusted state stays here.

A check that runs learner code against something it counts (a communicator, a device, a
store) keeps that something in *this* process (the grader's, the notebook kernel's) and runs
the learner's function in a child made by ``os.fork``. The child gets proxies that can only
send requests; this process serves them and records what was asked. Whatever the learner's
code does to the objects it can reach in the child (rewrite a counter through ``__closure__``,
``__self__``, ``gc``, ``vars``, a module global) changes the child's copy only.

API
---
``run_apart(fn, *args, serve={}, timeout=60.0, **kwargs)``
    Fork; the child runs ``fn(*args, **kwargs)`` (usually a grader's ``_Guarded`` student
    wrapper, so the reference blocks and the forbidden-call watch run in the child); this
    process serves the child's requests, ``serve[name](*args)``, until it answers; returns
    the child's result as plain values. Inputs travel by fork (no serialisation); results
    and request arguments/results travel through :func:`encode`/:func:`decode`.
    In the child, an exception that is a :class:`CheckFailure` (and its subclasses
    ``ReferenceCalledError``, ``ForbiddenCallError``) or a :class:`StudentError` comes back
    as the same class with the same message; any other exception as a ``StudentError``
    naming its type and message. A child that dies, exits without answering, or runs past
    ``timeout`` seconds (it is killed) is a :class:`CheckFailure` that says so. What the
    child prints reaches this process's ``sys.stdout``/``sys.stderr`` (so a notebook shows
    it): the child's ``sys.stdout``/``sys.stderr`` are replaced by relays before ``fn``
    runs, so ipykernel's OutStream (whose thread does not exist in the child) is never
    touched there. The child ends with ``os._exit``: no atexit handler, no kernel code.
``request(name, *args, **kwargs)``
    Child side: ask the parent to run ``serve[name](*args, **kwargs)``; returns its plain
    result, or raises what it raised (a ``CheckFailure`` as such; ``ValueError``,
    ``TypeError``, ``IndexError``, ``KeyError`` as such; anything else as ``RuntimeError``).
``remote(obj, methods, name) -> (proxy, serve_entries)``
    A proxy whose listed methods only send requests ``"<name>.<method>"`` (its class has
    ``__slots__ = ()``; its methods close over strings only: no path leads from it to
    ``obj``), and the entries to merge into ``serve``.
``run_ranks(fn, world, rank_args, *, timeout=60.0, check=None) -> RankRun``
    Rank programs on the simulated world (labs 20-21, and the simulated runs of 23-26):
    one forked child per rank, each with a protocol-only communicator (``rank``,
    ``world_size``, ``send``, ``recv``, ``isend``, ``irecv``, ``barrier``; handles with
    ``wait`` only) whose calls are requests to a router here that holds the
    :class:`~minitorch.comm.simworld.SimWorld`. Each child gets only its own arguments
    (``rank_args[r]``). See :class:`RankRun` for what is recorded, :func:`run_ranks` for the
    schedule (the SimWorld's baton order, so its clock and message schedule are unchanged).

Where trusted state lives
-------------------------
Trusted objects (a world, a counter, the expected values) live in the parent as *locals of
the grader function*, never as module globals: after the fork the child holds a copy of
the parent's memory, and a copy kept in a module global would be one ``import`` away from
the learner's code (useless to the grade, which is computed from the parent's original, but
it would leak the expected values). A copy held only by grader frames is reachable in the
child by frame or ``gc`` introspection alone, which the sealed kernel vetoes during a guarded
call (:mod:`minitorch.course.sealed`); in a plain kernel nothing stops it, as nothing stops
any in-process reflection there. The message that ends the child (its result or error)
carries an HMAC keyed with a secret made for that run and held by a local of the harness's
frames: learner code that writes to the channel's file descriptor directly cannot forge
the answer (that would skip the forbidden-call check that runs after ``fn`` returns).

The codec
---------
Plain values only, by exact type (as :func:`~minitorch.checks.values.plain`): ``None``,
``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``; ``tuple``, ``list``, ``dict``
of them (an exact ``Counter``/``OrderedDict``/``defaultdict`` reads as a dict); numpy arrays
and numpy's own scalars of numeric, string or bytes dtype, as dtype + shape + bytes.
Nothing is unpickled; anything else (an ``int`` subclass whose ``==`` lies, an object
array, a pickle) is refused with a ``CheckFailure`` naming it.

Measured costs (2 shared cores, 7 other jobs, torch imported; medians of 20): fork + exit
of a child 16 ms quiet, 54 ms under load; one request round trip 47-89 us; ``run_apart`` of
a function returning a 1,000-float array 17-64 ms; a ring all-reduce on 8 simulated ranks
(8 children, 112 messages) 0.36 s.
"""

from __future__ import annotations

import collections
import fcntl
import hmac
import io
import os
import secrets
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from minitorch.checks.errors import (
    CheckFailure,
    ForbiddenCallError,
    ReferenceCalledError,
    StudentError,
)

__all__ = [
    "RankRun",
    "decode",
    "encode",
    "remote",
    "request",
    "run_apart",
    "run_ranks",
]

# ----------------------------------------------------------------------------- the codec
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


class _Relay(io.TextIOBase):
    """The child's sys.stdout / sys.stderr: each write becomes a message to the parent."""

    def __init__(self, stream: str, fd: int) -> None:
        self._stream, self._fd = stream, fd

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:  # type: ignore[override]
        text = str(text)
        if text:
            _write(self._fd, b"P" + encode((self._stream, text)))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


def _describe_error(exc: BaseException) -> tuple[str, str]:
    """(course class name, message) of what the child raised, as the parent re-raises it."""
    for cls in type(exc).__mro__:
        if cls in (ReferenceCalledError, ForbiddenCallError, CheckFailure, StudentError):
            return cls.__name__, str(exc)
    if isinstance(exc, SystemExit):
        return "StudentError", f"your code called exit() ({exc.code!r})"
    if isinstance(exc, KeyboardInterrupt):
        return "StudentError", "interrupted"
    text = str(exc)
    return "StudentError", f"your code raised {type(exc).__name__}" + (f": {text}" if text else "")


def _run_on_fresh_thread(fn: Callable[..., Any], args: tuple, kwargs: dict) -> list[tuple]:
    """Run ``fn`` on a new thread of the child: its frames start there, so walking ``f_back``
    from the learner's code never reaches the grader's frames copied by the fork."""
    import threading

    box: list[tuple] = []

    def target() -> None:
        try:
            box.append(("ok", fn(*args, **kwargs)))
        except BaseException as exc:  # relayed, whatever it is
            box.append(("raise", exc))

    thread = threading.Thread(target=target, name="learner", daemon=True)
    thread.start()
    thread.join()
    return box[:1]


def _child_main(
    fn: Callable[..., Any], args: tuple, kwargs: dict, wfd: int, rfd: int, key: bytes
) -> None:
    """Run ``fn`` in the child and send the one signed answer; never returns."""
    status = 1
    try:
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _CHILD[:] = [wfd, rfd]
            sys.stdout, sys.stderr = _Relay("out", wfd), _Relay("err", wfd)
            box = _run_on_fresh_thread(fn, args, kwargs)
            if box and box[0][0] == "ok":
                body = b"R" + encode(("ok", box[0][1]))
            else:
                exc = box[0][1] if box else RuntimeError("the learner's thread ended oddly")
                body = b"R" + encode(("raise", _describe_error(exc)))
        except BaseException as exc:
            body = b"R" + encode(("raise", _describe_error(exc)))
        mac = hmac.new(key, body, "sha256").digest()
        _write(wfd, body + mac)
        status = 0
    finally:
        os._exit(status)


def _prepare(fn: Any) -> None:
    """Build a guarded student's watch here, once, so that every child inherits it built."""
    from minitorch.checks.core import _Guarded
    from minitorch.checks.watch import Watch

    if type(fn) is _Guarded and fn.watch is None:
        fn.watch = Watch(fn.forbid, fn.blocks)
        fn.watch.scan(fn.fn)


def _close_all_but(*keep: int) -> None:
    """Close every inherited file descriptor above stderr but ``keep``: the parent's sockets
    (a gloo process group's, a kernel's), files and pipes are not the learner's to use."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _fork(fn: Callable[..., Any], args: tuple, kwargs: dict, key: bytes) -> tuple[int, int, int]:
    """Fork a child running ``fn``; return (pid, fd this side reads, fd this side writes)."""
    up_r, up_w = os.pipe()  # child -> parent
    down_r, down_w = os.pipe()  # parent -> child
    for fd in (up_w, down_w):  # 1 MiB pipes: a large array crosses in few context switches
        try:
            fcntl.fcntl(fd, _F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    pid = os.fork()
    if pid == 0:  # the child
        _close_all_but(up_w, down_r)
        _child_main(fn, args, kwargs, up_w, down_r, key)
    os.close(up_w)
    os.close(down_r)
    return pid, up_r, down_w


def _reap(pid: int, kill: bool) -> int | None:
    """Wait for ``pid`` (killing it first when asked); return its wait status."""
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


def _ended(status: int | None) -> str:
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"was killed by {name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def _print(stream: str, text: str) -> None:
    target = sys.stderr if stream == "err" else sys.stdout
    target.write(text)


def _serve_one(serve: Mapping[str, Callable[..., Any]], body: bytes) -> bytes:
    """Run one request in this process; the encoded reply."""
    try:
        msg = decode(body)
        if type(msg) is not tuple or len(msg) != 3 or type(msg[0]) is not str:
            raise CheckFailure("a request from the learner's process was malformed.")
        name, args, kwargs = msg
        handler = serve.get(name)
        if handler is None:
            raise ValueError(f"no such request {name!r}")
        return encode(("ok", handler(*args, **kwargs)), what=f"the reply to {name}")
    except CheckFailure as exc:
        return encode(("err", ("CheckFailure", str(exc))))
    except Exception as exc:
        kind = type(exc).__name__ if type(exc).__name__ in _RELAYED_ERRORS else "RuntimeError"
        return encode(("err", (kind, str(exc))))


def _verify(body: bytes, key: bytes) -> Any:
    """The child's answer, once its MAC checks out."""
    if len(body) < 33 or not hmac.compare_digest(
        hmac.new(key, body[:-32], "sha256").digest(), body[-32:]
    ):
        raise CheckFailure(
            "the answer of the learner's process was not written by the harness (unsigned): "
            "something else wrote to the grader's channel."
        )
    return decode(body[1:-32])


def _reraise(answer: Any, prefix: str = "") -> Any:
    if type(answer) is not tuple or len(answer) != 2:
        raise CheckFailure("the answer of the learner's process was malformed.")
    status, value = answer
    if status == "ok":
        return value
    kind, message = value
    cls = _COURSE_ERRORS.get(kind, StudentError)
    raise cls(prefix + str(message))


def run_apart(
    fn: Callable[..., Any],
    *args: Any,
    serve: Mapping[str, Callable[..., Any]] | None = None,
    timeout: float = 60.0,
    **kwargs: Any,
) -> Any:
    """Run ``fn(*args, **kwargs)`` in a forked child; serve its requests; its plain result."""
    serve = dict(serve or {})
    key = secrets.token_bytes(32)
    _prepare(fn)
    pid, rfd, wfd = _fork(fn, args, kwargs, key)
    chan, answer, finished = _Channel(rfd), None, False
    deadline = time.monotonic() + timeout
    try:
        while answer is None:
            frame = chan.frame()
            if frame is None:
                if chan.eof:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CheckFailure(
                        f"the learner's code did not finish within {timeout:g} s (the process "
                        "was stopped): an endless loop, or a wait for something that never "
                        "comes?"
                    )
                if select.select([rfd], [], [], min(left, 1.0))[0]:
                    chan.fill()
                continue
            tag, body = frame[:1], frame[1:]
            if tag == b"P":
                stream, text = decode(body)
                _print(str(stream), str(text))
            elif tag == b"Q":
                _write(wfd, _serve_one(serve, body))
            elif tag == b"R":
                answer = _verify(frame, key)
            else:
                raise CheckFailure("a message from the learner's process was malformed.")
        finished = answer is not None
    finally:
        os.close(rfd)
        os.close(wfd)
        status = _reap(pid, kill=not finished)
    if answer is None:
        raise CheckFailure(
            f"the learner's process {_ended(status)} without answering (os._exit, a crash, "
            "or a signal): the check has no result to grade."
        )
    return _reraise(answer)


# ----------------------------------------------------------------------------- remote
def _proxy_method(key: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return request(key, *args, **kwargs)

    method.__name__ = key.rsplit(".", 1)[-1]
    return method


def remote(obj: Any, methods: Sequence[str], name: str) -> tuple[Any, dict[str, Callable]]:
    """A proxy of ``obj`` for the child (``methods`` only, as requests) and the serve entries.

    The proxy holds nothing of ``obj``: its class has ``__slots__ = ()`` and each method
    closes over the request's name alone. Arguments and results cross as plain values.
    """
    entries = {f"{name}.{m}": getattr(obj, m) for m in methods}
    namespace: dict[str, Any] = {m: _proxy_method(f"{name}.{m}") for m in methods}
    namespace["__slots__"] = ()
    namespace["__repr__"] = lambda self, _n=str(name): f"<{_n}: requests to the grader>"
    proxy_cls = type(f"Remote_{name}".replace(".", "_"), (), namespace)
    return proxy_cls(), entries


# ----------------------------------------------------------------------------- ranks
@dataclass
class RankRun:
    """What :func:`run_ranks` recorded, on the router's side (never in a rank's reach).

    ``results``: each rank's return value (plain). ``world``: the SimWorld after the run
    (``bytes_sent``, ``bytes_recv``, ``msgs_sent``, ``msgs_recv``, ``inter_bytes_sent``,
    ``link_bytes``, ``clock``, ``time``). Per rank ``r``: ``messages[r]``, ``bytes[r]``
    (payload bytes sent), ``to[r]`` (bytes per destination), ``dtypes[r]`` (bytes per dtype
    name), ``events[r]``: ``("S", dst)`` per send and ``("R", src)`` per completed receive,
    in program order; ``order``: ``(rank, "S"|"R", peer, nbytes, dtype, tag)`` for every
    message event, in the order the router saw them; ``unreceived``: ``(src, dst, tag,
    count)`` of messages sent but never received when every rank had finished.
    """

    results: list[Any]
    world: Any
    messages: list[int]
    bytes: list[int]
    to: list[dict[int, int]]
    dtypes: list[dict[str, int]]
    events: list[list[tuple[str, int]]]
    order: list[tuple[int, str, int, int, str, int]] = field(default_factory=list)
    unreceived: list[tuple[int, int, int, int]] = field(default_factory=list)

    def float_bytes(self, r: int) -> int:
        """Payload bytes rank ``r`` sent as floating-point arrays."""
        return sum(n for d, n in self.dtypes[r].items() if np.dtype(d).kind == "f")


class _Stop(Exception):
    """The run ends now (an error the parent raises after stopping every rank)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Handle:
    """What isend/irecv return on a rank: ``wait()`` and nothing else."""

    __slots__ = ("wait",)

    def __init__(self, wait: Callable[[], Any]) -> None:
        self.wait = wait

    def __repr__(self) -> str:
        return "<request: wait() for it>"


def _rank_comm(rank: int, world_size: int) -> Any:
    """The protocol-only communicator of a rank: every call a request to the router."""

    def _send(x: Any, dst: Any, tag: Any) -> None:
        arr = np.asarray(x)
        if type(arr) is not np.ndarray or arr.dtype.kind not in _KINDS or arr.dtype.fields:
            raise TypeError(f"send an array of numbers, not {type(x).__name__} of {arr.dtype}")
        request("comm.send", arr, _peer(dst, "dst"), _tag(tag))

    def _recv(src: Any, tag: Any) -> np.ndarray:
        return request("comm.recv", _peer(src, "src"), _tag(tag))  # type: ignore[no-any-return]

    class Comm:
        __slots__ = ()

        @property
        def rank(self) -> int:
            return rank

        @property
        def world_size(self) -> int:
            return world_size

        def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
            _send(x, dst, tag)

        def recv(self, src: int, tag: int = 0) -> np.ndarray:
            return _recv(src, tag)

        def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> _Handle:
            _send(x, dst, tag)
            return _Handle(lambda: None)

        def irecv(self, src: int, tag: int = 0) -> _Handle:
            src, tag = _peer(src, "src"), _tag(tag)
            return _Handle(lambda: _recv(src, tag))

        def barrier(self) -> None:
            request("comm.barrier")

        def __repr__(self) -> str:
            return f"<Communicator rank {rank} of {world_size}>"

    return Comm()


def _peer(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a rank number (an int), got {type(value).__name__}")
    return int(value)


def _tag(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"tag must be an int, got {type(value).__name__}")
    return int(value)


def _rank_main(fn: Callable[..., Any], rank: int, world_size: int, args: tuple) -> Any:
    request("rank.start")  # wait for the baton
    return fn(_rank_comm(rank, world_size), *args)


class _Router:
    """The SimWorld's rules, driven by requests: one rank runs at a time (the baton)."""

    def __init__(self, world: Any, check: Callable[..., Any] | None) -> None:
        self.world, self.check = world, check
        p = world.world_size
        world.reset()
        world._queues = collections.defaultdict(collections.deque)
        self.state = ["start"] * p  # start | run | recv | barrier | done
        self.wanted: list[tuple[int, int] | None] = [None] * p
        self.turn = -1
        self.run = RankRun(
            [None] * p, world, [0] * p, [0] * p, [{} for _ in range(p)],
            [{} for _ in range(p)], [[] for _ in range(p)],
        )  # fmt: skip

    # a rank's request: return ("reply", value) to answer now, or None to park it
    def handle(self, r: int, name: str, args: tuple) -> tuple[str, Any] | None:
        if r != self.turn:
            raise _Stop(CheckFailure(f"rank {r} made a request out of turn (the harness's rule)."))
        if name == "comm.send":
            x, dst, tag = args
            self._send(r, x, dst, tag)
            return ("ok", None)
        if name == "comm.recv":
            src, tag = args
            self._peer_ok(src)
            if self.world._queues[(src, r, tag)]:
                return ("ok", self._take(r, src, tag))
            self.state[r], self.wanted[r] = "recv", (src, tag)
            return None
        if name == "comm.barrier":
            self.state[r] = "barrier"
            return None
        raise _Stop(CheckFailure(f"rank {r} asked for {name!r}, which a rank may not ask."))

    def _peer_ok(self, peer: int) -> None:
        if not 0 <= peer < self.world.world_size:
            raise ValueError(f"rank {peer} is outside the world of size {self.world.world_size}")

    def _send(self, r: int, x: np.ndarray, dst: int, tag: int) -> None:
        self._peer_ok(dst)
        if self.check is not None:
            self.check(r, x, dst)  # may raise CheckFailure: the run stops there
        self.world._send(r, x, dst, tag)
        run, n = self.run, int(x.nbytes)
        run.messages[r] += 1
        run.bytes[r] += n
        run.to[r][dst] = run.to[r].get(dst, 0) + n
        run.dtypes[r][str(x.dtype)] = run.dtypes[r].get(str(x.dtype), 0) + n
        run.events[r].append(("S", dst))
        run.order.append((r, "S", dst, n, str(x.dtype), tag))

    def _take(self, r: int, src: int, tag: int) -> np.ndarray:
        world = self.world
        x, arrival = world._queues[(src, r, tag)].popleft()
        world.clock[r] = max(world.clock[r], arrival)
        world.bytes_recv[r] += int(x.nbytes)
        world.msgs_recv[r] += 1
        self.run.events[r].append(("R", src))
        self.run.order.append((r, "R", src, int(x.nbytes), str(x.dtype), tag))
        return x  # type: ignore[no-any-return]

    def _runnable(self, q: int) -> bool:
        state = self.state[q]
        if state in ("run", "start"):
            return True
        if state == "recv":
            src, tag = self.wanted[q]  # type: ignore[misc]
            return bool(self.world._queues[(src, q, tag)])
        return False

    def next_turn(self, r: int) -> tuple[int, Any] | None:
        """Pass the baton after ``r``: (rank, reply to its parked request), or None if all done.

        Raises a deadlock ``CheckFailure`` when ranks remain and none can run.
        """
        p, world = self.world.world_size, self.world
        waiting = [q for q in range(p) if self.state[q] == "barrier"]
        alive = [q for q in range(p) if self.state[q] != "done"]
        if not alive:
            return None
        released: set[int] = set()
        if waiting and len(waiting) == len(alive):
            now = max(world.clock[q] for q in alive)
            for q in waiting:
                self.state[q], world.clock[q] = "run", now
                released.add(q)
        for k in range(1, p + 1):
            q = (r + k) % p
            if self._runnable(q):
                state = self.state[q]
                self.turn, self.state[q] = q, "run"
                if state == "recv":
                    src, tag = self.wanted[q]  # type: ignore[misc]
                    self.wanted[q] = None
                    return q, self._take(q, src, tag)
                return q, None
        raise _Stop(CheckFailure(self._deadlock(alive)))

    def _deadlock(self, alive: list[int]) -> str:
        parts = []
        for q in alive:
            if self.state[q] == "recv":
                src, tag = self.wanted[q]  # type: ignore[misc]
                parts.append(f"rank {q} waits for a message from rank {src}"
                             + (f" (tag {tag})" if tag else ""))  # fmt: skip
            else:
                parts.append(f"rank {q} waits at the barrier")
        done = [q for q in range(self.world.world_size) if self.state[q] == "done"]
        tail = f"; finished: rank {', '.join(map(str, done))}" if done else ""
        return (
            "deadlock: every unfinished rank waits and no message is on its way: "
            + "; ".join(parts)
            + tail
            + ". Does every recv have a matching send (same peer, "
            "same tag), posted before the sender waits itself?"
        )


def run_ranks(
    fn: Callable[..., Any],
    world: Any,
    rank_args: Sequence[Sequence[Any]],
    *,
    timeout: float = 60.0,
    check: Callable[[int, np.ndarray, int], Any] | None = None,
) -> RankRun:
    """Run ``fn(comm, *rank_args[r])`` on every rank of ``world``, one forked child per rank.

    ``world`` is a :class:`~minitorch.comm.simworld.SimWorld` (reset first; its counters,
    links and clock are the run's record) or a world size (a default SimWorld). ``fn`` is
    usually a grader's guarded student (so blocks and the forbidden-call watch run on every
    rank). The schedule is the SimWorld's: one rank runs at a time and the baton passes in
    rank order when the running rank finishes, waits for a message not yet sent, or waits
    at a barrier; so results, counters and the modelled clock are those of ``world.run``.
    ``check(rank, x, dst)`` sees every payload before it is counted and may raise a
    ``CheckFailure`` (the run stops with it). A rank's error comes back as itself
    (``CheckFailure`` family as such, anything else a ``StudentError`` prefixed
    ``rank r: ``), never as a peer's failure; all ranks blocked: a ``CheckFailure`` naming
    who waits for whom; ``timeout`` is for the whole run.
    """
    if isinstance(world, int):
        from minitorch.comm.simworld import SimWorld

        world = SimWorld(world)
    p = world.world_size
    if len(rank_args) != p:
        raise ValueError(f"rank_args has {len(rank_args)} entries for {p} ranks")
    router = _Router(world, check)
    key = secrets.token_bytes(32)
    _prepare(fn)
    children: list[tuple[int, int, int]] = []
    chans: dict[int, tuple[int, _Channel, int]] = {}  # read fd -> (rank, channel, write fd)
    parked: dict[int, bool] = {}
    error: BaseException | None = None
    finished: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        for r in range(p):
            pid, rfd, wfd = _fork(_rank_main, (fn, r, p, tuple(rank_args[r])), {}, key)
            children.append((pid, rfd, wfd))
            chans[rfd] = (r, _Channel(rfd), wfd)
        wfds = [c[2] for c in children]

        def give(q: int, value: Any) -> None:
            _write(wfds[q], encode(("ok", value)))

        started = False
        while len(finished) < p and error is None:
            # the start requests: every child asks once; rank 0 gets the baton first
            ready = [fd for fd, (_, ch, _) in chans.items() if ch.frame_ready()]
            if not ready:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Stop(CheckFailure(
                        f"the ranks did not finish within {timeout:g} s (stopped): an endless "
                        f"loop on rank {router.turn}?"))  # fmt: skip
                live = [fd for fd, (q, ch, _) in chans.items() if not ch.eof]
                for fd in select.select(live, [], [], min(left, 1.0))[0]:
                    chans[fd][1].fill()
                for q, ch, _ in chans.values():
                    if ch.eof and not ch.frame_ready() and q not in finished:
                        raise _Stop(CheckFailure(
                            f"rank {q}'s process {_ended(_reap(children[q][0], False))} "
                            "without answering (os._exit, a crash, or a signal)."))  # fmt: skip
                continue
            for fd in ready:
                q, ch, _ = chans[fd]
                frame = ch.frame()
                assert frame is not None
                tag, body = frame[:1], frame[1:]
                if tag == b"P":
                    stream, text = decode(body)
                    _print(str(stream), str(text))
                    continue
                if tag == b"R":
                    answer = _verify(frame, key)
                    finished.add(q)
                    router.state[q] = "done"
                    try:
                        router.run.results[q] = _reraise(answer, prefix=f"rank {q}: ")
                    except (CheckFailure, StudentError) as exc:
                        error = exc
                        break
                    if q == router.turn:
                        nxt = router.next_turn(q)
                        if nxt is not None:
                            give(*nxt)
                    continue
                if tag != b"Q":
                    raise _Stop(CheckFailure("a message from a rank's process was malformed."))
                msg = decode(body)
                if type(msg) is not tuple or len(msg) != 3 or type(msg[0]) is not str:
                    raise _Stop(CheckFailure("a request from a rank's process was malformed."))
                name, args, _kw = msg
                if name == "rank.start":
                    if router.state[q] != "start" or q in parked:
                        raise _Stop(CheckFailure(f"rank {q} asked to start twice."))
                    parked[q] = True
                    if not started and len(parked) == p:
                        started = True
                        router.turn, router.state[0] = 0, "run"
                        give(0, None)
                    continue
                try:
                    reply = router.handle(q, name, tuple(args))
                except (ValueError, TypeError) as exc:
                    _write(wfds[q], encode(("err", (type(exc).__name__, str(exc)))))
                    continue
                if reply is not None:
                    give(q, reply[1])
                else:
                    nxt = router.next_turn(q)
                    if nxt is not None:
                        give(*nxt)
    except _Stop as stop:
        error = stop.error
    finally:
        for _pid, rfd, wfd in children:
            os.close(rfd)
            os.close(wfd)
        for r, (pid, _, _) in enumerate(children):
            _reap(pid, kill=r not in finished or error is not None)
    if error is not None:
        raise error
    router.run.unreceived = sorted(
        (src, dst, tag, len(q)) for (src, dst, tag), q in world._queues.items() if q
    )
    return router.run
