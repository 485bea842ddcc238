"""Grader of exercise 37.3: a ctypes call of a compiled kernel, argtypes and strides right.

The grader builds its own ``lab37_axpy`` (``_truth.AXPY``: ``y[i*incy] += alpha * x[i*incx]`` in
C floats, with a count of the elements it processed that only ``lab37_done`` reads) with g++
once per process, in a private temporary directory, loads it and hands the learner's ``axpy(lib,
alpha, x, y)`` views into larger float32 buffers: contiguous, strided, reversed, a matrix
column. Judged per case: every element of ``y`` equals numpy's float32 ``y + float32(alpha) *
x`` bit for bit; nothing else of either buffer changed (a stride in bytes, not elements, writes
outside ``y``); the kernel processed exactly ``n`` elements, and its last call (which only the
grader reads, with ``lab37_last``) paired ``x``'s element addresses with ``y``'s, with
``alpha``, so ``y``'s bytes are the C call's (not a call on a scratch buffer, or with alpha 0,
then numpy writing ``y``); a float64 array raises ``TypeError`` and arrays of different lengths
``ValueError`` before C sees a pointer. The cases run first in a forked child, so a call that
crashes is reported, not fatal.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.lab37._truth import NATIVE, axpy_library
from a2s.checks.values import assert_true

__all__ = ["check_axpy"]

# (label, n, incx, incy, alpha); a matrix column is incx = the row length
_CASES = [
    ("contiguous, n=7", 7, 1, 1, 0.5),
    ("n=0 touches nothing", 0, 1, 1, 2.0),
    ("n=1", 1, 1, 1, -1.5),
    ("x strided by 3", 33, 3, 1, 0.25),
    ("y strided by 2", 40, 1, 2, -2.25),
    ("x reversed (stride -1)", 17, -1, 1, 1.0 / 3.0),
    ("both strided, y reversed", 25, 2, -3, 3.0),
    ("x a column of a 50 x 64 matrix", 50, 64, 1, 0.1),
]


def _view(buf: np.ndarray, n: int, inc: int) -> np.ndarray:
    return buf[buf.size // 2 :: inc][:n]


def _buffers(g: Any, n: int, incx: int, incy: int) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 buffers, each 8x the reach of its view plus slack on both sides."""
    sizes = [2 * (8 * max(n - 1, 0) * abs(inc) + 1) + 64 for inc in (incx, incy)]
    return tuple(g.standard_normal(s).astype(np.float32) for s in sizes)  # type: ignore[return-value]


def _pairs(n: int, x: int, incx: int, y: int, incy: int) -> set[tuple[int, int]]:
    """The (x address, y address) of every element a call pairs (4-byte floats)."""
    i = np.arange(n, dtype=np.int64) * 4
    return set(zip((x + i * incx).tolist(), (y + i * incy).tolist(), strict=True))


def _on_x_and_y(label: str, last: Any, alpha: float, x: np.ndarray, y: np.ndarray) -> None:
    """The kernel's last call paired x's elements with y's, with alpha: the bytes of y are the
    C call's (not a call on scratch buffers, or with alpha 0, and numpy writing y)."""
    n, px, incx, py, incy, got_alpha = last()
    sx, sy = x.strides[0] // 4, y.strides[0] // 4
    want = _pairs(x.size, x.ctypes.data, sx, y.ctypes.data, sy)
    if n != x.size or got_alpha != np.float32(alpha) or _pairs(n, px, incx, py, incy) != want:
        raise CheckFailure(
            f"[{label}] lab37_axpy did not compute this y: its call was on other memory or "
            "another alpha (a scratch buffer, a copy, alpha 0) and y was written some other "
            "way. The work must be the call's: pass x's and y's own addresses and alpha."
        )


def _one(student: Callable[..., Any], lib: Any, done: Any, case: tuple, last: Any) -> None:
    label, n, incx, incy, alpha, g = case
    xbuf, ybuf = _buffers(g, n, incx, incy)
    x0, y0 = xbuf.copy(), ybuf.copy()
    x, y = _view(xbuf, n, incx), _view(ybuf, n, incy)
    want = ybuf.copy()
    wy = _view(want, n, incy)
    wy[...] = wy + np.float32(alpha) * x  # numpy's float32 arithmetic, one rounding per op
    before = done()
    student(lib, alpha, x, y)
    work = done() - before
    assert_true(
        np.array_equal(xbuf, x0), f"[{label}] x (or memory around it) changed: x is input only."
    )
    outside = np.ones(ybuf.size, bool)
    outside[_view(np.arange(ybuf.size), n, incy)] = False
    if not np.array_equal(ybuf[outside], y0[outside]):
        raise CheckFailure(
            f"[{label}] the call wrote outside y's {n} elements: the kernel's strides are in "
            "elements (y.strides[0] // y.itemsize), numpy's are in bytes."
        )
    if work == 0 and n > 0:
        raise CheckFailure(
            f"[{label}] lab37_axpy processed no element: the kernel must do the work (the "
            "check counts what the C function processed; numpy arithmetic is not the exercise)."
        )
    if n and np.array_equal(ybuf, y0) and not np.array_equal(want, y0):
        raise CheckFailure(
            f"[{label}] the kernel ran but y did not change: either C got a copy of y "
            "(ascontiguousarray, astype or a slice copy make one; pass y.ctypes.data), or alpha "
            "arrived as 0 (a Python float passed as a C double where the kernel reads a float)."
        )
    if not np.array_equal(ybuf, want):
        i = int(np.flatnonzero(_view(ybuf, n, incy) != _view(want, n, incy))[0])
        raise CheckFailure(
            f"[{label}] y[{i}] = {_view(ybuf, n, incy)[i]!r}, want {_view(want, n, incy)[i]!r} "
            f"(y + alpha * x in float32): declare argtypes (c_long, c_float, c_void_p, c_long, "
            "c_void_p, c_long); alpha is a C float, and each stride is in elements."
        )
    assert_true(
        work == n,
        f"[{label}] lab37_axpy processed {work} elements for n = {n}: call it once, with n.",
    )
    if n:
        _on_x_and_y(label, last, alpha, x, y)


def _errors(student: Callable[..., Any], lib: Any, done: Any) -> None:
    bad = [
        ("x float64", np.zeros(8), np.zeros(8, np.float32), TypeError),
        ("y float64", np.zeros(8, np.float32), np.zeros(8), TypeError),
        ("x float16", np.zeros(8, np.float16), np.zeros(8, np.float32), TypeError),
        ("lengths 8 and 9", np.zeros(8, np.float32), np.zeros(9, np.float32), ValueError),
    ]
    for label, x, y, kind in bad:
        before = done()
        try:
            student(lib, 1.0, x, y)
        except StudentError as err:
            if not isinstance(err.__cause__, kind):
                raise CheckFailure(
                    f"[{label}] {err}; axpy must raise {kind.__name__} here, before C sees a "
                    "pointer."
                ) from None
        else:
            raise CheckFailure(
                f"[{label}] axpy returned; it must raise {kind.__name__} before C sees a "
                "pointer (C reads float32 from whatever bytes it is given)."
            )
        assert_true(done() == before, f"[{label}] the kernel ran before the error was raised.")


def _crash_probe(student: Callable[..., Any], lib: Any, done: Any, cases: list, last: Any) -> None:
    """Run every case in a forked child first: a crashing call fails the check, not Python."""
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:  # the child: any Python error is for the real run to report
        faulthandler.disable()  # a crash here is the parent's message, not a dump on stderr
        # the kernel's output streams belong to threads the fork did not copy: print nowhere
        sys.stdout = sys.stderr = open(os.devnull, "w")
        try:
            for case in cases:
                try:
                    _one(student, lib, done, case, last)
                except BaseException:
                    break
        finally:
            os._exit(0)
    deadline = time.monotonic() + 60
    while True:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise CheckFailure("axpy did not return within 60 s (a huge n from a wrong argtype?).")
        time.sleep(0.01)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        raise CheckFailure(
            f"axpy crashed the process ({sig}): C trusted a wrong argument (argtypes missing, "
            "a stride in bytes, a length that is not n); declare argtypes and check the arrays."
        )


def _last(own: Any) -> Callable[[], tuple[int, int, int, int, int, float]]:
    """The grader's reader of the kernel's last call: (n, x, incx, y, incy, alpha)."""
    fn = own.lab37_last
    fn.argtypes = [ctypes.POINTER(ctypes.c_long), ctypes.POINTER(ctypes.c_float)]
    fn.restype = None

    def read() -> tuple[int, int, int, int, int, float]:
        out, alpha = (ctypes.c_long * 5)(), ctypes.c_float()
        fn(out, ctypes.byref(alpha))
        return (*out, alpha.value)  # type: ignore[return-value]

    return read


@grader("37.3", blocks=NATIVE, hand="parts")
def check_axpy(student: Callable[..., Any]) -> str:
    """Exercise 37.3: axpy(lib, alpha, x, y) calls lab37_axpy through ctypes, y in place."""
    path = axpy_library()
    lib = ctypes.CDLL(str(path))  # the learner's handle; the grader reads its count through its own
    own = ctypes.CDLL(str(path))
    own.lab37_done.restype = ctypes.c_long
    own.lab37_done.argtypes = []
    done = own.lab37_done
    last = _last(own)
    g0, new = rng(3703), fresh_rng("37.3")
    cases = [(label, n, ix, iy, a, g0) for label, n, ix, iy, a in _CASES]
    for i in range(3):
        n, ix, iy = (
            int(new.integers(1, 300)),
            int(new.integers(-4, 5)) or 1,
            int(new.integers(1, 4)),
        )
        cases.append(
            (fresh(f"fresh {i}: n={n}, incx={ix}, incy={iy}"), n, ix, iy, float(new.normal()), new)
        )
    start = done()
    _crash_probe(student, lib, done, cases, last)
    for case in cases:
        _one(student, lib, done, case, last)
    _errors(student, lib, done)
    work = done() - start
    return f"{len(cases)} calls exact bit for bit, 4 bad arrays refused; C did {work} elements"
