"""Grader of exercise 06.5: a tiled matmul whose only arithmetic is micro-kernel calls.

The student's function runs in a forked child (:mod:`a2s.checks.harness`) and gets a
micro-kernel whose calls are requests: ``np.matmul`` on two tiles runs in the grader's
process, which records each call's operand shapes (a log the student's code cannot reach),
and A and B arrive as arrays that refuse arithmetic (ufuncs, dot, einsum, sum) outside the
kernel. The grader checks three things: C against ``torch.matmul`` in float64;
the number of calls, exactly ``ceil(n/T) ceil(k/T) ceil(m/T)`` with no operand larger than
``T x T`` (one call per tile triple: the point of tiling); and, with a *marked* kernel that adds
1 to every product, that C is the sum of the kernel's products (``a @ b`` computed some other
way, with the calls made for show, fails there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import close
from a2s.checks.core import CheckFailure, _Guarded, assert_true, fresh_rng, grader, plain, rng
from a2s.checks.harness import request, run_apart
from a2s.checks.watch import Watch

__all__ = ["check_matmul_tiled"]

_M = "minitorch.kernels.matmul"


class _Kernel:
    """The grader's side of the micro-kernel: ``np.matmul`` plus ``mark``, every call logged.

    It lives in the grader's process; the learner's code, in a forked child, holds only
    :func:`_kernel_proxy`, whose calls are requests, so the log cannot be rewritten.
    """

    __slots__ = ("mark", "shapes")

    def __init__(self, mark: float = 0.0) -> None:
        self.mark = mark
        self.shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def __call__(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if type(x) is not np.ndarray or type(y) is not np.ndarray:
            raise TypeError("kernel(a_tile, b_tile) takes two numpy arrays")
        self.shapes.append((x.shape, y.shape))
        if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[0]:
            raise ValueError(f"kernel: tiles of shapes {x.shape} and {y.shape} do not multiply")
        return np.matmul(x, y) + self.mark


def _kernel_proxy(x: Any, y: Any) -> np.ndarray:
    """What the learner's code calls as ``kernel``: a request to the grader's process."""
    return request("kernel", np.asarray(x), np.asarray(y))


class OutsideKernel(CheckFailure):
    """Arithmetic on A or B done outside the micro-kernel."""


_ARITHMETIC = frozenset(
    {
        "dot",
        "vdot",
        "inner",
        "outer",
        "tensordot",
        "einsum",
        "kron",
        "sum",
        "prod",
        "cumsum",
        "cumprod",
        "mean",
        "average",
        "trace",
        "convolve",
        "correlate",
        "multi_dot",
        "matmul",
    }
)
_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})


def _outside(what: str) -> OutsideKernel:
    return OutsideKernel(
        f"your code computed `{what}` on A or B itself: all arithmetic goes through "
        "kernel(a_tile, b_tile), whose products you accumulate into C (C's own += is fine)."
    )


class _Operand(np.ndarray):
    """A and B as the learner's code sees them (in the child): slicing, shapes, dtypes and
    copies as usual; arithmetic on them (a ufunc, a matmul, a dot, a sum) raises. An
    ``np.asarray`` view drops the type, and what is computed on it is not seen: the marked
    kernel is what holds C to the kernel's products."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise _outside(f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func.__name__ in _ARITHMETIC:
            raise _outside(f"np.{func.__name__}")
        if func.__name__ in _LIKE:  # a fresh accumulator is the learner's own: a plain array
            args = tuple(a.view(np.ndarray) if isinstance(a, _Operand) else a for a in args)
            return func(*args, **kwargs)
        return super().__array_function__(func, types, args, kwargs)

    def dot(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise _outside("ndarray.dot")


def _in_child(student: Callable[..., Any], a: np.ndarray, b: np.ndarray, tile: int, case: str):
    """The learner's process: A and B as operands that refuse arithmetic, the kernel a proxy."""
    try:
        got = student(a.view(_Operand), b.view(_Operand), tile, _kernel_proxy)
    except OutsideKernel as exc:
        raise OutsideKernel(f"[{case}] {exc}") from None
    if isinstance(got, _Operand):
        got = got.view(np.ndarray)
    return got


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


_NAMED = [
    ("square, T divides n", (64, 64, 64), 16),
    ("rectangular, edge tiles", (50, 37, 29), 16),
    ("tile larger than the matrix", (5, 7, 3), 32),
    ("tile 1", (4, 3, 5), 1),
    ("a long inner dimension", (8, 96, 8), 32),
]


def _apart(
    student: Callable[..., Any], a: np.ndarray, b: np.ndarray, tile: int, kernel: _Kernel, case: str
) -> Any:
    """Run the learner's matmul in a forked child; its kernel calls are served here."""
    if isinstance(student, _Guarded) and student.watch is None:  # built once, inherited
        student.watch = Watch(student.forbid, student.blocks)
        student.watch.scan(student.fn)
    return run_apart(_in_child, student, a, b, tile, case, serve={"kernel": kernel}, timeout=60)


def _one(
    student: Callable[..., object],
    shape: tuple[int, int, int],
    tile: int,
    gen: np.random.Generator,
    case: str,
) -> tuple[int, int]:
    n, k, m = shape
    a, b = gen.standard_normal((n, k)), gen.standard_normal((k, m))
    kernel = _Kernel()
    got = plain(_apart(student, a, b, tile, kernel, case), case=case)
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    close(got, want, case=case, what=f"C = A @ B, {shape}, tile {tile}", rtol=1e-10)
    calls, expected = len(kernel.shapes), _ceil(n, tile) * _ceil(k, tile) * _ceil(m, tile)
    big = [s for s in kernel.shapes if max(*s[0], *s[1]) > tile]
    assert_true(
        calls > 0,
        f"[{case}] C is right but the micro-kernel was never called: every product of tiles "
        "must go through kernel(a_tile, b_tile).",
    )
    assert_true(
        not big,
        f"[{case}] the kernel got operands of shapes {big[:1]}, larger than {tile} x {tile}: "
        "slice A and B into tiles of at most T x T.",
    )
    assert_true(
        calls == expected,
        f"[{case}] {calls} kernel calls, expected ceil(n/T) ceil(k/T) ceil(m/T) = {expected}: "
        "one call per (row tile, inner tile, column tile), none repeated, none skipped.",
    )
    marked = _Kernel(mark=1.0)
    got = plain(_apart(student, a, b, tile, marked, f"{case}, kernel that adds 1"), case=case)
    close(
        got,
        want + _ceil(k, tile),
        case=f"{case}, kernel that adds 1",
        what="C",
        rtol=1e-10,
        hint="C must be the sum of what kernel() returns (accumulate its products into C), "
        "not a product computed some other way.",
    )
    return calls, sum(8 * (int(np.prod(x)) + int(np.prod(y))) for x, y in kernel.shapes)


@grader(
    "06.5",
    blocks=(f"{_M}:matmul_tiled", f"{_M}:matmul_blocked", f"{_M}:matmul_loops"),
    hand="budget",
)
def check_matmul_tiled(matmul_tiled: Callable[..., object]) -> str:
    """Exercise 06.5: matmul_tiled(a, b, tile, kernel) -> C, one kernel call per tile triple."""
    gen, new = rng(605), fresh_rng("06.5")
    cases = [(label, shape, tile, gen) for label, shape, tile in _NAMED]
    for i in range(3):
        n, k, m = (int(v) for v in new.integers(1, 50, 3))
        shape = (n, k, m)
        tile = int(new.choice([8, 16, 32]))  # at most 7^3 kernel calls: each is a request
        cases.append((fresh(f"random case {i}: {shape}, tile {tile}"), shape, tile, new))
    line = ""
    for label, shape, tile, src in cases:
        calls, moved = _one(matmul_tiled, shape, tile, src, label)
        if shape == (64, 64, 64):
            line = f"n=64, T=16: {calls} kernel calls reading {moved / 1024:,.0f} KiB of tiles"
    return f"{len(cases)} matmuls (3 fresh) match torch, one kernel call per tile triple; {line}"
