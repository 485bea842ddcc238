"""The golden model against plain Python: sum, dot product, sort, word count; x0, faults,
and the step limit that reports a hang."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.cpu.asm import assemble
from minitorch.cpu.golden import MemoryFault, Retire, run
from minitorch.cpu.programs import count_words, dot, insertion_sort

small = st.integers(-1000, 1000)

SUM = """
    addi x10, x0, 0      # p
    addi x11, x0, {end}
    addi x12, x0, 0      # sum
loop:
    lw   x5, 0(x10)
    add  x12, x12, x5
    addi x10, x10, 4
    blt  x10, x11, loop
"""


@settings(max_examples=30, deadline=None)
@given(st.lists(small, min_size=1, max_size=30))
def test_sum(values: list[int]) -> None:
    res = run(assemble(SUM.format(end=4 * len(values))), values)
    assert res.halted and res.regs[12] == sum(values)
    assert res.steps == 3 + 4 * len(values)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(small, small), min_size=1, max_size=20))
def test_dot(pairs: list[tuple[int, int]]) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    prog = dot(a, b)
    assert run(prog.words, prog.mem).regs[13] == sum(x * y for x, y in pairs)


@settings(max_examples=30, deadline=None)
@given(st.lists(small, max_size=20))
def test_sort(values: list[int]) -> None:
    prog = insertion_sort(values)
    res = run(prog.words, prog.mem)
    assert res.halted and res.mem[: len(values)] == sorted(values)


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="ab ", min_size=1, max_size=40))
def test_count_words(text: str) -> None:
    prog = count_words(text.encode())
    assert run(prog.words, prog.mem).regs[12] == len(text.split())


def test_retire_trace_and_x0() -> None:
    res = run(assemble("addi x0, x0, 9\naddi x1, x0, 5\nsw x1, 8(x0)\nbeq x1, x1, 4"))
    assert res.regs[0] == 0 and res.mem[2] == 5
    assert res.trace == [
        Retire(0, 0x00900013, None, 0, 4),  # a write to x0 is no write
        Retire(4, 0x00500093, 1, 5, 8),
        Retire(8, 0x00102423, None, 5, 12),  # a store records the word stored
        Retire(12, 0x00108263, None, 0, 16),
    ]


def test_jal_links_and_jalr_returns() -> None:
    res = run(assemble("jal x1, f\njal x0, done\nf: addi x5, x0, 7\nret\ndone:"))
    assert res.halted and res.regs[5] == 7 and res.regs[1] == 4
    assert [r.pc for r in res.trace] == [0, 8, 12, 4]


def test_hang_is_reported_not_looped_on() -> None:
    res = run(assemble("loop: jal x0, loop"), max_steps=50)
    assert res.hung and res.steps == 50


def test_faults() -> None:
    with pytest.raises(MemoryFault):
        run(assemble("lw x1, 2(x0)"))  # unaligned
    with pytest.raises(MemoryFault):
        run(assemble("sw x1, 1024(x0)"), mem_words=256)  # past the end
    with pytest.raises(MemoryFault):
        run(assemble("jal x0, 8"))  # pc past the program's end
