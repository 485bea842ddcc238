"""The lab's programs, written in the ISA, and their closed-form pipeline cycle counts.

Each builder returns a :class:`Program`: assembly text, the data memory image, and where
the answer lands. Cycle counts are for :mod:`minitorch.cpu.pipeline` with forwarding and
predict-not-taken (one load-use bubble, 2 cycles per taken branch or jump):

* straight-line code: ``cycles = N + 4 + stalls``;
* ``dot(n)``: 4 setup + 8 per element, one load-use bubble per element (``mul`` right after
  its ``lw``), the loop branch taken ``n - 1`` times:
  ``cycles = (4 + 8n) + 4 + n + 2(n - 1) = 11n + 6``;
* ``matmul(n)`` (``C = A B``, ``n x n``, i-j-k loops): ``N = 8n^3 + 9n^2 + 5n + 5``
  instructions, ``n^3`` bubbles, ``n^3 - 1`` taken branches, so
  ``cycles = 11n^3 + 9n^2 + 5n + 7``;
* without forwarding each dependent pair at distance 1 costs 2 bubbles and at distance 2 one:
  ``dot`` pays 6 per element (``lw -> mul``, ``mul -> add``, ``addi -> bne``) plus 1 in the
  first, ``16n + 7``; ``matmul`` pays ``6n^3 + 3n^2 + 2n``, ``16n^3 + 12n^2 + 7n + 7``;
* ``insertion_sort`` and ``count_words`` (a tokenizer-like byte loop: words separated by
  spaces) have data-dependent branches: they feed the branch predictors.

    prog = dot([1, 2, 3], [4, 5, 6]); golden.run(prog.words, prog.mem).regs[13] == 32

Lab: 36_cpu_pipelines
Reference: Patterson & Hennessy, Computer Organization and Design RISC-V Edition, 2nd ed.,
section 4.6 (pipeline cycle counts: N + 4 for a 5-stage pipe).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minitorch.cpu.asm import assemble

__all__ = [
    "Program",
    "count_words",
    "dot",
    "dot_cycles",
    "insertion_sort",
    "matmul",
    "matmul_cycles",
    "matmul_instructions",
    "straight_line_cycles",
]


@dataclass(frozen=True, slots=True)
class Program:
    text: str
    mem: list[int]
    result: str  # where the answer is: "x13", or "mem[a:b]" (word indices)

    @property
    def words(self) -> list[int]:
        return assemble(self.text)


def straight_line_cycles(n_instructions: int, stalls: int = 0) -> int:
    """``N + 4 + stalls``: fill the pipe once, then one instruction per cycle."""
    return n_instructions + 4 + stalls if n_instructions else 0


def dot(a: Sequence[int], b: Sequence[int] | None = None) -> Program:
    """``x13 = sum(a[i] * b[i])``; ``a`` at word 0, ``b`` right after it."""
    b = list(a) if b is None else list(b)
    n = len(a)
    if not 1 <= n <= 255 or len(b) != n:
        raise ValueError("dot needs 1 <= n <= 255 equal-length vectors")
    text = f"""
        addi x12, x0, {n}       # n
        addi x13, x0, 0         # acc
        addi x10, x0, 0         # &a[0]
        addi x11, x0, {4 * n}   # &b[0]
    loop:
        lw   x5, 0(x10)
        lw   x6, 0(x11)
        mul  x7, x5, x6         # load-use: one bubble
        add  x13, x13, x7
        addi x10, x10, 4
        addi x11, x11, 4
        addi x12, x12, -1
        bne  x12, x0, loop
    """
    return Program(text, [*a, *b], "x13")


def dot_cycles(n: int, forwarding: bool = True) -> int:
    """Cycles of :func:`dot` of length ``n``: ``11n + 6`` (``16n + 7`` without forwarding)."""
    return 11 * n + 6 if forwarding else 16 * n + 7


def matmul(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> Program:
    """``C = A B`` for ``n x n`` lists; A, B, C row-major at words 0, n^2, 2n^2."""
    n = len(a)
    if not 1 <= n <= 15:
        raise ValueError("matmul needs 1 <= n <= 15 (addresses fit a 12-bit immediate)")
    text = f"""
        addi x20, x0, {n}         # n
        addi x21, x0, {4 * n}     # row stride in bytes
        addi x1, x0, 0            # i
        addi x10, x0, 0           # &A[i][0]
        addi x12, x0, {8 * n * n} # &C[i][j]
    iloop:
        addi x2, x0, 0            # j
        addi x11, x0, {4 * n * n} # &B[0][j]
    jloop:
        addi x13, x0, 0           # acc
        addi x3, x0, 0            # k
        addi x5, x10, 0           # &A[i][k]
        addi x6, x11, 0           # &B[k][j]
    kloop:
        lw   x7, 0(x5)
        lw   x8, 0(x6)
        mul  x9, x7, x8           # load-use: one bubble
        add  x13, x13, x9
        addi x5, x5, 4
        add  x6, x6, x21
        addi x3, x3, 1
        blt  x3, x20, kloop
        sw   x13, 0(x12)
        addi x12, x12, 4
        addi x11, x11, 4
        addi x2, x2, 1
        blt  x2, x20, jloop
        add  x10, x10, x21
        addi x1, x1, 1
        blt  x1, x20, iloop
    """
    flat = [v for row in a for v in row] + [v for row in b for v in row]
    return Program(text, flat, f"mem[{2 * n * n}:{3 * n * n}]")


def matmul_instructions(n: int) -> int:
    """Instructions :func:`matmul` retires: ``8n^3 + 9n^2 + 5n + 5``."""
    return 8 * n**3 + 9 * n**2 + 5 * n + 5


def matmul_cycles(n: int, forwarding: bool = True) -> int:
    """``N + 4 + n^3 + 2(n^3 - 1) = 11n^3 + 9n^2 + 5n + 7``; ``16n^3 + 12n^2 + 7n + 7``
    without forwarding."""
    if not forwarding:
        return 16 * n**3 + 12 * n**2 + 7 * n + 7
    return 11 * n**3 + 9 * n**2 + 5 * n + 7


def insertion_sort(values: Sequence[int]) -> Program:
    """Sort ``values`` (words 0..n-1) in place, ascending."""
    n = len(values)
    if n > 500:
        raise ValueError("insertion_sort takes at most 500 values")
    text = f"""
        addi x20, x0, {4 * n}     # end of the array in bytes
        addi x1, x0, 4            # i = 1 (bytes)
    outer:
        bge  x1, x20, done
        lw   x5, 0(x1)            # key = a[i]
        addi x2, x1, -4           # j = i - 1
    inner:
        blt  x2, x0, insert
        lw   x6, 0(x2)
        bge  x5, x6, insert       # a[j] <= key: stop
        sw   x6, 4(x2)            # a[j + 1] = a[j]
        addi x2, x2, -4
        jal  x0, inner
    insert:
        sw   x5, 4(x2)
        addi x1, x1, 4
        jal  x0, outer
    done:
    """
    return Program(text, list(values), f"mem[0:{n}]")


def count_words(data: bytes) -> Program:
    """``x12`` = the number of space-separated words in ``data`` (one byte per word)."""
    n = len(data)
    if not 1 <= n <= 500:
        raise ValueError("count_words takes 1..500 bytes")
    text = f"""
        addi x10, x0, 0           # p
        addi x11, x0, {4 * n}     # end
        addi x12, x0, 0           # words
        addi x13, x0, 0           # inside a word?
        addi x14, x0, 32          # ' '
    loop:
        lw   x5, 0(x10)
        beq  x5, x14, space
        bne  x13, x0, next        # already inside a word
        addi x12, x12, 1
        addi x13, x0, 1
        jal  x0, next
    space:
        addi x13, x0, 0
    next:
        addi x10, x10, 4
        blt  x10, x11, loop
    """
    return Program(text, list(data), "x12")
