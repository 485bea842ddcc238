"""Debugging a timing model against the golden model: the first divergence, planted bugs.

Hardware teams check a cycle model (or the RTL) by **lock-step comparison** against an
instruction-set simulator: run both, compare every committed instruction
``(pc, word, rd, value, next_pc)`` in order, and stop at the first difference. A timing
bug (a missing stall, a forwarding path from the wrong stage) shows up as a wrong value or
a wrong pc at one retire; a deadlock shows up as **no retire for** ``k`` **cycles**. A
correct pipeline here never goes more than 5 cycles without a retire once it is full (2
bubbles of a redirect plus at most 2 of a stall), so ``k = 10`` separates slow from stuck.

:func:`first_divergence` returns the first cycle and retire index where the pipeline and
the golden model part (``kind``: ``"mismatch"``, ``"extra"``, ``"missing"``, ``"hang"``,
``"fault"``), or None when they agree to the end. :data:`EXPOSERS` holds, for every bug of
:data:`~minitorch.cpu.pipeline.BUGS`, a small program that exposes it.

    d = first_divergence(assemble(EXPOSERS["no_ex_forward"][0]), config=Config(bug="no_ex_forward"))
    (d.kind, d.cycle, d.index) == ("mismatch", 6, 1)

Lab: 36_cpu_pipelines
Reference: Spike, the RISC-V ISA simulator (riscv-isa-sim, ``--log-commits``) and Dromajo
(chipsalliance/dromajo), co-simulation models that compare each commit of a core with an ISS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minitorch.cpu.asm import format_instr
from minitorch.cpu.golden import MemoryFault, Retire, run
from minitorch.cpu.isa import decode, to_signed
from minitorch.cpu.pipeline import Config, Pipeline

__all__ = ["EXPOSERS", "Divergence", "buggy", "describe", "first_divergence"]

# bug -> (program, initial memory) on which it diverges from the golden model
EXPOSERS: dict[str, tuple[str, list[int]]] = {
    "forward_priority": ("addi x1, x0, 1\naddi x1, x0, 2\nadd x2, x1, x0", []),
    "no_ex_forward": ("addi x1, x0, 7\nadd x2, x1, x1", []),
    "no_load_use_stall": ("lw x1, 4(x0)\nadd x2, x1, x1", [0, 5]),
    "no_flush": ("beq x0, x0, skip\naddi x1, x0, 1\nskip: addi x2, x0, 2", []),
    "freeze_on_stall": ("lw x1, 0(x0)\nadd x2, x1, x1", [3]),
}


@dataclass(frozen=True, slots=True)
class Divergence:
    kind: str
    cycle: int  # the pipeline cycle where it showed
    index: int  # the position in the retire trace
    expected: Retire | None
    got: Retire | None
    message: str


def buggy(bug: str, forwarding: bool = True) -> Config:
    """A pipeline configuration with one planted bug."""
    return Config(forwarding=forwarding, bug=bug)


def _show(r: Retire | None) -> str:
    if r is None:
        return "nothing"
    return f"pc {r.pc:#x} {format_instr(decode(r.word))} -> x{r.rd}={r.value} next {r.next_pc:#x}"


def first_divergence(
    program: Sequence[int],
    mem: Sequence[int] = (),
    config: Config | None = None,
    *,
    k: int = 10,
    mem_words: int = 256,
    regs: dict[int, int] | None = None,
    max_steps: int = 100_000,
) -> Divergence | None:
    """Run the pipeline in lock step with the golden model; the first place they part."""
    gold = run(program, mem, mem_words=mem_words, regs=regs, max_steps=max_steps)
    if not gold.halted:
        raise ValueError(f"the program does not halt on the golden model in {max_steps} steps")
    expected = gold.trace
    image = [*mem, *[0] * max(0, mem_words - len(mem))]
    p = Pipeline(list(program), image, config or Config())
    for r, v in (regs or {}).items():
        if r:
            p.regs[r] = to_signed(v)
    i = last = 0

    def div(kind: str, got: Retire | None, why: str) -> Divergence:
        exp = expected[i] if i < len(expected) else None
        return Divergence(kind, p.cycle, i, exp, got, why)

    while not p.done:
        try:
            c = p.step()
        except MemoryFault as err:
            return div("fault", None, f"cycle {p.cycle}: {err}")
        if c.retired is not None:
            if i >= len(expected):
                return div("extra", c.retired, "the pipeline retired past the program's end")
            if c.retired != expected[i]:
                return div("mismatch", c.retired, "retired a different instruction or value")
            i, last = i + 1, p.cycle
        elif p.cycle - last >= k:
            return div("hang", None, f"no retire for {k} cycles")
    if i < len(expected):
        return div("missing", None, "the pipeline stopped before the program's end")
    return None


def describe(d: Divergence | None) -> str:
    """One paragraph for the learner: where, what was expected, what came."""
    if d is None:
        return "the pipeline retires exactly the golden trace"
    return (
        f"{d.kind} at cycle {d.cycle}, retire #{d.index}: {d.message}\n"
        f"  expected {_show(d.expected)}\n  got      {_show(d.got)}"
    )
