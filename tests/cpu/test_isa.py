"""The encoder against encodings worked out by hand from the RISC-V spec's bit layouts, and
Hypothesis round trips over every valid instruction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.cpu.isa import Instr, alu, decode, encode, next_pc, reads, to_signed, writes
from tests.cpu._gen import instrs

# (instruction, word): fields placed by hand, e.g. addi x1, x0, 5 =
# imm 5 << 20 | rs1 0 << 15 | funct3 000 << 12 | rd 1 << 7 | opcode 0010011 = 0x00500093
HAND = [
    (Instr("addi", rd=1, rs1=0, imm=5), 0x00500093),
    (Instr("addi", rd=1, rs1=1, imm=-1), 0xFFF08093),
    (Instr("addi", 0, 0, 0, 0), 0x00000013),  # nop
    (Instr("add", 3, 1, 2), 0x002081B3),
    (Instr("sub", 3, 1, 2), 0x402081B3),  # funct7 0100000
    (Instr("mul", 3, 1, 2), 0x022081B3),  # funct7 0000001 (M extension)
    (Instr("and", 5, 6, 7), 0x007372B3),
    (Instr("or", 1, 2, 3), 0x003160B3),
    (Instr("xor", 1, 2, 3), 0x003140B3),
    (Instr("slt", 10, 11, 12), 0x00C5A533),
    (Instr("lw", rd=5, rs1=2, imm=8), 0x00812283),
    (Instr("sw", rs1=2, rs2=5, imm=8), 0x00512423),  # imm[4:0] = 01000 in bits 11:7
    (Instr("sw", rs1=2, rs2=6, imm=-4), 0xFE612E23),  # imm[11:5] = 1111111
    (Instr("beq", rs1=1, rs2=2, imm=8), 0x00208463),  # imm[4:1] = 0100 in bits 11:8
    (Instr("beq", imm=-4), 0xFE000EE3),  # imm[12] = imm[11] = 1
    (Instr("bne", rs1=1, imm=-4), 0xFE009EE3),
    (Instr("blt", rs1=3, rs2=4, imm=16), 0x0041C863),
    (Instr("jal", rd=0, imm=-4), 0xFFDFF06F),  # j -4
    (Instr("jal", rd=1, imm=2048), 0x001000EF),  # imm[11] sits in bit 20
    (Instr("jalr", rd=0, rs1=1, imm=0), 0x00008067),  # ret
    (Instr("lui", rd=5, imm=0x12345), 0x123452B7),
]


@pytest.mark.parametrize(("ins", "word"), HAND)
def test_encoding_matches_hand_computed_word(ins: Instr, word: int) -> None:
    assert encode(ins) == word
    assert decode(word) == ins


@given(instrs())
def test_decode_inverts_encode(ins: Instr) -> None:
    w = encode(ins)
    assert 0 <= w < 2**32 and decode(w) == ins and encode(decode(w)) == w


def test_bad_instructions_are_refused() -> None:
    with pytest.raises(ValueError):
        Instr("beq", imm=3)  # odd branch offset
    with pytest.raises(ValueError):
        Instr("addi", imm=2048)
    with pytest.raises(ValueError):
        Instr("div", 1, 2, 3)
    with pytest.raises(ValueError):
        decode(0xFFFFFFFF)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1))
def test_alu_wraps_to_signed_32_bits(a: int, b: int) -> None:
    assert alu(Instr("add", 1, 2, 3), a, b, 0) == to_signed(a + b)
    assert alu(Instr("mul", 1, 2, 3), a, b, 0) == to_signed(a * b)
    assert alu(Instr("slt", 1, 2, 3), a, b, 0) == int(a < b)
    assert -(2**31) <= alu(Instr("sub", 1, 2, 3), a, b, 0) < 2**31


def test_reads_writes_and_next_pc() -> None:
    assert writes(Instr("sw", rs1=1, rs2=2)) is None and writes(Instr("add", 0, 1, 2)) is None
    assert reads(Instr("sw", rs1=1, rs2=2)) == (1, 2) and reads(Instr("lui", 3)) == ()
    assert next_pc(Instr("bge", rs1=1, rs2=2, imm=-8), 5, 5, 100) == 92
    assert next_pc(Instr("jalr", 1, 2, imm=3), 10, 0, 0) == 12  # (10 + 3) & ~1
    assert alu(Instr("lui", 1, imm=0x80000), 0, 0, 0) == -(2**31)
