"""A 5-stage in-order pipeline (IF ID EX MEM WB), simulated cycle by cycle from its latches.

One instruction enters per cycle; without hazards instruction ``i`` (from 0) is in WB in
cycle ``i + 5``, so ``N`` instructions take ``N + 4`` cycles (4 to fill the pipe). Every
lost cycle is a bubble that EX sees, so in general

    cycles = N + 4 + stalls + 2 * redirects,        CPI = cycles / N.

* **RAW hazards.** The register file is written in the first half of a cycle and read in
  the second (WB and ID can meet). *Without forwarding* a consumer at distance ``d`` behind
  its producer waits in ID for ``max(0, 3 - d)`` cycles. *With forwarding* EX takes an
  operand from the EX/MEM latch (EX->EX, ``d = 1``) or the MEM/WB latch (MEM->EX,
  ``d = 2``), newest first, and only the **load-use** case stalls: a ``lw`` result exists
  after MEM, so its consumer at ``d = 1`` waits one bubble (stores and branches included).
* **Control hazards.** Branches and jumps resolve in EX. Fetch follows a prediction (pc + 4,
  or the predictor's guess for a conditional branch, its target known at fetch: an ideal
  BTB); a wrong one flushes IF and ID and refetches, a **redirect** of 2 cycles (free when
  it leaves the program: the pipe just drains). The predictor is updated in EX.

Every cycle is recorded (:class:`Cycle`: the pc in each stage, stall, flush, retire) and the
committed instructions must be exactly the golden model's retire trace. ``bug`` plants one
of :data:`BUGS` for the debugging exercise (:mod:`minitorch.cpu.debug`).

    res = simulate(assemble("lw x1, 0(x0)\\nadd x2, x1, x1"))    # 2 + 4 + 1 stall = 7
    res.cycles == 7 and res.stalls == 1

Lab: 36_cpu_pipelines
Reference: Patterson & Hennessy, Computer Organization and Design RISC-V Edition, 2nd ed.,
chapter 4.6-4.8 (pipelined datapath, forwarding unit conditions, hazard detection unit,
branch hazards).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from minitorch.cpu.branch import Predictor
from minitorch.cpu.golden import Retire, _word
from minitorch.cpu.isa import FORMAT, Instr, alu, decode, next_pc, reads, to_signed, writes

__all__ = [
    "BUGS",
    "STAGES",
    "Config",
    "Cycle",
    "Pipeline",
    "PipelineResult",
    "format_trace",
    "simulate",
]

STAGES = ("IF", "ID", "EX", "MEM", "WB")
BUGS = {
    "forward_priority": "EX checks the MEM/WB latch before EX/MEM: the older value wins",
    "no_ex_forward": "the EX->EX path is missing but the hazard unit assumes it",
    "no_load_use_stall": "the hazard unit forgets the load-use bubble",
    "no_flush": "a taken branch redirects fetch without flushing IF and ID",
    "freeze_on_stall": "a load-use stall freezes EX instead of inserting a bubble",
}


@dataclass(slots=True)
class Config:
    forwarding: bool = True
    predictor: Predictor | None = None  # None: predict not taken
    bug: str | None = None

    def __post_init__(self) -> None:
        if self.bug is not None and self.bug not in BUGS:
            raise ValueError(f"unknown bug {self.bug!r}; one of {sorted(BUGS)}")


@dataclass(slots=True)
class Slot:
    """An instruction in flight, with what the stages computed so far."""

    pc: int
    word: int
    ins: Instr
    pred_next: int
    a: int = 0
    b: int = 0
    result: int = 0
    next_pc: int = 0
    value: int = 0


@dataclass(frozen=True, slots=True)
class Cycle:
    """One cycle: the pc in IF ID EX MEM WB (None: a bubble), stall, flush, the retire."""

    cycle: int
    stages: tuple[int | None, ...]
    stall: bool
    flush: bool
    retired: Retire | None


@dataclass(slots=True)
class PipelineResult:
    retired: list[Retire]
    cycles: int
    stalls: int
    redirects: int
    mispredicts: int
    trace: list[Cycle]
    regs: list[int]
    mem: list[int]
    halted: bool

    @property
    def cpi(self) -> float:
        return self.cycles / len(self.retired) if self.retired else float("nan")


def _pc(s: Slot | None) -> int | None:
    return None if s is None else s.pc


@dataclass(slots=True)
class Pipeline:
    """The latches, the register file, memory and the fetch pc; :meth:`step` is one cycle."""

    program: list[int]
    mem: list[int]
    config: Config = field(default_factory=Config)
    regs: list[int] = field(default_factory=lambda: [0] * 32)
    pc: int = 0
    cycle: int = 0
    if_id: Slot | None = None
    id_ex: Slot | None = None
    ex_mem: Slot | None = None
    mem_wb: Slot | None = None
    stalls: int = 0
    redirects: int = 0
    mispredicts: int = 0
    decoded: list[Instr] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mem = [to_signed(v) for v in self.mem]
        self.decoded = [decode(w) for w in self.program]

    @property
    def end(self) -> int:
        return 4 * len(self.program)

    @property
    def done(self) -> bool:
        latches = (self.if_id, self.id_ex, self.ex_mem, self.mem_wb)
        return all(s is None for s in latches) and not 0 <= self.pc < self.end

    def _operands(self, s: Slot) -> tuple[int, int]:
        """EX's operands: the values read in ID, overridden by the forwarding unit."""
        vals = [s.a, s.b]
        if not self.config.forwarding:
            return s.a, s.b
        bug = self.config.bug
        sources = [self.ex_mem, self.mem_wb]
        if bug == "forward_priority":
            sources.reverse()
        elif bug == "no_ex_forward":
            sources = [self.mem_wb]
        for i, r in enumerate((s.ins.rs1, s.ins.rs2)):
            for src in sources:
                if r != 0 and src is not None and writes(src.ins) == r:
                    vals[i] = src.result if src is self.ex_mem else src.value
                    break
        return vals[0], vals[1]

    def _hazard(self, s: Slot) -> bool:
        """The hazard detection unit: must the instruction in ID wait?"""
        srcs = {r for r in reads(s.ins) if r != 0}

        def hits(p: Slot | None) -> bool:
            return p is not None and writes(p.ins) in srcs

        if not self.config.forwarding:
            return hits(self.id_ex) or hits(self.ex_mem)
        load = self.id_ex is not None and self.id_ex.ins.op == "lw"
        return load and hits(self.id_ex) and self.config.bug != "no_load_use_stall"

    def _fetch(self) -> Slot | None:
        if not 0 <= self.pc < self.end:
            return None
        pc, ins = self.pc, self.decoded[self.pc // 4]
        guess = pc + 4
        pred = self.config.predictor
        if FORMAT[ins.op] == "B" and pred is not None and pred.predict(pc, pc + ins.imm):
            guess = pc + ins.imm
        return Slot(pc, self.program[pc // 4], ins, guess)

    def step(self) -> Cycle:
        self.cycle += 1
        bug = self.config.bug
        # WB: write the register file (first half of the cycle) and retire
        retired, wb = None, self.mem_wb
        if wb is not None:
            rd = writes(wb.ins)
            if rd is not None:
                self.regs[rd] = wb.value
            retired = Retire(wb.pc, wb.word, rd, wb.value, wb.next_pc)
        # MEM
        mw = self.ex_mem
        if mw is not None:
            if mw.ins.op == "lw":
                loaded = self.mem[_word(self.mem, mw.result)]
                mw.value = loaded if writes(mw.ins) is not None else 0
            elif mw.ins.op == "sw":
                self.mem[_word(self.mem, mw.result)] = mw.value = mw.b
            else:
                mw.value = mw.result if writes(mw.ins) is not None else 0
        # EX: forward, compute, resolve branches and jumps
        ex, redirect = self.id_ex, None
        if ex is not None:
            ex.a, ex.b = self._operands(ex)
            ex.result = alu(ex.ins, ex.a, ex.b, ex.pc)
            ex.next_pc = next_pc(ex.ins, ex.a, ex.b, ex.pc)
            if FORMAT[ex.ins.op] == "B" and self.config.predictor is not None:
                taken = ex.next_pc != ex.pc + 4
                self.config.predictor.update(ex.pc, ex.pc + ex.ins.imm, taken)
            if ex.next_pc != ex.pred_next:
                redirect = ex.next_pc
                self.mispredicts += FORMAT[ex.ins.op] == "B"
        # ID: hazard detection, then read the register file (second half)
        dec = self.if_id
        stall = dec is not None and self._hazard(dec)
        new_ex: Slot | None = None
        if dec is not None and not stall:
            dec.a, dec.b = self.regs[dec.ins.rs1], self.regs[dec.ins.rs2]
            new_ex = dec
        new_mem: Slot | None = ex
        if stall and bug == "freeze_on_stall":
            new_ex, new_mem = ex, None
        # IF
        if_pc = self.pc if 0 <= self.pc < self.end else None
        fetched = None if stall else self._fetch()
        stages = (if_pc, _pc(dec), _pc(ex), _pc(mw), _pc(wb))
        if fetched is not None:
            self.pc = fetched.pred_next
        new_if = dec if stall else fetched
        flush = redirect is not None
        if redirect is not None:
            if bug != "no_flush":
                new_if = new_ex = None
            self.redirects += redirect != self.end
            self.pc = redirect
        self.stalls += stall and not flush
        self.mem_wb, self.ex_mem, self.id_ex, self.if_id = mw, new_mem, new_ex, new_if
        return Cycle(self.cycle, stages, stall and not flush, flush, retired)


def simulate(
    program: Sequence[int],
    mem: Sequence[int] = (),
    config: Config | None = None,
    *,
    mem_words: int = 256,
    regs: dict[int, int] | None = None,
    max_cycles: int = 200_000,
) -> PipelineResult:
    """Run a program to the end (or ``max_cycles``: ``halted`` False) on the pipeline."""
    image = [*mem, *[0] * max(0, mem_words - len(mem))]
    p = Pipeline(list(program), image, config or Config())
    for r, v in (regs or {}).items():
        if r:
            p.regs[r] = to_signed(v)
    trace = []
    while not p.done and p.cycle < max_cycles:
        trace.append(p.step())
    retired = [c.retired for c in trace if c.retired is not None]
    return PipelineResult(
        retired, p.cycle, p.stalls, p.redirects, p.mispredicts, trace, p.regs, p.mem, p.done
    )


def format_trace(trace: Sequence[Cycle]) -> str:
    """The per-cycle table: one row per cycle, the pc in each stage (``.``: a bubble)."""
    rows = ["cycle  " + "".join(f"{s:<7}" for s in STAGES) + "event"]
    for c in trace:
        cells = "".join(f"{'.' if pc is None else hex(pc):<7}" for pc in c.stages)
        event = " ".join(e for e, on in (("stall", c.stall), ("flush", c.flush)) if on)
        rows.append(f"{c.cycle:<7}{cells}{event}".rstrip())
    return "\n".join(rows)
