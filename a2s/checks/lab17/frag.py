"""Grader of exercise 17.5: the fragmentation of a pool, ``1 - largest free block / free bytes``.

Ground truth: the formula, computed here with a loop over rows; the usual mistakes (the share
of reserved bytes that is free, allocated blocks counted, the ratio not subtracted from one,
NaN on a pool with nothing free) are named.
"""

from __future__ import annotations

from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab17._truth import KIB, MIB, Row
from a2s.checks.lab17.blocks import _fresh_rows, _pool, _show

__all__ = ["check_fragmentation"]

BLOCKS = (
    "minitorch.runtime.allocator:fragmentation",
    "minitorch.runtime.allocator:CachingAllocator",
    f"{__name__}:_plain",
)


def _plain(rows: list[Row], bug: str = "") -> float:
    free = [r[1] for r in rows if not r[3]]
    if bug == "all blocks":
        free = [r[1] for r in rows]
    if bug == "free share":
        total = sum(r[1] for r in rows)
        return sum(free) / total if total else 0.0
    if not free:
        return float("nan") if bug == "nan" else 0.0
    ratio = max(free) / sum(free)
    return ratio if bug == "ratio" else 1.0 - ratio


_HINTS = {
    "free share": "That is the free share of the reserved bytes ((reserved - allocated) / "
    "reserved), not fragmentation: one big free block is not fragmented at all.",
    "all blocks": "Only *free* blocks count: the largest free block over all free bytes.",
    "ratio": "Fragmentation is 1 - largest/total: 0 when all free bytes are one block.",
    "nan": "With nothing free there is nothing fragmented: return 0.0, not NaN.",
}
_NAMED: list[tuple[str, list[Row]]] = [
    ("nothing free", [[0, KIB, 0, True]]),
    ("one free block", [[0, KIB, 0, True], [KIB, 3 * KIB, 0, False]]),
    ("two equal free blocks", [[0, KIB, 0, False], [KIB, KIB, 0, True], [2 * KIB, KIB, 0, False]]),
    ("a checkerboard", [[i * KIB, KIB, 0, i % 2 == 1] for i in range(8)]),
    (
        "two segments",
        [[0, 2 * MIB, 0, False], [2 * MIB, MIB, 2 * MIB, True], [3 * MIB, MIB, 2 * MIB, False]],
    ),
]


@grader("17.5", blocks=BLOCKS, hand="replay")
def check_fragmentation(student: Any) -> str:
    g = fresh_rng("17.5")
    cases = list(_NAMED) + [(fresh(f"random pool {k}"), _fresh_rows(g, True)) for k in range(3)]
    for label, rows in cases:
        got = plain(student(_pool(rows)), what="fragmentation", case=label)
        want = _plain(rows)
        if not isinstance(got, float | int) or not abs(float(got) - want) <= 1e-9:
            hint = next((h for bug, h in _HINTS.items() if _close(got, _plain(rows, bug))), "")
            shown = (
                f"[{_show(rows)}]"
                if len(rows) <= 6
                else f"a pool of {len(rows)} blocks ({sum(not r[3] for r in rows)} free)"
            )
            raise CheckFailure(
                f"[{label}] fragmentation of {shown} is {want:.4f}, you returned {got!r}. {hint}"
            )
    return f"{len(cases)} pools: 1 - largest free / free bytes, 0 when nothing is free"


def _close(got: Any, want: float) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    return (got != got and want != want) or abs(got - want) <= 1e-9
