"""Ground truth of exercise 17.4: the plain model replayed on a trace, and the teaching traces."""

from __future__ import annotations

from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.lab17.model import KIB, MIB, Row, plain_alloc, plain_free, plain_size_class

Trace = list[tuple[str, int, int]]


def plain_replay(trace: Trace) -> tuple[int, int]:
    """(device allocations, reserved peak) of the plain model on ``trace``."""
    return _plain_run(trace)[:2]


def _plain_run(trace: Trace) -> tuple[int, int, dict[str, list[Row]]]:
    """(device allocations, reserved peak, pools) of the plain model on ``trace``."""
    pools: dict[str, list[Row]] = {"small": [], "large": []}
    where: dict[int, tuple[str, int]] = {}
    nxt = allocs = reserved = peak = 0
    for op, ident, n in trace:
        if op == "free":
            name, addr = where.pop(ident)
            rows = pools[name]
            plain_free(rows, next(k for k, r in enumerate(rows) if r[0] == addr))
            continue
        size, name, seg = plain_size_class(n)
        rows = pools[name]
        i = plain_alloc(rows, size, name == "small")
        if i is None:
            rows.append([nxt, seg, nxt, False])
            nxt, allocs, reserved = nxt + seg, allocs + 1, reserved + seg
            peak = max(peak, reserved)
            i = plain_alloc(rows, size, name == "small")
        assert i is not None
        where[ident] = (name, rows[i][0])
    return allocs, peak, pools


class _Plain:
    """The plain model, one event at a time: what ``allocated`` and the device calls are."""

    def __init__(self) -> None:
        self.pools: dict[str, list[Row]] = {"small": [], "large": []}
        self.where: dict[int, tuple[str, int, int]] = {}  # ident -> (pool, addr, block size)
        self.next = self.allocs = self.allocated = 0

    def alloc(self, ident: int, n: int) -> None:
        size, name, seg = plain_size_class(n)
        rows = self.pools[name]
        i = plain_alloc(rows, size, name == "small")
        if i is None:
            rows.append([self.next, seg, self.next, False])
            self.next, self.allocs = self.next + seg, self.allocs + 1
            i = plain_alloc(rows, size, name == "small")
        assert i is not None
        self.where[ident] = (name, rows[i][0], rows[i][1])
        self.allocated += rows[i][1]

    def free(self, ident: int) -> None:
        name, addr, size = self.where.pop(ident)
        rows = self.pools[name]
        plain_free(rows, next(k for k, r in enumerate(rows) if r[0] == addr))
        self.allocated -= size


def _whole_free(pools: dict[str, list[Row]]) -> int:
    """Bytes of the segments that are one free block: what empty_cache gives back."""
    out = 0
    for rows in pools.values():
        for r in rows:
            if not r[3] and r[0] == r[2] and sum(1 for o in rows if o[2] == r[2]) == 1:
                out += r[1]
    return out


def _live_after(trace: Trace) -> bool:
    alive: set[int] = set()
    for op, ident, _ in trace:
        if op == "alloc":
            alive.add(ident)
        elif op == "free":
            alive.discard(ident)
    return bool(alive)


def _traces(g: Any) -> list[tuple[str, Trace]]:
    out: list[tuple[str, Trace]] = [
        ("one size, five times", [e for i in range(5) for e in (("alloc", i, 4000), ("free", i, 4000))]),  # noqa: E501
        ("both pools", [("alloc", 1, 100), ("alloc", 2, 2 * MIB), ("alloc", 3, 700_000),
                        ("free", 1, 100), ("free", 2, 2 * MIB), ("free", 3, 700_000),
                        ("alloc", 4, 3 * MIB), ("alloc", 5, 12 * MIB)]),
        ("freed neighbours serve a bigger request", [("alloc", i, 512 * KIB) for i in range(4)]
         + [("free", i, 512 * KIB) for i in (1, 0, 3, 2)] + [("alloc", 9, MIB)]),
        ("a live block behind a free one", [("alloc", 1, 100), ("alloc", 2, 100),
                                            ("free", 1, 100)]),
    ]  # fmt: skip
    trace: Trace = []
    live: list[tuple[int, int]] = []
    for i in range(300):
        if live and g.random() < 0.45:
            ident, n = live.pop(int(g.integers(0, len(live))))
            trace.append(("free", ident, n))
        else:
            n = int(g.choice([g.integers(1, 64 * KIB), g.integers(64 * KIB, 2 * MIB),
                              g.integers(2 * MIB, 24 * MIB)], p=[0.6, 0.3, 0.1]))  # fmt: skip
            trace.append(("alloc", i, n))
            live.append((i, n))
    out.append((fresh("300 random events"), trace))
    return out
