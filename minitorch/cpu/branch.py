"""Branch predictors: static rules, 2-bit saturating counters (bimodal), gshare.

A pipeline that resolves branches in EX fetches two more instructions before it knows the
outcome; a wrong guess flushes them, a **misprediction penalty** of ``P = 2`` cycles here
(15-20 on a deep out-of-order core). With branch frequency ``f_b`` (branches per
instruction) and misprediction rate ``m``,

    CPI = CPI_base + f_b * m * P,        mispredict cycles = P * mispredictions.

* **static**: always taken, never taken, or **BTFN** (backward taken, forward not taken:
  loops close with a backward branch);
* **bimodal** (Smith 1981): a table of ``2**k`` 2-bit saturating counters indexed by pc
  bits, ``i = (pc >> 2) mod 2**k``; predict taken when ``c >= 2``; on the outcome
  ``c = min(c + 1, 3)`` if taken else ``max(c - 1, 0)``. A loop branch taken ``n - 1``
  times then not taken costs one misprediction per loop exit once warm (two with a
  1-bit counter), so accuracy ``-> (n - 1) / n``;
* **gshare** (McFarling 1993): the same counters indexed by
  ``i = ((pc >> 2) XOR ghr) mod 2**k``, ``ghr`` the last ``h`` outcomes (newest in bit 0),
  so one branch gets a counter per recent history: patterns a bimodal table cannot learn.

Traces come from real programs run on the golden model (:func:`branch_trace`); two
different branches whose index bits collide share a counter (**aliasing**), which is what
:func:`accuracy_vs_size` shows as the table grows.

    acc = accuracy(Bimodal(k=4), branch_trace(golden.run(words)))

Lab: 36_cpu_pipelines
Reference: J. E. Smith, "A Study of Branch Prediction Strategies", ISCA 1981; S. McFarling,
"Combining Branch Predictors", DEC WRL TN-36, 1993; Hennessy & Patterson, Computer
Architecture: A Quantitative Approach, 6th ed., section 3.3.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from minitorch.cpu.golden import Result
from minitorch.cpu.isa import FORMAT, decode

__all__ = [
    "BTFN",
    "AlwaysTaken",
    "Bimodal",
    "BranchEvent",
    "Gshare",
    "NeverTaken",
    "Predictor",
    "accuracy",
    "accuracy_vs_size",
    "branch_trace",
    "mispredict_cycles",
    "mispredictions",
]


class Predictor(Protocol):
    def predict(self, pc: int, target: int) -> bool: ...

    def update(self, pc: int, target: int, taken: bool) -> None: ...


@dataclass(frozen=True, slots=True)
class BranchEvent:
    pc: int
    target: int
    taken: bool


class _Static:
    def update(self, pc: int, target: int, taken: bool) -> None:
        return None


class AlwaysTaken(_Static):
    def predict(self, pc: int, target: int) -> bool:
        return True


class NeverTaken(_Static):
    def predict(self, pc: int, target: int) -> bool:
        return False


class BTFN(_Static):
    """Backward taken, forward not taken."""

    def predict(self, pc: int, target: int) -> bool:
        return target <= pc


class Bimodal:
    """``2**k`` 2-bit saturating counters indexed by ``(pc >> 2) mod 2**k``."""

    def __init__(self, k: int = 4, init: int = 1, bits: int = 2) -> None:
        self.k, self.max = k, (1 << bits) - 1
        self.table = [init] * (1 << k)

    def index(self, pc: int) -> int:
        return (pc >> 2) & ((1 << self.k) - 1)

    def predict(self, pc: int, target: int) -> bool:
        return self.table[self.index(pc)] > self.max // 2

    def update(self, pc: int, target: int, taken: bool) -> None:
        i = self.index(pc)
        c = self.table[i]
        self.table[i] = min(c + 1, self.max) if taken else max(c - 1, 0)


class Gshare(Bimodal):
    """Counters indexed by ``((pc >> 2) XOR ghr) mod 2**k``; ``ghr`` holds ``h`` outcomes."""

    def __init__(self, k: int = 4, h: int | None = None, init: int = 1) -> None:
        super().__init__(k, init)
        self.h = k if h is None else h
        self.ghr = 0

    def index(self, pc: int) -> int:
        return ((pc >> 2) ^ self.ghr) & ((1 << self.k) - 1)

    def update(self, pc: int, target: int, taken: bool) -> None:
        super().update(pc, target, taken)
        self.ghr = ((self.ghr << 1) | int(taken)) & ((1 << self.h) - 1)


def branch_trace(result: Result) -> list[BranchEvent]:
    """The conditional branches of a golden run, in order: pc, target, taken."""
    out = []
    for r in result.trace:
        ins = decode(r.word)
        if FORMAT[ins.op] == "B":
            out.append(BranchEvent(r.pc, r.pc + ins.imm, r.next_pc != r.pc + 4))
    return out


def mispredictions(pred: Predictor, trace: Iterable[BranchEvent]) -> int:
    """Mispredictions of ``pred`` over a trace (predict, then update, branch by branch)."""
    wrong = 0
    for ev in trace:
        wrong += pred.predict(ev.pc, ev.target) != ev.taken
        pred.update(ev.pc, ev.target, ev.taken)
    return wrong


def accuracy(pred: Predictor, trace: Sequence[BranchEvent]) -> float:
    """Fraction of branches predicted right (1.0 for an empty trace)."""
    return 1.0 - mispredictions(pred, trace) / len(trace) if trace else 1.0


def accuracy_vs_size(
    trace: Sequence[BranchEvent],
    ks: Iterable[int] = range(0, 11),
    make: Callable[[int], Predictor] = Bimodal,
) -> dict[int, float]:
    """Accuracy of ``make(k)`` (a fresh table of ``2**k`` entries) for every ``k``."""
    return {k: accuracy(make(k), trace) for k in ks}


def mispredict_cycles(mispredicts: int, penalty: int = 2) -> int:
    """Cycles lost to mispredictions: ``penalty * mispredicts``."""
    return penalty * mispredicts
