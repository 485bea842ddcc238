"""Graders of lab 00 (orientation): count a GEMM's FLOPs and its arithmetic intensity.

Ground truth is independent of the reference: a naive triple loop that counts the operations it
performs, and the bytes an ideal kernel reads and writes, tallied operand by operand.
"""

from __future__ import annotations

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import grader, plain
from a2s.checks.table import Table

__all__ = ["check_arithmetic_intensity", "check_matmul_flops"]

_COSTS = "minitorch.hardware.costs"


def _counted_flops(m: int, n: int, k: int) -> int:
    """Run the naive GEMM loop nest, counting each multiply and each add."""
    flops = 0
    for _ in range(m):
        for _ in range(n):
            for _ in range(k):
                flops += 2  # acc += a[i, p] * b[p, j]: one multiply, one add
    return flops


def _triple(g: np.random.Generator) -> tuple[int, int, int]:
    """Three dimensions drawn from 1..23."""
    m, n, k = (int(v) for v in g.integers(1, 24, size=3))
    return m, n, k


_NAMED = [(2, 3, 4), (1, 1, 1), (4, 1, 7), (16, 16, 16)]
_SHAPE = "m={}, n={}, k={}"


_FLOP_MISTAKES = (
    Mistake(
        " You counted multiplies only: each step of the dot product also adds.",
        answer=lambda m, n, k: m * n * k,
    ),
    Mistake(
        " Count the first add too (acc starts at 0), the convention behind '2mnk'.",
        answer=lambda m, n, k: m * n * (2 * k - 1),
    ),
)


FLOPS = Table(
    "00.1",
    truth=_counted_flops,
    named=[(_SHAPE.format(*s), s) for s in _NAMED],
    draw=lambda g, i: (_SHAPE.format(*(s := _triple(g))), s),
    seeded=6,
    fresh=3,
    mistakes=_FLOP_MISTAKES,
    what="matmul_flops",
    message="[{label}] matmul_flops returned {got!r}, the loop performs {want}.{hint}",
    seed=0,
)


@grader("00.1", blocks=(f"{_COSTS}:matmul_flops", f"{_COSTS}:arithmetic_intensity"))
def check_matmul_flops(student) -> str:
    n = FLOPS.grade(student)
    big = plain(student(4096, 4096, 4096), what="matmul_flops")
    return f"{n} shapes match a counted loop; a 4096³ GEMM is {big / 1e9:,.1f} GFLOP"


def _ideal_bytes(m: int, n: int, k: int, s: int) -> int:
    read_a, read_b, write_c = m * k * s, k * n * s, m * n * s
    return read_a + read_b + write_c


def _intensity(m: int, n: int, k: int, s: int) -> float:
    return _counted_flops(m, n, k) / _ideal_bytes(m, n, k, s)


_INTENSITY_MISTAKES = (
    Mistake(
        " You left out writing C: the result has to go back to memory too.",
        answer=lambda m, n, k, s: 2 * m * n * k / (s * (m * k + k * n)),
    ),
    Mistake(
        " Divide by bytes, not elements: multiply element counts by bytes_per_element.",
        when=lambda got, m, n, k, s: s != 1 and abs(got - _intensity(m, n, k, s) * s) < 1e-12,
    ),
)


def _sizes(shape: tuple[int, int, int]) -> list[tuple[str, tuple[int, ...]]]:
    """One shape at 4, 2 and 1 bytes per element."""
    return [(f"{_SHAPE.format(*shape)}, {s} B/element", (*shape, s)) for s in (4, 2, 1)]


INTENSITY = Table(
    "00.2",
    truth=_intensity,
    named=[c for s in _NAMED for c in _sizes(s)],
    draw=lambda g, i: _sizes(_triple(g)),
    seeded=6,
    fresh=3,
    mistakes=_INTENSITY_MISTAKES,
    what="arithmetic_intensity",
    same=lambda got, want: abs(got - want) <= 1e-9 * want,
    message="[{label}] got {got!r}, expected {want:.6g} FLOP/byte.{hint}",
    seed=1,
)


@grader(
    "00.2",
    blocks=(f"{_COSTS}:arithmetic_intensity", f"{_COSTS}:matmul_bytes"),
    uses=(("00.1", "matmul_flops", f"{_COSTS}:matmul_flops"),),
)
def check_arithmetic_intensity(student) -> str:
    n = INTENSITY.grade(student)
    square = plain(student(4096, 4096, 4096, 2), what="arithmetic_intensity")
    return f"{n} cases exact; a 4096³ BF16 GEMM does {square:,.0f} FLOP per byte moved"
