"""Graders of exercises 17.2 (best fit with splitting) and 17.3 (free with coalescing).

Each case builds a pool of :class:`~minitorch.runtime.allocator.Block` (data only) from rows,
runs the student's function on it, and compares every block (address, size, segment, state)
with the grader's plain model (:mod:`.model`). Then a short run on a driver that asks a counting
device for a segment whenever the pool has no room: its reserved bytes (17.2) and device
allocations (17.3) are held to the plain model's, so an allocator that never splits or never
coalesces pays in memory even where its blocks look plausible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab17._truth import KIB, MIB, Row, plain_alloc, plain_free, pool_rows
from a2s.checks.values import assert_true
from minitorch.runtime.allocator import Block

__all__ = ["check_alloc_block", "check_free_block"]

_REF = "minitorch.runtime.allocator"
_Run = Callable[[list[Row], str], object]
BLOCKS = (
    *(f"{_REF}:{n}" for n in ("alloc_block", "free_block", "malloc", "free")),
    "a2s.checks.lab17._truth:plain_alloc",
    "a2s.checks.lab17._truth:plain_free",
)
SEG = 2 * MIB
_ALLOC_HINTS = {  # the boundary variants first: on their cases "no split" looks alike
    "rest > 512": "In the small pool split when the rest is >= 512 B: a 512 B rest is a "
    "usable block of its own.",
    "rest >= 1 MiB": "In the large pool split only when the rest is *over* 1 MiB (> kSmallSize): "
    "a rest of exactly 1 MiB stays inside the allocated block.",
    "first fit": "That is first fit (the first free block that fits): take the *smallest* free "
    "block that fits (best fit), lowest address on ties; first fit breaks big blocks that a "
    "later big request needed.",
    "worst fit": "That is worst fit (the largest free block): take the *smallest* free block "
    "that fits, not the largest.",
    "ties high": "On a tie in size take the block with the *lower* address.",
    "no split": "The block was not split: the rest (>= 512 B in the small pool, > 1 MiB in the "
    "large) must stay free as a block of its own, or it is lost until the whole block is freed.",
    "always split": "Split the large pool only when the rest is over 1 MiB (kSmallSize); a "
    "smaller rest stays inside the allocated block.",
    "rest first": "The taken part is the *start* of the block (its address); the rest follows it.",
}
_FREE_HINTS = {  # "next only" first: on a left merge it and "no coalescing" look alike
    "next only": "Merge with the free block *before* the freed one as well as the one after.",
    "no coalescing": "The freed block was not merged with its free neighbours: two free "
    "neighbours in one segment must become one block, or a later large request finds no room.",
    "across segments": "You merged blocks of two different segments. Segments are separate "
    "device allocations that happen to touch: merge only blocks with the same `segment`.",
}


def _pool(rows: list[Row]) -> list[Block]:
    return [Block(a, s, g, bool(t)) for a, s, g, t in rows]


def _read(pool: Any, label: str) -> list[Row]:
    if type(pool) is not list or any(type(b) is not Block for b in pool):
        raise CheckFailure(f"[{label}] the pool must stay a list of Block.")
    return plain(pool_rows(pool), what="pool", case=label)


def _name(rows: list[Row], got: list[Row], run: _Run, hints: dict[str, str]) -> str:
    """The hint of the known mistake that reproduces ``got``; when several do on this pool
    (first fit and worst fit pick the same block when the first fit is also the largest),
    say so rather than name one of them."""
    found = []
    for bug in hints:
        mine = [list(r) for r in rows]
        run(mine, bug)
        if mine == got:
            found.append(bug)
    if {"first fit", "worst fit"} <= set(found):
        return (
            "That is first fit or worst fit (on this pool both take the same block): take the "
            "*smallest* free block that fits, lowest address on ties."
        )
    return hints[found[0]] if found else ""


def _bytes(n: int) -> str:
    return f"{n // KIB}K" if n % KIB == 0 else f"{n}B"


def _window(got: list[Row], want: list[Row]) -> tuple[str, str]:
    """Both pools shown around their first difference (a few blocks each, not 40)."""
    pairs = enumerate(zip(got, want, strict=False))
    first = next((k for k, (a, b) in pairs if a != b), min(len(got), len(want)))
    lo = max(0, first - 2)

    def part(rows: list[Row]) -> str:
        shown = _show(rows[lo : lo + 5])
        return ("..., " if lo else "") + shown + (", ..." if len(rows) > lo + 5 else "")

    return part(got), part(want)


def _show(rows: list[Row]) -> str:
    return ", ".join(f"{'A' if r[3] else 'F'}{_bytes(r[1])}@{_bytes(r[0] - r[2])}" for r in rows)


# (label, rows, request, small)
_NAMED_ALLOC: list[tuple[str, list[Row], int, bool]] = [
    ("empty pool: nothing fits", [], 512, True),
    ("one free segment: split it", [[0, SEG, 0, False]], 512 * KIB, True),
    (  # first fit, worst fit and best fit take three different blocks
        "best fit, not first fit nor worst fit",
        [
            [0, 16 * KIB, 0, False],
            [16 * KIB, 512, 0, True],
            [16 * KIB + 512, 64 * KIB, 0, False],
            [80 * KIB + 512, 512, 0, True],
            [81 * KIB, 8 * KIB, 0, False],
        ],
        8 * KIB,
        True,
    ),
    (
        "best fit, not first fit",
        [[0, 64 * KIB, 0, False], [64 * KIB, 512, 0, True], [65 * KIB, 8 * KIB, 0, False]],
        8 * KIB,
        True,
    ),
    (
        "exact fit: nothing to split",
        [[0, 4 * KIB, 0, True], [4 * KIB, 4 * KIB, 0, False]],
        4 * KIB,
        True,
    ),
    (
        "ties: the lower address",
        [[0, 2 * KIB, 0, False], [2 * KIB, 1 * KIB, 0, True], [3 * KIB, 2 * KIB, 0, False]],
        1 * KIB,
        True,
    ),
    ("large pool: a 512 KiB rest stays inside", [[0, 3 * MIB, 0, False]], 5 * MIB // 2, False),
    ("large pool: a 4 MiB rest is split off", [[0, 20 * MIB, 0, False]], 16 * MIB, False),
    ("small pool: a 512 B rest is split off", [[0, 3 * 512, 0, False]], 1024, True),
    ("large pool: a rest of exactly 1 MiB stays inside", [[0, 3 * MIB, 0, False]], 2 * MIB, False),
]


def _fresh_rows(g: Any, small: bool) -> list[Row]:
    rows: list[Row] = []
    for seg in range(int(g.integers(1, 4))):
        base, left = seg * (SEG if small else 20 * MIB), SEG if small else 20 * MIB
        at = base
        while left:
            size = min(left, 512 * int(g.integers(1, 600 if small else 12000)))
            rows.append([at, size, base, bool(g.integers(0, 2))])
            at, left = at + size, left - size
    return rows


def _alloc_case(student: Any, label: str, rows: list[Row], size: int, small: bool) -> None:
    pool = _pool(rows)
    got_block = student(pool, size, small)
    got = _read(pool, label)
    want = [list(r) for r in rows]
    i = plain_alloc(want, size, small)
    if got != want:
        hint = _name(rows, got, lambda m, bug: plain_alloc(m, size, small, bug), _ALLOC_HINTS)
        shown = _window(got, want)
        if not hint and sorted(got) == sorted(want):
            hint = "Keep the pool sorted by address: insert the rest right after the block."
        raise CheckFailure(
            f"[{label}] alloc_block(pool, {size}, small={small}) left the pool as\n"
            f"  [{shown[0]}], expected\n  [{shown[1]}]\n(A/F = allocated/free, size@offset in "
            f"segment). {hint}"
        )
    if i is None:
        assert_true(got_block is None, f"[{label}] no free block fits: return None.")
        return
    assert_true(
        any(b is got_block for b in pool),
        f"[{label}] return the allocated Block object itself (the one now in the pool).",
    )
    assert_true(
        plain(got_block.addr, what="address", case=label) == want[i][0],
        f"[{label}] returned the block at {got_block.addr}, expected the one at {want[i][0]}.",
    )


def _drive_alloc(student: Any, sizes: list[int], label: str) -> tuple[int, int]:
    """Requests on a driver adding a 2 MiB segment when the student returns None: reserved."""
    pool: list[Block] = []
    rows: list[Row] = []
    got_res = want_res = 0
    for size in sizes:
        if student(pool, size, True) is None:
            pool.append(Block(got_res, SEG, got_res))
            got_res += SEG
            if student(pool, size, True) is None:
                raise CheckFailure(
                    f"[{label}] a fresh 2 MiB segment was added and alloc_block "
                    f"still returned None for {size} B."
                )
        if plain_alloc(rows, size, True) is None:
            rows.append([want_res, SEG, want_res, False])
            want_res += SEG
            plain_alloc(rows, size, True)
    return got_res, want_res


@grader("17.2", blocks=BLOCKS, hand="replay")
def check_alloc_block(student: Any) -> str:
    g = fresh_rng("17.2")
    cases = list(_NAMED_ALLOC)
    for k in range(4):
        small = bool(k % 2 == 0)
        rows = _fresh_rows(g, small)
        size = 512 * int(g.integers(1, 800 if small else 8000))
        cases.append(
            (fresh(f"random pool {k} ({'small' if small else 'large'})"), rows, size, small)
        )
    for label, rows, size, small in cases:
        _alloc_case(student, label, rows, size, small)
    sizes = [int(s) * 512 for s in g.integers(1, 1500, 40)]
    got, want = _drive_alloc(student, sizes, fresh("40 requests"))
    assert_true(
        got <= want,
        f"[{fresh('40 requests')}] your pool reserved {got // MIB} MiB of segments, the best-fit "
        f"splitting allocator {want // MIB} MiB. Split blocks and take the best fit.",
    )
    return f"{len(cases)} pools block-exact; 40 requests in {want // MIB} MiB of 2 MiB segments"


# (label, rows, index freed)
_NAMED_FREE: list[tuple[str, list[Row], int]] = [
    ("no free neighbour", [[0, KIB, 0, True], [KIB, KIB, 0, True], [2 * KIB, KIB, 0, True]], 1),
    ("merge with the next", [[0, KIB, 0, True], [KIB, KIB, 0, True], [2 * KIB, KIB, 0, False]], 1),
    (
        "merge with the previous",
        [[0, KIB, 0, False], [KIB, KIB, 0, True], [2 * KIB, KIB, 0, True]],
        1,
    ),
    ("merge both sides", [[0, KIB, 0, False], [KIB, KIB, 0, True], [2 * KIB, KIB, 0, False]], 1),
    (
        "segments never merge",
        [[0, SEG - KIB, 0, False], [SEG - KIB, KIB, 0, True], [SEG, KIB, SEG, False]],
        1,
    ),
]


def _free_case(student: Any, label: str, rows: list[Row], i: int) -> None:
    pool = _pool(rows)
    got_block = student(pool, pool[i])
    got = _read(pool, label)
    want = [list(r) for r in rows]
    j = plain_free(want, i)
    if got != want:
        hint = _name(rows, got, lambda m, bug: plain_free(m, i, bug), _FREE_HINTS)
        shown = _window(got, want)
        raise CheckFailure(
            f"[{label}] free_block left the pool as\n  [{shown[0]}], expected\n  [{shown[1]}]\n"
            f"(A/F = allocated/free, size@offset in segment). {hint}"
        )
    assert_true(
        any(b is got_block for b in pool) and got_block.addr == want[j][0],
        f"[{label}] return the free Block that now holds the freed bytes (at {want[j][0]}).",
    )


def _drive_free(student: Any) -> int:
    """Four 512 KiB blocks fill a segment, all freed, then 1 MiB: device segments used."""
    rows: list[Row] = [[0, SEG, 0, False]]
    for _ in range(4):
        plain_alloc(rows, 512 * KIB, True)
    pool = _pool(rows)
    for addr in (512 * KIB, 0, 1536 * KIB, 1024 * KIB):
        student(pool, next(b for b in pool if b.addr == addr))
    rows = _read(pool, "free four blocks, then ask for 1 MiB")
    return 1 if plain_alloc(rows, MIB, True) is not None else 2


@grader("17.3", blocks=BLOCKS, hand="replay")
def check_free_block(student: Any) -> str:
    g = fresh_rng("17.3")
    cases = list(_NAMED_FREE)
    for k in range(4):
        rows = _fresh_rows(g, True)
        taken = [i for i, r in enumerate(rows) if r[3]] or [0]
        rows[taken[0]][3] = True
        cases.append((fresh(f"random pool {k}"), rows, int(g.choice(taken))))
    for label, rows, i in cases:
        _free_case(student, label, rows, i)
    segments = _drive_free(student)
    assert_true(
        segments == 1,
        f"[free four 512 KiB blocks, then ask for 1 MiB] that needed {segments} device "
        "allocations; coalesced, the freed segment holds 1 MiB and one suffices.",
    )
    return f"{len(cases)} frees block-exact; freed segment reused whole (1 device allocation)"
