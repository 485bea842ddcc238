"""The golden model: an instruction-set simulator, one instruction per step, no timing.

The architectural state is the pc, 32 registers (``x0`` hardwired to 0) and a word memory
(byte addresses, 4-aligned; ``M[a]`` is word ``a // 4``; instructions live in a separate
instruction memory, a Harvard machine). One step is the ISA's definition and nothing more:

    ins = decode(imem[pc // 4]);  a, b = x[rs1], x[rs2]
    x[rd] = alu(ins, a, b, pc)    (or M[addr] for lw; sw writes M[addr] = b)
    pc = next_pc(ins, a, b, pc)

A program **halts** when the pc reaches the end of the program (``pc == 4 * len(imem)``,
so a label after the last line means "done"). Every step appends a :class:`Retire`
record ``(pc, word, rd, value, next_pc)`` to the **retire trace**, the ground truth every
timing model must reproduce exactly: whatever the pipeline does cycle by cycle, the
sequence of instructions it commits and what they write must be this one. A program that
has not halted after ``max_steps`` steps is reported as a hang (``Result.hung``), not
looped on forever.

    res = run(assemble("addi x1, x0, 5\\naddi x2, x1, 1"))
    res.regs[2] == 6; res.trace[1] == Retire(4, 0x00108113, 2, 6, 8)

Lab: 36_cpu_pipelines
Reference: The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA (20191213), chapter 2;
Spike, the RISC-V ISA simulator (github.com/riscv-software-src/riscv-isa-sim), the golden
model real RISC-V cores are checked against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from minitorch.cpu.isa import FORMAT, Instr, alu, decode, next_pc, to_signed

__all__ = ["Machine", "MemoryFault", "Result", "Retire", "run"]


class MemoryFault(RuntimeError):
    """A load or store outside data memory or not 4-aligned, or a pc outside the program."""


@dataclass(frozen=True, slots=True)
class Retire:
    """One committed instruction: its pc and word, the register written (None: no write,
    a store's ``value`` is the word stored), the value, and the pc after it."""

    pc: int
    word: int
    rd: int | None
    value: int
    next_pc: int


@dataclass(slots=True)
class Result:
    trace: list[Retire]
    regs: list[int]
    mem: list[int]
    halted: bool
    steps: int

    @property
    def hung(self) -> bool:
        return not self.halted


def _word(mem: list[int], addr: int) -> int:
    if addr % 4 or not 0 <= addr < 4 * len(mem):
        raise MemoryFault(f"data address {addr:#x} unaligned or outside {4 * len(mem)} bytes")
    return addr // 4


@dataclass(slots=True)
class Machine:
    """Architectural state and one-instruction steps."""

    program: list[int]
    mem: list[int]
    regs: list[int] = field(default_factory=lambda: [0] * 32)
    pc: int = 0
    decoded: list[Instr] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mem = [to_signed(v) for v in self.mem]
        self.decoded = [decode(w) for w in self.program]

    @property
    def done(self) -> bool:
        return self.pc == 4 * len(self.program)

    def step(self) -> Retire:
        if self.pc % 4 or not 0 <= self.pc < 4 * len(self.program):
            raise MemoryFault(f"pc {self.pc:#x} outside the program")
        pc, ins = self.pc, self.decoded[self.pc // 4]
        a, b = self.regs[ins.rs1], self.regs[ins.rs2]
        value, rd = alu(ins, a, b, pc), ins.rd
        fmt = FORMAT[ins.op]
        if ins.op == "lw":
            value = self.mem[_word(self.mem, value)]
        elif ins.op == "sw":
            self.mem[_word(self.mem, value)] = value = b
        if fmt in ("S", "B") or rd == 0:
            rd_out: int | None = None
            value = b if fmt == "S" else 0
        else:
            rd_out = rd
            self.regs[rd] = value
        self.pc = next_pc(ins, a, b, pc)
        return Retire(pc, self.program[pc // 4], rd_out, value, self.pc)


def run(
    program: Sequence[int],
    mem: Sequence[int] = (),
    *,
    mem_words: int = 256,
    regs: dict[int, int] | None = None,
    max_steps: int = 100_000,
) -> Result:
    """Run a program to its end (or ``max_steps``: a hang) and return its retire trace.

    ``mem`` is the initial data memory, padded with zeros to ``mem_words`` words; ``regs``
    sets initial registers (x0 stays 0).
    """
    image = [*mem, *[0] * max(0, mem_words - len(mem))]
    m = Machine(list(program), image)
    for r, v in (regs or {}).items():
        if r:
            m.regs[r] = to_signed(v)
    trace: list[Retire] = []
    while not m.done and len(trace) < max_steps:
        trace.append(m.step())
    return Result(trace, m.regs, m.mem, m.done, len(trace))
