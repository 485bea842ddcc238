"""Grader of exercise 36.3: mispredictions of 1-bit, 2-bit (bimodal) and gshare tables.

The truth (``_truth.mispredictions``) walks the trace once: index, predict, count, update.
The traces are conditional branches of the lab's programs run on the grader's own
interpreter (insertion sort, matmul loops, a word counter, dot), teaching patterns (a loop
of 4, strict alternation, two branches that alias in a table of one entry) and fresh random
ones, at table sizes from 1 entry to 1,024.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import grader
from a2s.checks.lab36._truth import CPU, branches, mispredictions
from a2s.checks.table import Table
from minitorch.cpu import programs

__all__ = ["check_mispredictions"]

_SCHEMES = ("1bit", "2bit", "gshare")

_loop4 = [(8, True), (8, True), (8, True), (8, False)] * 6
_alt = [(12, i % 2 == 0) for i in range(40)]
_alias = [(pc, pc == 4) for _ in range(12) for pc in (4, 8)]
_sort = programs.insertion_sort([7, 3, 9, 1, 8, 2, 6, 5, 4, 0])
_mm = programs.matmul([[1, 2, 3]] * 3, [[1, 0, 1]] * 3)
_wc = programs.count_words(b"the quick  brown fox jumps over the lazy dog ")
_dot = programs.dot([1, 2, 3, 4, 5])
_TRACES = [
    ("a loop of 4, six times", _loop4),
    ("strict alternation", _alt),
    ("two branches, one taken, one not", _alias),
    ("insertion sort of 10", branches(_sort.text, _sort.mem)),
    ("matmul 3x3 loops", branches(_mm.text, _mm.mem)),
    ("word count", branches(_wc.text, _wc.mem)),
    ("dot n=5", branches(_dot.text, _dot.mem)),
]
_NAMED = [
    (f"{label}, {scheme}, 2**{k} entries", (trace, scheme, k))
    for label, trace in _TRACES
    for scheme in _SCHEMES
    for k in ((0, 4) if label.startswith("two") else (2, 4, 10))
]


def _draw(g: Any, i: int) -> tuple[str, tuple]:
    pcs = [4 * int(v) for v in g.integers(0, 40, int(g.integers(2, 6)))]
    bias = g.random(len(pcs))
    trace = [(pcs[j], bool(g.random() < bias[j])) for j in g.integers(0, len(pcs), 60)]
    scheme, k = _SCHEMES[i % 3], int(g.integers(0, 7))
    return (f"random trace {i}, {scheme}, 2**{k} entries", (trace, scheme, k))


_MISTAKES = (
    Mistake(
        " Index by (pc >> 2): instructions are 4 bytes apart, so the two low pc bits are "
        "always 0 and indexing by pc itself uses a quarter of the table.",
        answer=lambda tr, s, k: mispredictions(tr, s, k, shift=0),
    ),
    Mistake(
        " A 2-bit counter starts at 1 (weakly not taken) here, not 0.",
        when=lambda got, tr, s, k: s != "1bit" and got == mispredictions(tr, s, k, init=0),
    ),
    Mistake(
        " gshare: the counter updated is the one that predicted (indexed with the history "
        "before this branch); shift the outcome into the history after the update.",
        when=lambda got, tr, s, k: (
            s == "gshare" and got == mispredictions(tr, s, k, early_ghr=True)
        ),
    ),
    Mistake(
        " A 2-bit counter predicts taken at 2 or 3, not at 1: that is what makes one surprise "
        "(a loop exit) cost one misprediction instead of two.",
        when=lambda got, tr, s, k: s != "1bit" and got == mispredictions(tr, s, k, threshold=1),
    ),
    Mistake(
        " gshare combines the pc and the history with XOR ((pc >> 2) ^ h), not by adding them.",
        when=lambda got, tr, s, k: s == "gshare" and got == mispredictions(tr, s, k, add=True),
    ),
)

MISPREDICTIONS = Table(
    "36.3",
    truth=mispredictions,
    named=_NAMED,
    draw=_draw,
    seeded=9,
    fresh=6,
    mistakes=_MISTAKES,
    hint="For every branch: index, predict, count a miss if the guess differs, then update.",
    what="mispredictions",
    message="[{label}] mispredictions returned {got!r}, the table misses {want}.{hint}",
)


@grader("36.3", blocks=CPU)
def check_mispredictions(student: Callable[..., Any]) -> str:
    """Exercise 36.3: mispredictions(trace, scheme, k) for 1bit, 2bit and gshare tables."""
    n = MISPREDICTIONS.grade(student)
    sort = _TRACES[3][1]
    miss = {s: mispredictions(sort, s, 4) for s in _SCHEMES}
    shown = ", ".join(f"{s} {m}" for s, m in miss.items())
    return f"{n} traces exact; insertion sort ({len(sort)} branches, 16 entries): {shown} misses"
