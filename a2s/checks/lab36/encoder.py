"""Grader of exercise 36.1: the assembler's encoder, bit field by bit field, and its errors.

The truth places every immediate bit by a table of (word bit, immediate bit) pairs
(``_truth.encode``); the words are compared exactly, on every op of the subset, the edges of
each immediate's range, negative offsets and fresh random operands. Then operands that do
not fit must raise ``ValueError`` (the exception itself or a subclass, whatever its message):
for every op one past each end of its immediate's range and an odd offset where it must be
even, a register out of 0..31 in each field the format uses (the others drawn fresh), and
an unknown op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, StudentError, assert_true, fresh_rng, grader
from a2s.checks.lab36._truth import CPU, FMT, LIMITS, encode
from a2s.checks.table import Table

__all__ = ["check_encode"]


def _case(op: str, rd: int = 0, rs1: int = 0, rs2: int = 0, imm: int = 0) -> tuple[str, tuple]:
    return f"{op} rd={rd} rs1={rs1} rs2={rs2} imm={imm}", (op, rd, rs1, rs2, imm)


_NAMED = [
    _case("addi", 1, 0, 0, 5),
    _case("add", 3, 1, 2),
    _case("sub", 3, 1, 2),
    _case("mul", 7, 5, 6),
    _case("addi", 1, 1, 0, -1),
    _case("lw", 5, 10, 0, 8),
    _case("sw", 0, 2, 9, -12),
    _case("sw", 0, 2, 9, 2047),
    _case("beq", 0, 1, 2, 8),
    _case("bne", 0, 1, 0, -28),
    _case("blt", 0, 3, 20, 4094),
    _case("bge", 0, 3, 20, -4096),
    _case("jal", 1, 0, 0, 2048),
    _case("jal", 0, 0, 0, -4),
    _case("jal", 0, 0, 0, -(1 << 20)),
    _case("jalr", 0, 1, 0, 0),
    _case("lui", 5, 0, 0, 0xFFFFF),
    _case("slt", 31, 30, 29),
    _case("xor", 4, 4, 4),
]


def _draw(g: Any, i: int) -> tuple[str, tuple]:
    ops = sorted(FMT)
    op = ops[int(g.integers(0, len(ops)))]
    lo, hi, step = LIMITS[FMT[op]]
    imm = int(g.integers(lo, hi + 1)) // step * step
    rd, rs1, rs2 = (int(v) for v in g.integers(0, 32, 3))
    fmt = FMT[op]
    rd = 0 if fmt in "SB" else rd
    rs1 = rs1 if fmt in "RISB" else 0
    rs2 = rs2 if fmt in "RSB" else 0
    return _case(op, rd, rs1, rs2, imm)


def _hex(w: Any) -> str:
    return f"{w:#010x}" if isinstance(w, int) and w >= 0 else repr(w)


_MISTAKES = (
    Mistake(
        " The word came back negative: mask the immediate to its field before shifting "
        "(imm & 0xFFF for 12 bits); a negative Python int shifted left stays negative.",
        when=lambda got, *a: isinstance(got, int) and got < 0,
    ),
    Mistake(
        " A B-type offset is scrambled: imm[12|10:5] go to w[31|30:25] and imm[4:1|11] to "
        "w[11:8|7]; you laid it out like a store's (imm[11:5], imm[4:0]).",
        answer=lambda op, rd, a, b, imm: encode(op, rd, a, b, imm, b_as_s=True),
    ),
    Mistake(
        " rs1 lives in w[19:15] and rs2 in w[24:20]: yours are swapped.",
        when=lambda got, op, rd, a, b, imm: (
            a != b and FMT[op] in "RSB" and got == encode(op, rd, b, a, imm)
        ),
    ),
    Mistake(
        " sub and mul share add's opcode and funct3: funct7 (w[31:25]) tells them apart, "
        "0x20 for sub, 0x01 for mul.",
        when=lambda got, op, rd, a, b, imm: op in ("sub", "mul") and got == encode("add", rd, a, b),
    ),
)

ENCODE = Table(
    "36.1",
    truth=encode,
    named=_NAMED,
    draw=_draw,
    seeded=40,
    fresh=20,
    mistakes=_MISTAKES,
    hint="See the field layout of the instruction's format in the theory cell.",
    what="encode",
    message=lambda case, got, want, hint: (
        f"[{case.label}] encode returned {_hex(got)}, the fields give {_hex(want)}. {hint.lstrip()}"
    ),
)

_FIXED_BAD = [
    ("an unknown op", ("addx", 1, 2, 3, 0)),
    ("register x32", ("add", 32, 1, 2, 0)),
    ("a negative register", ("add", 1, -1, 2, 0)),
    ("addi imm 2048 (12 bits signed: -2048..2047)", ("addi", 1, 0, 0, 2048)),
    ("sw imm -2049", ("sw", 0, 1, 2, -2049)),
    ("an odd branch offset 3", ("beq", 0, 1, 2, 3)),
    ("a branch offset 4096 (-4096..4094)", ("bne", 0, 1, 2, 4096)),
    ("jal offset 2**20", ("jal", 1, 0, 0, 1 << 20)),
    ("an odd jal offset", ("jal", 1, 0, 0, 7)),
    ("lui imm -1 (an unsigned 20-bit field)", ("lui", 1, 0, 0, -1)),
]
_FIELDS = {"R": (0, 1, 2), "I": (0, 1), "S": (1, 2), "B": (1, 2), "U": (0,), "J": (0,)}
_NAMES = ("rd", "rs1", "rs2")


def _bad_cases(g: Any) -> list[tuple[str, tuple]]:
    """Every op: one past each end of its immediate's range (an odd offset where it must be
    even), and a register out of 0..31 in each field it uses; the registers drawn fresh."""
    out: list[tuple[str, tuple[Any, ...]]] = list(_FIXED_BAD)
    for op in sorted(FMT):
        fmt = FMT[op]
        lo, hi, step = LIMITS[fmt]
        regs = [int(v) for v in g.integers(0, 32, 3)]
        regs = [r if i in _FIELDS[fmt] else 0 for i, r in enumerate(regs)]
        if fmt != "R":
            for imm in (lo - step, hi + step, *((lo + 1,) if step == 2 else ())):
                out.append((f"{op} imm {imm} (range {lo}..{hi})", (op, *regs, imm)))
        for i in _FIELDS[fmt]:
            bad = regs.copy()
            bad[i] = (32, -1, 33, 63)[int(g.integers(0, 4))]
            out.append((f"{op} {_NAMES[i]}={bad[i]}", (op, *bad, 0)))
    return out


def _errors(student: Callable[..., Any]) -> int:
    cases = _bad_cases(fresh_rng("36.1"))
    for label, args in cases:
        try:
            got = student(*args)
        except StudentError as err:
            assert_true(
                isinstance(err.__cause__, ValueError),
                f"[{label}] encode raised {err} : raise ValueError for an operand that does "
                "not fit.",
            )
            continue
        raise CheckFailure(
            f"[{label}] encode{args} returned {got!r}: an operand that does not fit its field "
            "must raise ValueError, not be truncated into the word."
        )
    return len(cases)


@grader("36.1", blocks=CPU, hand="parts")
def check_encode(student: Callable[..., Any]) -> str:
    """Exercise 36.1: encode(op, rd, rs1, rs2, imm) -> the word; ValueError if it does not fit."""
    n = ENCODE.grade(student)
    bad = _errors(student)
    return f"{n} words bit-exact (all 6 formats, range edges); {bad} bad operands refused"
