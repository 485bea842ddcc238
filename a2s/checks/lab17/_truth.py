"""Ground truth of lab 17's graders: the plain model of the caching allocator, written with
lists and loops, and (for 17.4) the model replayed on a trace, with the teaching traces, and
the grader's device: the counting driver, and the proxy the learner's process is handed (its
``malloc`` and ``free`` are requests to the grader's device).

A pool is a list of ``[addr, size, segment, allocated]`` rows sorted by address. Each model
function takes ``bug``, which makes one known mistake, so a wrong answer can be named by the
variant that reproduces it. Nothing here comes from :mod:`minitorch.runtime.allocator`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.errors import CheckFailure
from a2s.checks.harness import request
from minitorch.runtime.allocator import CacheState

KIB, MIB = 1 << 10, 1 << 20
Row = list[Any]  # [addr, size, segment, allocated]


def plain_size_class(n: int, bug: str = "") -> tuple[int, str, int]:
    """(rounded size, pool, new-segment bytes) of a request of ``n`` bytes."""
    if bug == "power of two":
        size = 512
        while size < n:
            size *= 2
    elif bug == "floor":
        size = max(512, n // 512 * 512)
    elif bug == "no minimum":
        size = 512 * ((n + 511) // 512)
    else:
        size = 512 * max(1, (n + 511) // 512)
    small = size < MIB if bug == "strict 1 MiB" else size <= MIB
    if small:
        return size, "small", 2 * MIB
    if (size <= 10 * MIB if bug == "10 MiB shared" else size < 10 * MIB) and bug != (
        "no 20 MiB segment"
    ):
        return size, "large", 20 * MIB
    if bug == "segment = size":
        return size, "large", size
    return size, "large", (size + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)


def pool_rows(pool: Any) -> list[Row]:
    """Rows of a list of blocks (anything with addr, size, segment, allocated)."""
    return [[b.addr, b.size, b.segment, b.allocated] for b in pool]


def plain_alloc(pool: list[Row], size: int, small: bool, bug: str = "") -> int | None:
    """Allocate ``size`` bytes in ``pool`` (rows, changed in place); the index, or None."""
    fits = [i for i, r in enumerate(pool) if not r[3] and r[1] >= size]
    if not fits:
        return None
    if bug == "first fit":
        i = fits[0]
    elif bug == "worst fit":
        i = max(fits, key=lambda k: (pool[k][1], -pool[k][0]))
    elif bug == "ties high":
        i = min(fits, key=lambda k: (pool[k][1], -pool[k][0]))
    else:
        i = min(fits, key=lambda k: (pool[k][1], pool[k][0]))
    addr, have, seg, _ = pool[i]
    rest = have - size
    split = rest >= 512 if small else rest > MIB
    if bug == "no split":
        split = False
    elif bug == "always split":
        split = rest > 0
    elif bug == "rest > 512":
        split = rest > 512 if small else rest > MIB
    elif bug == "rest >= 1 MiB":
        split = rest >= 512 if small else rest >= MIB
    if not split:
        pool[i][3] = True
        return i
    if bug == "rest first":
        pool[i] = [addr, rest, seg, False]
        pool.insert(i + 1, [addr + rest, size, seg, True])
        return i + 1
    pool[i] = [addr, size, seg, True]
    pool.insert(i + 1, [addr + size, rest, seg, False])
    return i


def plain_free(pool: list[Row], i: int, bug: str = "") -> int:
    """Free row ``i`` and coalesce; returns the index of the free row that now holds it."""
    pool[i][3] = False
    if bug == "no coalescing":
        return i

    def joins(j: int) -> bool:
        ok = 0 <= j < len(pool) and not pool[j][3]
        return ok and (bug == "across segments" or pool[j][2] == pool[i][2])

    if joins(i + 1):
        pool[i][1] += pool[i + 1][1]
        del pool[i + 1]
    if bug != "next only" and joins(i - 1):
        pool[i - 1][1] += pool[i][1]
        del pool[i]
        return i - 1
    return i


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
        (
            "one size, five times",
            [e for i in range(5) for e in (("alloc", i, 4000), ("free", i, 4000))],
        ),
        (
            "both pools",
            [
                ("alloc", 1, 100),
                ("alloc", 2, 2 * MIB),
                ("alloc", 3, 700_000),
                ("free", 1, 100),
                ("free", 2, 2 * MIB),
                ("free", 3, 700_000),
                ("alloc", 4, 3 * MIB),
                ("alloc", 5, 12 * MIB),
            ],
        ),
        (
            "freed neighbours serve a bigger request",
            [("alloc", i, 512 * KIB) for i in range(4)]
            + [("free", i, 512 * KIB) for i in (1, 0, 3, 2)]
            + [("alloc", 9, MIB)],
        ),
        (
            "a live block behind a free one",
            [("alloc", 1, 100), ("alloc", 2, 100), ("free", 1, 100)],
        ),
    ]
    trace: Trace = []
    live: list[tuple[int, int]] = []
    for i in range(300):
        if live and g.random() < 0.45:
            ident, n = live.pop(int(g.integers(0, len(live))))
            trace.append(("free", ident, n))
        else:
            n = int(
                g.choice(
                    [
                        g.integers(1, 64 * KIB),
                        g.integers(64 * KIB, 2 * MIB),
                        g.integers(2 * MIB, 24 * MIB),
                    ],
                    p=[0.6, 0.3, 0.1],
                )
            )
            trace.append(("alloc", i, n))
            live.append((i, n))
    out.append((fresh("300 random events"), trace))
    return out


class _Device:
    """The grader's driver: bump addresses, every call counted, frees checked."""

    def __init__(self) -> None:
        self.next = 1 << 40
        self.live: dict[int, int] = {}
        self.mallocs = self.frees = self.reserved = self.peak = 0

    def malloc(self, nbytes: int) -> int:
        nbytes = int(nbytes)
        if nbytes <= 0 or nbytes % 512:
            raise CheckFailure(f"device.malloc({nbytes}): segments are positive multiples of 512.")
        addr, self.next = self.next, self.next + nbytes
        self.live[addr] = nbytes
        self.mallocs += 1
        self.reserved += nbytes
        self.peak = max(self.peak, self.reserved)
        return addr

    def free(self, addr: int) -> None:
        if addr not in self.live:
            raise CheckFailure(f"device.free({addr}): not the start of a live segment.")
        self.reserved -= self.live.pop(addr)
        self.frees += 1


def _int(x: Any) -> Any:
    """A count as a plain int (the learner's own int subclass or object shown, not sent)."""
    if type(x) is int or (isinstance(x, np.integer) and type(x).__module__ == "numpy"):
        return int(x)
    return repr(x)[:60]


def _counts(state: CacheState) -> list[Any]:
    return [
        _int(getattr(state, f, None))
        for f in ("allocated", "reserved", "peak_reserved", "device_allocs")
    ]


def _device_proxy(events: list[tuple[Any, ...]]) -> Any:
    """The learner's device (child side): ``malloc`` and ``free`` only, each a request to the
    grader's device that first hands over the events finished since the last request, so the
    grader checks each event against the device as it was when the event ended."""

    def call(name: str, *args: Any) -> Any:
        done = list(events)
        events.clear()
        return request(name, done, *args)

    namespace: dict[str, Any] = {
        "__slots__": (),
        "malloc": lambda self, nbytes: call("device.malloc", _int(nbytes)),
        "free": lambda self, addr: call("device.free", _int(addr)),
        "__repr__": lambda self: "<device: requests to the grader>",
    }
    return type("Device", (), namespace)()
