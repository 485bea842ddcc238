"""run_apart: fork a child, serve its requests, relay its output and answer."""

from __future__ import annotations

import fcntl
import hmac
import io
import os
import secrets
import select
import signal
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from a2s.checks.errors import (
    CheckFailure,
    ForbiddenCallError,
    ReferenceCalledError,
    StudentError,
)
from a2s.checks.harness.codec import decode, encode
from a2s.checks.harness.wire import (
    _CHILD,
    _COURSE_ERRORS,
    _F_SETPIPE_SZ,
    _RELAYED_ERRORS,
    _Channel,
    _write,
)


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
    from a2s.checks.core import _Guarded
    from a2s.checks.watch import Watch

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
