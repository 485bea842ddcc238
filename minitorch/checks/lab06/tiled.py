"""Grader of exercise 06.5: a tiled matmul whose only arithmetic is micro-kernel calls.

The grader hands the student a counting micro-kernel (``np.matmul`` on two tiles, recording
each call's operand shapes) and checks three things: C against ``torch.matmul`` in float64;
the number of calls, exactly ``ceil(n/T) ceil(k/T) ceil(m/T)`` with no operand larger than
``T x T`` (one call per tile triple: the point of tiling); and, with a *marked* kernel that adds
1 to every product, that C is the sum of the kernel's products (``a @ b`` computed some other
way, with the calls made for show, fails there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from minitorch.checks.cases import fresh
from minitorch.checks.compare import close
from minitorch.checks.core import assert_true, fresh_rng, grader, plain, rng
from minitorch.checks.hygiene import assert_public_api

__all__ = ["check_matmul_tiled"]

_M = "minitorch.kernels.matmul"


@dataclass(slots=True)
class _Kernel:
    """A micro-kernel that records its calls; ``mark`` is added to every product."""

    mark: float = 0.0
    shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)

    def __call__(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x, y = np.asarray(x), np.asarray(y)
        self.shapes.append((x.shape, y.shape))
        return np.matmul(x, y) + self.mark


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


_NAMED = [
    ("square, T divides n", (64, 64, 64), 16),
    ("rectangular, edge tiles", (50, 37, 29), 16),
    ("tile larger than the matrix", (5, 7, 3), 32),
    ("tile 1", (4, 3, 5), 1),
    ("a long inner dimension", (8, 96, 8), 32),
]


def _one(
    student: Callable[..., object],
    shape: tuple[int, int, int],
    tile: int,
    gen: np.random.Generator,
    case: str,
) -> tuple[int, int]:
    n, k, m = shape
    a, b = gen.standard_normal((n, k)), gen.standard_normal((k, m))
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    kernel = _Kernel()
    got = plain(student(a.copy(), b.copy(), tile, kernel), case=case)
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
    got = plain(student(a.copy(), b.copy(), tile, marked), case=case)
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
)
def check_matmul_tiled(matmul_tiled: Callable[..., object]) -> str:
    """Exercise 06.5: matmul_tiled(a, b, tile, kernel) -> C, one kernel call per tile triple."""
    assert_public_api(  # the call count lives in the kernel it is given: no reaching into it
        matmul_tiled, what="your matmul_tiled", api="the kernel it is given, numpy and Python"
    )
    gen, new = rng(605), fresh_rng("06.5")
    cases = [(label, shape, tile, gen) for label, shape, tile in _NAMED]
    for i in range(3):
        n, k, m = (int(v) for v in new.integers(1, 70, 3))
        shape = (n, k, m)
        tile = int(new.choice([4, 8, 16, 32]))
        cases.append((fresh(f"random case {i}: {shape}, tile {tile}"), shape, tile, new))
    line = ""
    for label, shape, tile, src in cases:
        calls, moved = _one(matmul_tiled, shape, tile, src, label)
        if shape == (64, 64, 64):
            line = f"n=64, T=16: {calls} kernel calls reading {moved / 1024:,.0f} KiB of tiles"
    return f"{len(cases)} matmuls (3 fresh) match torch, one kernel call per tile triple; {line}"
