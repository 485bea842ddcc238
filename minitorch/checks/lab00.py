"""Graders of lab 00 (orientation): count a GEMM's FLOPs and its arithmetic intensity.

Ground truth is independent of the reference: a naive triple loop that counts the operations it
performs, and the bytes an ideal kernel reads and writes, tallied operand by operand.
"""

from __future__ import annotations

from minitorch.checks.core import assert_true, grader, rng

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


def _cases(seed: int) -> list[tuple[int, int, int]]:
    named = [(2, 3, 4), (1, 1, 1), (4, 1, 7), (16, 16, 16)]
    g = rng(seed)
    return named + [tuple(int(v) for v in g.integers(1, 24, size=3)) for _ in range(6)]


@grader("00.1", blocks=(f"{_COSTS}:matmul_flops", f"{_COSTS}:arithmetic_intensity"))
def check_matmul_flops(student) -> str:
    for m, n, k in _cases(0):
        got, want = student(m, n, k), _counted_flops(m, n, k)
        hint = ""
        if got == m * n * k:
            hint = " You counted multiplies only: each step of the dot product also adds."
        elif got == m * n * (2 * k - 1):
            hint = " Count the first add too (acc starts at 0), the convention behind '2mnk'."
        assert_true(
            got == want,
            f"[m={m}, n={n}, k={k}] matmul_flops returned {got!r}, the loop performs {want}.{hint}",
        )
    big = student(4096, 4096, 4096)
    return f"10 shapes match a counted loop; a 4096³ GEMM is {big / 1e9:,.1f} GFLOP"


def _ideal_bytes(m: int, n: int, k: int, s: int) -> int:
    read_a, read_b, write_c = m * k * s, k * n * s, m * n * s
    return read_a + read_b + write_c


@grader("00.2", blocks=(f"{_COSTS}:arithmetic_intensity", f"{_COSTS}:matmul_bytes"))
def check_arithmetic_intensity(student) -> str:
    for m, n, k in _cases(1):
        for s in (4, 2, 1):
            got = student(m, n, k, s)
            want = _counted_flops(m, n, k) / _ideal_bytes(m, n, k, s)
            hint = ""
            if abs(got - 2 * m * n * k / (s * (m * k + k * n))) < 1e-12:
                hint = " You left out writing C: the result has to go back to memory too."
            elif abs(got - want * s) < 1e-12 and s != 1:
                hint = (
                    " Divide by bytes, not elements: multiply element counts by bytes_per_element."
                )
            assert_true(
                abs(got - want) <= 1e-9 * want,
                f"[m={m}, n={n}, k={k}, {s} B/element] got {got!r}, "
                f"expected {want:.6g} FLOP/byte.{hint}",
            )
    square = student(4096, 4096, 4096, 2)
    return f"30 cases exact; a 4096³ BF16 GEMM does {square:,.0f} FLOP per byte moved"
