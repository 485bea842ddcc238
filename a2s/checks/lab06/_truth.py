"""Lab 06's trusted side, shared by its trace graders: counting the learner's Python lines, and
checking that a blocked trace covers every iteration exactly once."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from a2s.checks.core import assert_true


def line_events(fn: Callable[..., object], *args: object) -> tuple[object, int]:
    """``fn(*args)`` and the lines run (plus calls) in frames of the learner's own module.

    A Python loop over the n^3 iterations runs at least one line per iteration (every
    backward jump of a loop, a comprehension or a generator is a line event); numpy's
    vectorised work runs none in the learner's frames.
    """
    inner = getattr(fn, "fn", fn)
    home = getattr(inner, "__globals__", None)
    count = [0]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
        return local

    def tracer(frame, event, arg):
        if frame.f_globals is home:
            count[0] += 1
            return local
        return None

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args)
        intact = sys.gettrace() is tracer
    finally:
        sys.settrace(old)
    assert_true(intact, "your function changed sys.settrace while it ran (the check counts lines).")
    return result, count[0]


def _covers(trace: np.ndarray, n: int, case: str, tile: int = 0) -> None:
    """Every iteration (i, j, k) exactly once, each with consistent A, B, C addresses."""
    padded = tile and trace.size == 3 * (-(-n // tile) * tile) ** 3 != 3 * n**3
    assert_true(
        trace.ndim == 1 and trace.size == 3 * n**3 and trace.dtype.kind in "iu",
        f"[{case}] return {3 * n**3:,} integer addresses (3 per iteration), got "
        f"{trace.shape} {trace.dtype}."
        + (
            " That is whole tiles past n: clip the last tiles at n (min(i0 + T, n))."
            if padded
            else ""
        ),
    )
    a, b, c = (trace.reshape(-1, 3)[:, t] // 8 - t * n * n for t in range(3))
    ok = (a >= 0) & (a < n * n) & (b >= 0) & (b < n * n) & (c >= 0) & (c < n * n)
    assert_true(bool(ok.all()), f"[{case}] an address is outside A, B or C (A at 0, B at 8n^2).")
    i, k, k2, j, i2, j2 = a // n, a % n, b // n, b % n, c // n, c % n
    assert_true(
        bool(((i == i2) & (k == k2) & (j == j2)).all()),
        f"[{case}] some iteration reads A[i,k], B[k',j], C[i',j'] with k' != k or i' != i: "
        "each triple must belong to one iteration (i, j, k).",
    )
    seen = np.bincount((i * n + j) * n + k, minlength=n**3)
    assert_true(
        bool((seen == 1).all()),
        f"[{case}] {int((seen == 0).sum())} iterations (i, j, k) are missing and "
        f"{int((seen > 1).sum())} repeated: C would be wrong. Cover each exactly once "
        "(clip the last tile at n).",
    )
