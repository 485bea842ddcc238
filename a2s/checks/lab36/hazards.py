"""Grader of exercise 36.2: cycles of the 5-stage pipeline, hazards and redirects counted.

The truth (``_truth.cycles``) is a timeline: each instruction's ID cycle is one after the
previous one's (three after a taken branch or jump, resolved in EX: two flushed slots),
pushed back until its sources are ready (with forwarding: one cycle after an ALU producer's
ID, two after a ``lw``'s; without: three after any producer's, the register file written in
WB's first half); the last instruction leaves WB three cycles after its ID. The traces are
the grader's own runs of the lab's programs (dot, matmul, insertion sort, a word counter)
on its own interpreter, teaching edges, and fresh random straight-line code; the dot product
and the matmul must also land on their closed forms, 11n + 6 and 11n^3 + 9n^2 + 5n + 7.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import assert_true, grader, plain
from a2s.checks.lab36._truth import CPU, cycles, random_program, steps
from a2s.checks.table import Table
from minitorch.cpu import programs

__all__ = ["check_pipeline_cycles"]


def _t(text: str, mem: Any = ()) -> list[tuple[str, int, int, int, bool]]:
    return steps(text, list(mem))


_EDGES = [
    ("independent adds", "addi x1, x0, 1\naddi x2, x0, 2\naddi x3, x0, 3"),
    ("ALU -> ALU at distance 1", "addi x1, x0, 1\nadd x2, x1, x1"),
    ("load-use", "lw x1, 0(x0)\nadd x2, x1, x1"),
    ("load, one apart, then use", "lw x1, 0(x0)\naddi x3, x0, 1\nadd x2, x1, x1"),
    ("load -> store data", "lw x1, 0(x0)\nsw x1, 4(x0)"),
    ("load -> branch", "lw x1, 0(x0)\nbeq x1, x0, end\naddi x2, x0, 1\nend:"),
    ("a load into x0, then x0 read", "lw x0, 0(x0)\nadd x1, x0, x0"),
    ("a taken branch", "beq x0, x0, skip\naddi x1, x0, 1\nskip:\naddi x2, x0, 2"),
    ("a jump to the end is free", "addi x1, x0, 1\njal x0, end\naddi x2, x0, 2\nend:"),
    ("distance 2 and 3", "addi x1, x0, 1\naddi x3, x0, 1\nadd x2, x1, x1\nadd x4, x1, x3"),
]
_PROGRAMS = [(label, _t(text)) for label, text in _EDGES]
_PROGRAMS += [
    (f"dot n={n}", _t(p.text, p.mem)) for n in (1, 4) for p in [programs.dot(list(range(n)))]
]
_PROGRAMS += [("matmul 2x2", _t(programs.matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]).text))]
_sort = programs.insertion_sort([4, 1, 3, 2])
_words = programs.count_words(b"to be  or not")
_PROGRAMS += [("insertion sort of 4", _t(_sort.text, _sort.mem))]
_PROGRAMS += [("word count", _t(_words.text, _words.mem))]
_NAMED = [
    (f"{label}, {'forwarding' if fw else 'no forwarding'}", (tr, fw))
    for label, tr in _PROGRAMS
    for fw in (True, False)
]


def _draw(g: Any, i: int) -> tuple[str, tuple]:
    text = random_program(g, int(g.integers(3, 30)))
    mem = [int(v) for v in g.integers(-9, 10, 8)]
    fw = bool(i % 2 == 0)
    return (f"random code {i}, {'forwarding' if fw else 'no forwarding'}", (_t(text, mem), fw))


_MISTAKES = (
    Mistake(
        " A store's data right behind its lw waits the one bubble too: this pipeline forwards "
        "into EX only, not from MEM/WB into the store's MEM.",
        answer=lambda tr, fw: cycles(tr, fw, store_data=0),
    ),
    Mistake(
        " No load-use bubble: a lw's value exists only after MEM, so a consumer right behind it "
        "(an ALU op, a store's data, a branch) waits one cycle even with forwarding.",
        answer=lambda tr, fw: cycles(tr, fw, load_use=0),
    ),
    Mistake(
        " A taken branch or jump is resolved in EX: the two instructions fetched behind it "
        "are flushed, two cycles per redirect (not one, nor three).",
        when=lambda got, tr, fw: got in (cycles(tr, fw, flush=1), cycles(tr, fw, flush=3)),
    ),
    Mistake(
        " You charged a redirect for the last instruction: a taken jump out of the program "
        "only drains the pipe, it fetches nothing after it.",
        answer=lambda tr, fw: cycles(tr, fw, last_free=False),
    ),
    Mistake(
        " x0 is not a dependence: it reads 0 and ignores writes, so nothing waits for it.",
        answer=lambda tr, fw: cycles(tr, fw, x0=True),
    ),
    Mistake(
        " Without forwarding a consumer reads the register file in ID while its producer is "
        "in WB (written in the first half of the cycle): 3 cycles after the producer's ID, "
        "not 2 (nor 4).",
        when=lambda got, tr, fw: not fw and got in (cycles(tr, fw, gap=2), cycles(tr, fw, gap=4)),
    ),
    Mistake(
        " You ignored the forwarding flag: check both configurations.",
        when=lambda got, tr, fw: got == cycles(tr, not fw) != cycles(tr, fw),
    ),
    Mistake(
        " Off by one: the first instruction is in ID in cycle 2 and the last leaves WB three "
        "cycles after its ID, so N independent instructions take N + 4 cycles.",
        when=lambda got, tr, fw: got in (cycles(tr, fw) - 1, cycles(tr, fw) + 1),
    ),
)

CYCLES = Table(
    "36.2",
    truth=cycles,
    named=_NAMED,
    draw=_draw,
    seeded=12,
    fresh=8,
    mistakes=_MISTAKES,
    hint="cycles = N + 4 + stalls + 2 x (taken branches and jumps before the last instruction).",
    what="pipeline_cycles",
    message="[{label}] pipeline_cycles returned {got!r}, the pipeline takes {want}.{hint}",
)


@grader("36.2", blocks=CPU, hand="parts")
def check_pipeline_cycles(student: Callable[..., Any]) -> str:
    """Exercise 36.2: pipeline_cycles(trace, forwarding) for the 5-stage in-order pipeline."""
    n = CYCLES.grade(student)
    _forms(student)
    big = _t(programs.dot([1] * 25).text, [1] * 50)
    return (
        f"{n + 5} traces exact; dot n=25: {cycles(big, True)} cycles "
        f"(CPI {cycles(big, True) / len(big):.2f}), {cycles(big, False)} without forwarding"
    )


def _forms(student: Callable[..., Any]) -> None:
    """The dot product and the matmul land on their closed forms."""
    forms = [(f"dot n={k}", programs.dot([1] * k), 11 * k + 6) for k in (3, 10, 25)]
    forms += [
        (
            f"matmul {k}x{k}",
            programs.matmul([[1] * k] * k, [[1] * k] * k),
            11 * k**3 + 9 * k**2 + 5 * k + 7,
        )
        for k in (3, 4)
    ]
    for label, prog, closed in forms:
        tr = _t(prog.text, prog.mem)
        truth = cycles(tr, True)
        got = plain(student(tr, True), what="pipeline_cycles")
        assert_true(
            got == closed == truth,
            f"[{label}] pipeline_cycles returned {got!r}; the closed form gives {closed} "
            f"(the grader's timeline {truth}).",
        )
