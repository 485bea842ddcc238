"""An in-order W-wide issue model with a scoreboard, and the dependence-limited bound.

The model replays a golden retire trace (the dynamic instruction stream, branches already
resolved: perfect prediction). Each cycle it issues up to ``W`` instructions **in program
order**, stopping at the first one that cannot go. The **scoreboard** holds, per register,
the cycle its newest value is ready; an instruction issues at cycle ``t`` only when

    ready[rs] <= t  for each source (RAW),      t + lat >= ready[rd]  (WAW, in order),

and then sets ``ready[rd] = t + lat``. Latencies: ``lw`` 2, ``mul`` 3, everything else 1
(:data:`LATENCY`). A taken branch or jump ends its issue group (the fetch group breaks
there); memory is assumed to forward store data (no memory-dependence stalls).

Two bounds hold for every trace of ``N`` instructions:

    cycles >= ceil(N / W)       and     cycles >= CP,    so   IPC <= min(W, N / CP),

``CP`` being the **critical path**, the longest chain of register RAW dependences weighted
by latency (``finish_i = lat_i + max over producers p of finish_p``). For :func:`dot` with
``n`` elements (``N = 8n + 4``) the chain is the accumulator fed by ``lw -> mul``:

    CP = n + 1 + lat(lw) + lat(mul)       (n + 6 with the default latencies),

so no width beats ``IPC = (8n + 4) / (n + 6) -> 8``; in order, the loop's own chain and the
taken branch cap it far lower.

    issue(golden.run(words).trace, width=2).ipc

Lab: 36_cpu_pipelines
Reference: Hennessy & Patterson, Computer Architecture: A Quantitative Approach, 6th ed.,
sections 3.1 and 3.8 (ILP limits, multiple issue) and appendix C.7 (the scoreboard).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from minitorch.cpu.golden import Retire
from minitorch.cpu.isa import Instr, decode, reads, writes

__all__ = [
    "LATENCY",
    "IssueResult",
    "critical_path",
    "cycles_lower_bound",
    "dot_critical_path",
    "ipc_bound",
    "ipc_vs_width",
    "issue",
]

LATENCY: dict[str, int] = {"lw": 2, "mul": 3}


def _lat(ins: Instr, latency: Mapping[str, int]) -> int:
    return latency.get(ins.op, 1)


@dataclass(frozen=True, slots=True)
class IssueResult:
    width: int
    cycles: int
    issue_cycles: list[int]  # the cycle (from 0) each instruction issued

    @property
    def instructions(self) -> int:
        return len(self.issue_cycles)

    @property
    def ipc(self) -> float:
        return self.instructions / self.cycles if self.cycles else 0.0


def issue(
    trace: Sequence[Retire],
    width: int,
    latency: Mapping[str, int] = LATENCY,
    *,
    break_on_taken: bool = True,
) -> IssueResult:
    """Issue a retire trace ``width`` wide, in order; cycles until the last result."""
    if width < 1:
        raise ValueError("width must be at least 1")
    ready = [0] * 32
    t = used = finish = 0
    issued = []
    for r in trace:
        ins = decode(r.word)
        lat = _lat(ins, latency)
        rd = writes(ins)
        at = max([t, *(ready[s] for s in reads(ins) if s)])
        if rd is not None:
            at = max(at, ready[rd] - lat)  # WAW: complete after the older write
        if at > t:
            t, used = at, 0
        if used == width:
            t, used = t + 1, 0
        issued.append(t)
        used += 1
        if rd is not None:
            ready[rd] = t + lat
        finish = max(finish, t + lat)
        if break_on_taken and r.next_pc != r.pc + 4:
            t, used = t + 1, 0
    return IssueResult(width, finish, issued)


def ipc_vs_width(
    trace: Sequence[Retire],
    widths: Sequence[int] = (1, 2, 4, 8),
    latency: Mapping[str, int] = LATENCY,
) -> dict[int, float]:
    """IPC of the same trace at every width (the curve that flattens at ``N / CP``)."""
    return {w: issue(trace, w, latency).ipc for w in widths}


def critical_path(trace: Sequence[Retire], latency: Mapping[str, int] = LATENCY) -> int:
    """The longest register RAW chain of the trace, weighted by latency."""
    done = [0] * 32
    longest = 0
    for r in trace:
        ins = decode(r.word)
        end = _lat(ins, latency) + max([0, *(done[s] for s in reads(ins) if s)])
        longest = max(longest, end)
        rd = writes(ins)
        if rd is not None:
            done[rd] = end
    return longest


def cycles_lower_bound(n_instructions: int, width: int, cp: int) -> int:
    """``max(ceil(N / W), CP)``."""
    return max(-(-n_instructions // width), cp)


def ipc_bound(n_instructions: int, width: int, cp: int) -> float:
    """``min(W, N / CP)``: no in-order (or out-of-order) machine of width W does better."""
    return min(float(width), n_instructions / cp) if cp else float(width)


def dot_critical_path(n: int, latency: Mapping[str, int] = LATENCY) -> int:
    """``n + 1 + lat(lw) + lat(mul)``: the accumulator chain of :func:`~.programs.dot`."""
    return n + 1 + latency.get("lw", 1) + latency.get("mul", 1)
