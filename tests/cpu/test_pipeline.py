"""The pipeline retires exactly the golden trace (Hypothesis: random straight-line and loop
programs, every configuration); cycle counts against an independent timing model and a
hand-counted pipeline diagram."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from minitorch.cpu.asm import assemble, parse
from minitorch.cpu.branch import BTFN, Bimodal, Gshare
from minitorch.cpu.golden import run
from minitorch.cpu.isa import reads, writes
from minitorch.cpu.pipeline import Config, format_trace, simulate
from tests.cpu._gen import memories, small_loop, straight_line

CONFIGS = [
    lambda: Config(),
    lambda: Config(forwarding=False),
    lambda: Config(predictor=Bimodal(3)),
    lambda: Config(forwarding=False, predictor=Gshare(3)),
    lambda: Config(predictor=BTFN()),
]


def _check(text: str, mem: list[int]) -> None:
    words = assemble(text)
    gold = run(words, mem, mem_words=16)
    for make in CONFIGS:
        res = simulate(words, mem, make(), mem_words=16)
        assert res.halted and res.retired == gold.trace
        assert res.regs == gold.regs and res.mem == gold.mem
        assert res.cycles == len(gold.trace) + 4 + res.stalls + 2 * res.redirects


@settings(max_examples=40, deadline=None)
@given(straight_line(max_len=14, branches=True), memories)
def test_random_straight_line_retires_the_golden_trace(lines: list[str], mem: list[int]) -> None:
    _check("\n".join(lines), mem)


@settings(max_examples=30, deadline=None)
@given(small_loop(), memories)
def test_random_loops_retire_the_golden_trace(text: str, mem: list[int]) -> None:
    _check(text, mem)


def _id_cycles(text: str, forwarding: bool) -> int:
    """An independent timing model of branch-free code: the cycle each instruction is in ID.

    ``id_j = max(id_{j-1} + 1, id_p + 3 for producers p)`` without forwarding (read in WB's
    cycle), ``id_j = max(id_{j-1} + 1, id_p + 2 for load producers p)`` with it."""
    prog, _ = parse(text)
    last_writer: dict[int, int] = {}
    ids: list[int] = []
    for j, ins in enumerate(prog):
        t = ids[-1] + 1 if ids else 2
        for r in {r for r in reads(ins) if r}:
            p = last_writer.get(r)
            if p is None:
                continue
            if not forwarding:
                t = max(t, ids[p] + 3)
            elif prog[p].op == "lw":
                t = max(t, ids[p] + 2)
        ids.append(t)
        if (rd := writes(ins)) is not None:
            last_writer[rd] = j
    return ids[-1] + 3


@settings(max_examples=30, deadline=None)
@given(straight_line(max_len=16), memories)
def test_straight_line_cycles_match_the_id_timing_model(lines: list[str], mem: list[int]) -> None:
    text = "\n".join(lines)
    for fwd in (True, False):
        res = simulate(assemble(text), mem, Config(forwarding=fwd), mem_words=16)
        assert res.cycles == _id_cycles(text, fwd) and res.redirects == 0


def test_hand_counted_diagram() -> None:
    # cycle:       1   2   3   4   5   6   7   8   9
    # lw x1        IF  ID  EX  MEM WB
    # add x2,x1    .   IF  ID  ID  EX  MEM WB          (load-use bubble in cycle 3)
    # beq x0,x0,+8 .   .   IF  IF  ID  EX  MEM WB      (resolved in EX, cycle 6: flush 2)
    # addi x3      .   .   .   .   IF  ID  --          (wrong path, flushed)
    # sw x2        .   .   .   .   .   IF  --          (wrong path, flushed)
    # addi x4      .   .   .   .   .   .   IF  ID  EX  MEM WB   -> 11 cycles
    text = (
        "lw x1, 0(x0)\nadd x2, x1, x1\nbeq x0, x0, 12\naddi x3, x0, 1\nsw x2, 0(x0)\naddi x4, x0, 2"
    )
    res = simulate(assemble(text), [21])
    assert res.cycles == 11 and res.stalls == 1 and res.redirects == 1
    assert res.regs[2] == 42 and res.regs[3] == 0 and res.mem[0] == 21
    ex = [c.stages[2] for c in res.trace]
    assert ex == [None, None, 0, None, 4, 8, None, None, 20, None, None]
    assert [c.cycle for c in res.trace if c.stall] == [3]
    assert [c.cycle for c in res.trace if c.flush] == [6]
    assert [c.cycle for c in res.trace if c.retired] == [5, 7, 8, 11]
    table = format_trace(res.trace).splitlines()
    assert table[0].split() == ["cycle", "IF", "ID", "EX", "MEM", "WB", "event"]
    assert table[3].split() == ["3", "0x8", "0x4", "0x0", ".", ".", "stall"]
    assert table[6].split() == ["6", "0x10", "0xc", "0x8", "0x4", ".", "flush"]
    nofwd = simulate(assemble(text), [21], Config(forwarding=False))
    assert nofwd.cycles == 12 and nofwd.stalls == 2


@pytest.mark.parametrize(("gap", "stalls"), [(0, 2), (1, 1), (2, 0)])
def test_no_forwarding_waits_three_minus_distance(gap: int, stalls: int) -> None:
    text = "\n".join(["addi x1, x0, 1", *["nop"] * gap, "add x2, x1, x1"])
    res = simulate(assemble(text), config=Config(forwarding=False))
    assert res.stalls == stalls and res.cycles == gap + 2 + 4 + stalls
    assert simulate(assemble(text)).stalls == 0  # forwarding covers every ALU distance


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown bug"):
        Config(bug="cosmic_ray")
