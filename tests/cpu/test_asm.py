"""The assembler: labels, pseudo-instructions, errors, and disassemble/assemble round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.cpu.asm import AsmError, assemble, disassemble, format_instr, parse
from minitorch.cpu.isa import Instr, encode
from tests.cpu._gen import instrs


def test_labels_become_pc_relative_offsets() -> None:
    words = assemble(
        """
        start: addi x1, x0, 3   # a comment
        loop:  addi x1, x1, -1
               bne  x1, x0, loop
               jal  x0, end
               add  x2, x1, x1
        end:
        """
    )
    assert words == [0x00300093, 0xFFF08093, 0xFE009EE3, encode(Instr("jal", 0, imm=8)), 0x00108133]
    prog, labels = parse("a: nop\nb:\nc: nop")
    assert labels == {"a": 0, "b": 4, "c": 4} and len(prog) == 2


def test_pseudo_instructions() -> None:
    assert assemble("nop") == [0x00000013]
    assert assemble("li x1, 5") == [0x00500093]
    assert assemble("mv x3, x4") == [encode(Instr("addi", 3, 4))]
    assert assemble("j -4") == [0xFFDFF06F]
    assert assemble("ret") == [0x00008067]
    assert assemble("lw x5, 8(x2)\nsw x5, 0x8(x2)") == [0x00812283, 0x00512423]


@pytest.mark.parametrize(
    "bad", ["add x1, x2", "addi x1, x0, 5000", "lw x1, x2", "foo x1", "add x1, x2, x32", "a:\na:"]
)
def test_errors_name_the_line(bad: str) -> None:
    with pytest.raises(AsmError, match="line"):
        assemble(bad)


@settings(max_examples=40, deadline=None)
@given(st.lists(instrs(), min_size=1, max_size=20))
def test_disassemble_then_assemble_is_the_identity(prog: list[Instr]) -> None:
    words = [encode(i) for i in prog]
    text = disassemble(words)
    assert assemble(text) == words
    assert text.splitlines() == [format_instr(i) for i in prog]
