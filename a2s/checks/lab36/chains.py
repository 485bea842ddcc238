"""Grader of exercise 36.4: the critical path, the dependence chain no issue width beats.

The truth (``_truth.critical_path``) keeps, per register, the cycle its newest value is
done; an instruction ends ``lat`` after its latest source (``lw`` 2, ``mul`` 3, others 1).
The traces are the grader's own runs of dot (whose chain is ``n + 6``, checked against that
closed form too), matmul, insertion sort and fresh random straight-line code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import assert_true, grader, plain
from a2s.checks.lab36._truth import CPU, critical_path, random_program, steps
from a2s.checks.table import Table
from minitorch.cpu import programs

__all__ = ["check_critical_path"]


def _t(prog: Any) -> list[tuple[str, int, int, int, bool]]:
    return steps(prog.text, prog.mem)


_EDGES = [
    ("one add", "add x1, x2, x3"),
    ("a chain of 3 adds", "addi x1, x0, 1\naddi x1, x1, 1\naddi x1, x1, 1"),
    ("3 independent adds", "addi x1, x0, 1\naddi x2, x0, 1\naddi x3, x0, 1"),
    ("load -> mul -> add", "lw x1, 0(x0)\nmul x2, x1, x1\nadd x3, x2, x0"),
    ("writes to x0 carry nothing", "mul x0, x1, x1\nadd x2, x0, x0\nadd x3, x2, x2"),
    ("the newest write counts", "mul x1, x2, x2\naddi x1, x0, 1\nadd x3, x1, x1"),
    ("the longer of two sources", "mul x1, x0, x0\naddi x2, x0, 1\nadd x3, x1, x2"),
]
_NAMED = [(label, (steps(text, []),)) for label, text in _EDGES]
_NAMED += [(f"dot n={n}", (_t(programs.dot(list(range(1, n + 1)))),)) for n in (1, 3, 8)]
_NAMED += [("matmul 2x2", (_t(programs.matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]])),))]
_NAMED += [("insertion sort of 6", (_t(programs.insertion_sort([6, 2, 5, 1, 4, 3])),))]


def _draw(g: Any, i: int) -> tuple[str, tuple]:
    text = random_program(g, int(g.integers(3, 40)))
    return (f"random code {i}", (steps(text, [int(v) for v in g.integers(-9, 10, 8)]),))


_MISTAKES = (
    Mistake(
        " Weight each instruction by its latency (lw 2, mul 3, the rest 1), not by 1: the "
        "chain is counted in cycles, not instructions.",
        answer=lambda tr: critical_path(tr, unit=True),
    ),
    Mistake(
        " x0 is not a dependence: a write to it is dropped and a read of it is 0, ready at once.",
        answer=lambda tr: critical_path(tr, x0=True),
    ),
    Mistake(
        " You added every latency in a row: independent instructions overlap; only a "
        "register read of an earlier result chains them.",
        answer=lambda tr: critical_path(tr, serial=True),
    ),
    Mistake(
        " A lw takes 2 cycles (lw 2, mul 3, the rest 1): its value exists only after MEM.",
        answer=lambda tr: critical_path(tr, latency={"mul": 3}),
    ),
    Mistake(
        " A mul takes 3 cycles (lw 2, mul 3, the rest 1).",
        answer=lambda tr: critical_path(tr, latency={"lw": 2}),
    ),
)

CHAINS = Table(
    "36.4",
    truth=critical_path,
    named=_NAMED,
    draw=_draw,
    seeded=10,
    fresh=6,
    mistakes=_MISTAKES,
    hint="done[rd] = lat + max(done[rs1], done[rs2]); the answer is the largest done.",
    what="critical_path",
    message="[{label}] critical_path returned {got!r}, the longest chain is {want} cycles.{hint}",
)


@grader("36.4", blocks=CPU, hand="parts")
def check_critical_path(student: Callable[..., Any]) -> str:
    """Exercise 36.4: critical_path(trace), latency-weighted."""
    n = CHAINS.grade(student)
    for k in (5, 20):
        tr = _t(programs.dot([1] * k))
        chain = critical_path(tr)
        got = plain(student(tr), what="critical_path")
        assert_true(
            got == k + 6 == chain,
            f"[dot n={k}] critical_path returned {got!r}; the accumulator chain is n + 1 + "
            f"lat(lw) + lat(mul) = {k + 6}.",
        )
    tr = _t(programs.dot([1] * 20))
    bound = len(tr) / (20 + 6)
    return (
        f"{n + 2} traces exact; dot n=20: N = {len(tr)}, CP = 26, IPC <= {bound:.2f} at any width"
    )
