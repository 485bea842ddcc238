"""Grader of exercise 17.4: the caching allocator's malloc/free/empty_cache, replayed on traces.

The student's functions run on a :class:`~minitorch.runtime.allocator.CacheState` whose device
is the grader's own counting device. Every address is checked (inside a live segment, no
overlap with a live block); the counters must agree with the device; the device allocations
and the reserved peak must equal the grader's plain model (:mod:`.model`) on the teaching
traces and a fresh random one. On the shipped three-step training trace of the tiny GPT the
budgets are enforced: the third step asks the device for nothing, the reserved peak stays
within 1.25x the live-bytes lower bound, and empty_cache gives every byte back.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from minitorch.checks.cases import fresh
from minitorch.checks.core import fresh_rng, grader, plain
from minitorch.checks.errors import CheckFailure
from minitorch.checks.lab17.model import KIB, MIB, Row, plain_alloc, plain_free, plain_size_class
from minitorch.checks.values import assert_true
from minitorch.runtime.allocator import CacheState
from minitorch.runtime.trace import training_step_trace

__all__ = ["BUDGET", "DEVICE_ALLOCS", "check_caching_allocator", "plain_replay"]

_REF = "minitorch.runtime.allocator"
BLOCKS = (
    *(f"{_REF}:{n}" for n in ("malloc", "free", "empty_cache", "CachingAllocator")),
    "minitorch.checks.lab17.model:plain_alloc",
    "minitorch.checks.lab17.model:plain_free",
)
BUDGET = 1.25  # reserved peak / live-bytes lower bound, on the shipped trace
DEVICE_ALLOCS = 10  # device allocations for three training steps of the shipped trace
Trace = list[tuple[str, int, int]]


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


def _whole_free(pools: dict[str, list[Row]]) -> int:
    """Bytes of the segments that are one free block: what empty_cache gives back."""
    out = 0
    for rows in pools.values():
        for r in rows:
            if not r[3] and r[0] == r[2] and sum(1 for o in rows if o[2] == r[2]) == 1:
                out += r[1]
    return out


def _replay(
    malloc: Any, free: Any, trace: Trace, label: str
) -> tuple[CacheState, _Device, list[int]]:
    dev = _Device()
    state = CacheState(dev)
    starts: list[int] = []  # sorted live addresses
    ends: dict[int, int] = {}
    addr_of: dict[int, int] = {}
    for op, ident, n in trace:
        if op == "free":
            addr = addr_of.pop(ident)
            free(state, addr)
            starts.pop(bisect.bisect_left(starts, addr))
            del ends[addr]
            continue
        addr = plain(malloc(state, n), what="address", case=label)
        addr = int(addr) if isinstance(addr, np.integer) else addr
        assert_true(type(addr) is int, f"[{label}] malloc returned {addr!r}: return the address.")
        end = addr + 512 * max(1, (n + 511) // 512)
        seg = max((a for a in dev.live if a <= addr), default=None)
        assert_true(
            seg is not None and end <= seg + dev.live[seg],
            f"[{label}] malloc({n}) returned {addr}, not inside a segment the device gave you.",
        )
        k = bisect.bisect_left(starts, addr)
        clash = (k < len(starts) and starts[k] < end) or (k > 0 and ends[starts[k - 1]] > addr)
        assert_true(not clash, f"[{label}] malloc({n}) returned {addr}: it overlaps a live block.")
        starts.insert(k, addr)
        ends[addr] = end
        addr_of[ident] = addr
    return state, dev, list(addr_of.values())


def _counters(state: CacheState, dev: _Device, label: str) -> None:
    got = plain([state.allocated, state.reserved, state.peak_reserved, state.device_allocs],
                what="counters", case=label)  # fmt: skip
    want = [0, dev.reserved, dev.peak, dev.mallocs]
    assert_true(
        got == want,
        f"[{label}] after every block is freed, state (allocated, reserved, peak_reserved, "
        f"device_allocs) = {tuple(got)}, the device says {tuple(want)}. Count a segment in "
        "reserved and device_allocs when you malloc it from the device, keep the peak.",
    )


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


@grader("17.4", blocks=BLOCKS, uses=(
    ("17.1", "size_class", f"{_REF}:size_class"),
    ("17.2", "alloc_block", f"{_REF}:alloc_block"),
    ("17.3", "free_block", f"{_REF}:free_block"),
))  # fmt: skip
def check_caching_allocator(malloc: Any, free: Any, empty_cache: Any) -> str:
    replayed = []
    for label, trace in _traces(fresh_rng("17.4")):
        state, dev, live = _replay(malloc, free, trace, label)
        replayed.append((label, trace, state, dev, live))
        want_allocs, want_peak = plain_replay(trace)
        if dev.mallocs != want_allocs or dev.peak != want_peak:
            raise CheckFailure(
                f"[{label}] {dev.mallocs} device allocations and a {dev.peak / MIB:.1f} MiB "
                f"reserved peak; the caching allocator needs {want_allocs} and "
                f"{want_peak / MIB:.1f} MiB. Ask the device only when alloc_block finds no "
                "block, for size_class's segment, and free blocks back into their pool."
            )
    for label, trace, state, dev, live in replayed:  # then empty_cache, blocks still live
        if live:
            _empty_with_live(
                empty_cache, state, dev, live, _whole_free(_plain_run(trace)[2]), label
            )
    _peak_across_empty_cache(malloc, free, empty_cache)
    two, three = training_step_trace(steps=2), training_step_trace(steps=3)
    label = "tiny GPT, three training steps"
    state, dev, _ = _replay(malloc, free, three, label)
    bound = max(_live(three))
    warm = _replay(malloc, free, two, "tiny GPT, two steps")[1].mallocs
    assert_true(
        dev.mallocs <= DEVICE_ALLOCS and dev.mallocs == warm,
        f"[{label}] {dev.mallocs} device allocations ({warm} for the first two steps); budget: "
        f"at most {DEVICE_ALLOCS}, and none in the third step: a warm cache serves a repeated "
        "step from freed blocks.",
    )
    assert_true(
        dev.peak <= BUDGET * bound,
        f"[{label}] reserved peak {dev.peak / MIB:.2f} MiB = {dev.peak / bound:.2f}x the "
        "live-bytes "
        f"lower bound {bound / MIB:.2f} MiB; budget {BUDGET}x. Freed blocks must be reused.",
    )
    _counters(state, dev, label)
    held = dev.reserved
    released = plain(empty_cache(state), what="empty_cache", case=label)
    assert_true(
        released == held and dev.reserved == 0 and state.reserved == 0,
        f"[{label}] empty_cache released {released!r} B, the device still holds {dev.reserved} B "
        f"of {held} B: give back every wholly free segment (device.free) and count it.",
    )
    return (f"tiny GPT, 3 steps: {dev.mallocs} device allocations (0 in step 3), reserved peak "
            f"{dev.peak / MIB:.1f} MiB = {dev.peak / bound:.2f}x the lower bound")  # fmt: skip


def _empty_with_live(
    empty_cache: Any, state: CacheState, dev: _Device, live: list[int], want: int, label: str
) -> None:
    """empty_cache with blocks still live: only wholly free segments go back to the device."""
    released = plain(empty_cache(state), what="empty_cache", case=label)
    lost = [a for a in live if not any(s <= a < s + n for s, n in dev.live.items())]
    assert_true(
        not lost,
        f"[{label}] empty_cache with {len(live)} blocks still live gave back the segment of the "
        f"live block at {lost[0] if lost else 0}: release only segments that are one whole free "
        "block (addr == segment and no other block of that segment in the pool).",
    )
    assert_true(
        released == want and state.reserved == dev.reserved,
        f"[{label}] empty_cache with {len(live)} blocks still live released {released!r} B "
        f"(reserved now {state.reserved} B, the device says {dev.reserved} B); the wholly free "
        f"segments hold {want} B. Release every one of them and subtract it from reserved.",
    )


def _peak_across_empty_cache(malloc: Any, free: Any, empty_cache: Any) -> None:
    """12 MiB and 100 B, free the 12 MiB, empty_cache, then 10 MiB: the 14 MiB peak stays."""
    label = "12 MiB + 100 B, free 12 MiB, empty_cache, 10 MiB"
    dev = _Device()
    state = CacheState(dev)
    big = plain(malloc(state, 12 * MIB), what="address", case=label)
    malloc(state, 100)
    free(state, big)
    empty_cache(state)
    malloc(state, 10 * MIB)
    got = plain([state.reserved, state.peak_reserved, state.device_allocs], what="counters",
                case=label)  # fmt: skip
    want = [dev.reserved, dev.peak, dev.mallocs]
    assert_true(
        got == want,
        f"[{label}] state (reserved, peak_reserved, device_allocs) = {tuple(got)}, the device "
        f"says {tuple(want)}. peak_reserved is the highest reserved ever: keep the max, "
        "reserved went down when empty_cache released the 12 MiB segment.",
    )


def _live(trace: Trace) -> list[int]:
    out, live = [0], 0
    for op, _, n in trace:
        live += n if op == "alloc" else -n
        out.append(live)
    return out
