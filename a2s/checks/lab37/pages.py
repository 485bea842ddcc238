"""Grader of exercise 37.4: the pages a load touches, the minor faults a read into a fresh
buffer costs.

The truth (``_truth.pages_touched``) is a set of page numbers: a range ``(offset, length)``
touches pages ``offset // page`` to ``(offset + length - 1) // page``, an empty one none, and
overlapping ranges count once. On top of the table, the grader measures: a child process
``preadv``-s the same ranges of a file into a fresh anonymous buffer (no huge pages) and
counts its own minor faults (``getrusage``), one per page the copy first writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import NATIVE, measured_read_faults, pages_touched
from a2s.checks.table import Table

__all__ = ["CHECKPOINT", "check_pages_touched"]

MiB = 1 << 20
# a checkpoint's layout: a header, then tensors at 64-byte aligned offsets
CHECKPOINT = [(0, 200), (256, 96_000), (96_256, 4_096), (100_352, 600_000), (700_416, 3)]
_NAMED = [
    ("one byte", ([(0, 1)],)),
    ("exactly one page", ([(0, 4096)],)),
    ("two bytes across a page boundary", ([(4095, 2)],)),
    ("an empty range", ([(8192, 0)],)),
    ("overlapping ranges", ([(0, 6000), (4000, 5000)],)),
    ("the same page twice", ([(10, 10), (100, 10)],)),
    ("a 64 MiB file", ([(0, 64 * MiB)],)),
    ("16 KiB pages", ([(10_000, 30_000)], 16_384)),
    ("a 64 MiB file in 2 MiB pages", ([(0, 64 * MiB)], 2 * MiB)),
    ("a checkpoint's tensors", (CHECKPOINT,)),
]


def _draw(g: Any, i: int) -> tuple[str, tuple[Any, ...]]:
    k = int(g.integers(1, 7))
    ranges = [(int(g.integers(0, MiB)), int(g.integers(0, 3 * 4096))) for _ in range(k)]
    page = (4096, 16_384)[int(g.integers(0, 2))]
    return (f"{k} random ranges, page {page}", (ranges, page))


_MISTAKES = (
    Mistake(
        " A range that starts inside a page and crosses into the next touches both: count "
        "page numbers offset // page .. (offset + length - 1) // page, not ceil(length / page).",
        answer=lambda r, page=4096: pages_touched(r, page, per_range=True),
    ),
    Mistake(
        " The last byte is offset + length - 1: a range ending exactly on a page boundary does "
        "not touch the next page.",
        answer=lambda r, page=4096: pages_touched(r, page, end_inclusive=True),
    ),
    Mistake(
        " An empty range (length 0) reads nothing and touches no page.",
        answer=lambda r, page=4096: pages_touched(r, page, empty_one=True),
    ),
    Mistake(
        " A page is faulted in once: ranges that share a page count it once (a set of pages).",
        answer=lambda r, page=4096: pages_touched(r, page, no_union=True),
    ),
    Mistake(
        " Use the page size given (16 KiB on some ARM machines, 2 MiB for huge pages).",
        when=lambda got, r, page=4096: (
            page != 4096 and got == pages_touched(r) != pages_touched(r, page)
        ),
    ),
)

PAGES = Table(
    "37.4",
    truth=pages_touched,
    named=_NAMED,
    draw=_draw,
    seeded=6,
    fresh=4,
    mistakes=_MISTAKES,
    hint="pages = | union of range(offset // page, (offset + length - 1) // page + 1) |.",
    what="pages_touched",
    message="[{label}] pages_touched returned {got!r}, the ranges touch {want} pages.{hint}",
)


@grader("37.4", blocks=NATIVE, hand="measure")
def check_pages_touched(student: Callable[..., Any]) -> str:
    """Exercise 37.4: pages_touched(ranges, page=4096) -> distinct pages the ranges touch."""
    n = PAGES.grade(student)
    got = plain(student(CHECKPOINT), what="pages_touched")
    if got != pages_touched(CHECKPOINT):
        raise CheckFailure(f"pages_touched(CHECKPOINT) returned {got!r} on a second call.")
    measured = measured_read_faults(CHECKPOINT, 1 * MiB)
    if measured is None:
        return f"{n} cases exact; page faults not measurable on this system"
    return (
        f"{n} cases exact; the checkpoint's read: you predict {got} minor faults, "
        f"a child process measured {measured}"
    )
