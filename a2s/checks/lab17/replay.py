"""Grader of exercise 17.4: the caching allocator's malloc/free/empty_cache, replayed on traces.

The student's functions run on a ``CacheState`` whose device is the grader's counting device;
every address is checked (inside a live segment, no overlap with a live block), the counters
must agree with the device, and the device allocations and the reserved peak must equal the
plain model's (device and model in :mod:`._truth`) on the teaching traces and a fresh random one.
On the tiny GPT's 3-step trace: step 3 asks for nothing, peak <= 1.25x live, all freed after."""

from __future__ import annotations

import bisect
from typing import Any

from a2s.checks.core import fresh_rng, grader
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_apart
from a2s.checks.lab17._truth import (
    MIB,
    Trace,
    _counts,
    _Device,
    _device_proxy,
    _int,
    _live_after,
    _Plain,
    _plain_run,
    _traces,
    _whole_free,
    plain_replay,
)
from a2s.checks.values import assert_true
from minitorch.runtime.allocator import CacheState
from minitorch.runtime.trace import training_step_trace

__all__ = ["BUDGET", "DEVICE_ALLOCS", "check_caching_allocator", "plain_replay"]

_REF = "minitorch.runtime.allocator"
BLOCKS = (
    *(f"{_REF}:{n}" for n in ("malloc", "free", "empty_cache", "CachingAllocator")),
    "a2s.checks.lab17._truth:plain_alloc",
    "a2s.checks.lab17._truth:plain_free",
)
BUDGET = 1.25  # reserved peak / live-bytes lower bound, on the shipped trace
DEVICE_ALLOCS = 10  # device allocations for three training steps of the shipped trace


class _Watch:
    """This process's view of one replay. The child reports each event, in order (the
    ``event`` request), with the learner's counters; each is checked here against the
    device's own segments as they are at that moment: every address inside a live segment,
    no two live blocks overlapping, ``allocated`` equal to the plain model's (judged while
    the device calls agree with it), and after ``empty_cache`` no live block's segment gone."""

    def __init__(self, dev: _Device, trace: Trace, label: str) -> None:
        self.dev, self.trace, self.label = dev, trace, label
        self.next = 0
        self.starts: list[int] = []  # sorted live addresses
        self.ends: dict[int, int] = {}
        self.addr_of: dict[int, int] = {}
        self.model = _Plain()
        self.problem = ""  # the first wrong address (or events out of order)
        self.allocated = ""  # the first event after which allocated is wrong ("-": not judged)
        self.released: list[Any] = []
        self.before_empty: tuple[list[Any], int] = ([], 0)  # counters, device reserved

    def feed(self, events: Any) -> None:
        if type(events) is not list:
            self.problem = self.problem or f"[{self.label}] the replay's events were malformed."
            return
        for e in events:
            if type(e) is not tuple or len(e) != 3 or type(e[2]) is not list or len(e[2]) != 4:
                self.problem = self.problem or f"[{self.label}] the replay's events were malformed."
                return
            self.event(*e)

    def event(self, k: Any, got: Any, counters: Any) -> None:
        if self.problem:
            return
        if type(k) is not int or k != self.next or k >= len(self.trace):
            self.problem = f"[{self.label}] the replay's events arrived out of order."
            return
        self.next += 1
        op, ident, n = self.trace[k]
        where = f"{self.label}, event {k}: " + (f"malloc({n})" if op == "alloc" else op)
        if op == "empty":
            self.released.append(got)
            lost = [a for a in self.starts if not self._inside(a, a + 1)]
            if lost:
                self.problem = (
                    f"[{where}] empty_cache with {len(self.starts)} blocks still live gave back "
                    f"the segment of the live block at {lost[0]}: release only segments that "
                    "are one whole free block (addr == segment and no other block of that "
                    "segment in the pool)."
                )
            return
        if op == "free":
            addr = self.addr_of.pop(ident)
            self.starts.pop(bisect.bisect_left(self.starts, addr))
            del self.ends[addr]
            self.model.free(ident)
        elif not self._place(got, n, ident, where):
            return
        self.before_empty = (list(counters), self.dev.reserved)
        self._allocated(counters[0], where)

    def _place(self, addr: Any, n: int, ident: int, where: str) -> bool:
        if type(addr) is not int:
            self.problem = f"[{where}] malloc returned {addr}: return the address (an int)."
            return False
        end = addr + 512 * max(1, (n + 511) // 512)
        if not self._inside(addr, end):
            self.problem = (
                f"[{where}] malloc returned {addr}, not inside a segment the device gave you."
            )
            return False
        j = bisect.bisect_left(self.starts, addr)
        if (j < len(self.starts) and self.starts[j] < end) or (
            j > 0 and self.ends[self.starts[j - 1]] > addr
        ):
            self.problem = f"[{where}] malloc returned {addr}: it overlaps a live block."
            return False
        self.starts.insert(j, addr)
        self.ends[addr] = end
        self.addr_of[ident] = addr
        self.model.alloc(ident, n)
        return True

    def _inside(self, start: int, end: int) -> bool:
        seg = max((a for a in self.dev.live if a <= start), default=None)
        return seg is not None and end <= seg + self.dev.live[seg]

    def _allocated(self, got: Any, where: str) -> None:
        if self.allocated:
            return
        if self.dev.mallocs != self.model.allocs:
            self.allocated = "-"
        elif got != self.model.allocated:
            self.allocated = (
                f"[{where}] state.allocated = {got}, the live blocks hold "
                f"{self.model.allocated} B. allocated is the sum of the sizes of the live "
                "blocks (each block's size, rounded to 512 B, not the bytes asked for): add it "
                "in malloc, subtract it in free."
            )


def _child(malloc: Any, free: Any, empty_cache: Any, trace: Trace, label: str) -> Any:
    """In the learner's process: the trace replayed on a fresh state, each event reported."""
    events: list[tuple[Any, ...]] = []
    state = CacheState(_device_proxy(events))
    addr_of: dict[int, Any] = {}
    for k, (op, ident, n) in enumerate(trace):
        got: Any = None
        try:
            if op == "alloc":
                got = _int(malloc(state, n))
                addr_of[ident] = got
            elif op == "free":
                free(state, addr_of.pop(ident))
            else:
                got = _int(empty_cache(state))
        except StudentError as exc:  # name the event it raised at
            what = f"malloc({n})" if op == "alloc" else op
            raise StudentError(f"[{label}, event {k}: {what}] {exc}") from exc.__cause__
        events.append((k, got, _counts(state)))
    return [events, _counts(state)]


def _replay(
    malloc: Any, free: Any, empty_cache: Any, trace: Trace, label: str
) -> tuple[_Device, _Watch, list[Any]]:
    """Replay ``trace`` (events ``alloc``, ``free``, ``empty``) with the learner's functions
    in a child process (:func:`~a2s.checks.harness.run_apart`): the device, its
    counters and the check of every event stay in this process, out of the learner's reach."""
    dev = _Device()
    watch = _Watch(dev, trace, label)

    def serve(call: Any) -> Any:
        def entry(done: Any, *args: Any) -> Any:
            watch.feed(done)
            return call(*args)

        return entry

    both = {"device.malloc": serve(dev.malloc), "device.free": serve(dev.free)}
    rest, counters = run_apart(_child, malloc, free, empty_cache, trace, label, serve=both)
    watch.feed(rest)
    assert_true(not watch.problem, watch.problem)
    assert_true(watch.next == len(trace), f"[{label}] the replay ended after {watch.next} events.")
    return dev, watch, counters


def _counters(counters: list[Any], dev: _Device, reserved: int, label: str) -> None:
    want = [0, reserved, dev.peak, dev.mallocs]
    assert_true(
        counters == want,
        f"[{label}] after every block is freed, state (allocated, reserved, peak_reserved, "
        f"device_allocs) = {tuple(counters)}, the device says {tuple(want)}. Count a segment "
        "in reserved and device_allocs when you malloc it from the device, keep the peak.",
    )


@grader(
    "17.4",
    blocks=BLOCKS,
    uses=(
        ("17.1", "size_class", f"{_REF}:size_class"),
        ("17.2", "alloc_block", f"{_REF}:alloc_block"),
        ("17.3", "free_block", f"{_REF}:free_block"),
    ),
    hand="replay",
)
def check_caching_allocator(malloc: Any, free: Any, empty_cache: Any) -> str:
    emptied = []
    for label, trace in _traces(fresh_rng("17.4")):
        live = _live_after(trace)
        run = [*trace, ("empty", -1, 0)] if live else trace  # then empty_cache, blocks live
        dev, watch, counters = _replay(malloc, free, empty_cache, run, label)
        want_allocs, want_peak = plain_replay(trace)
        if dev.mallocs != want_allocs or dev.peak != want_peak:
            raise CheckFailure(
                f"[{label}] {dev.mallocs} device allocations and a {dev.peak / MIB:.1f} MiB "
                f"reserved peak; the caching allocator needs {want_allocs} and "
                f"{want_peak / MIB:.1f} MiB. Ask the device only when alloc_block finds no "
                "block, for size_class's segment, and free blocks back into their pool."
            )
        assert_true(watch.allocated in ("", "-"), watch.allocated)
        if live:
            emptied.append((label, trace, dev, watch, counters))
    for label, trace, dev, watch, counters in emptied:  # then empty_cache, blocks still live
        want = _whole_free(_plain_run(trace)[2])
        released = watch.released[-1]
        assert_true(
            released == want and counters[1] == dev.reserved,
            f"[{label}] empty_cache with {len(watch.starts)} blocks still live released "
            f"{released} B (reserved now {counters[1]} B, the device says {dev.reserved} "
            f"B); the wholly free segments hold {want} B. Release every one of them and "
            "subtract it from reserved.",
        )
    _peak_across_empty_cache(malloc, free, empty_cache)
    two, three = training_step_trace(steps=2), training_step_trace(steps=3)
    label = "tiny GPT, three training steps"
    dev, watch, counters = _replay(malloc, free, empty_cache, [*three, ("empty", -1, 0)], label)
    bound = max(_live(three))
    warm = _replay(malloc, free, empty_cache, two, "tiny GPT, two steps")[0].mallocs
    assert_true(
        dev.mallocs <= DEVICE_ALLOCS and dev.mallocs == warm,
        f"[{label}] {dev.mallocs} device allocations ({warm} for the first two steps); budget: "
        f"at most {DEVICE_ALLOCS}, and none in the third step: a warm cache serves a repeated "
        "step from freed blocks.",
    )
    assert_true(
        dev.peak <= BUDGET * bound,
        f"[{label}] reserved peak {dev.peak / MIB:.2f} MiB = {dev.peak / bound:.2f}x the "
        f"live-bytes lower bound {bound / MIB:.2f} MiB; budget {BUDGET}x. Freed blocks must "
        "be reused.",
    )
    assert_true(watch.allocated in ("", "-"), watch.allocated)
    before, held = watch.before_empty
    _counters(before, dev, held, label)
    released = watch.released[-1]
    assert_true(
        released == held and dev.reserved == 0 and counters[1] == 0,
        f"[{label}] empty_cache released {released} B, the device still holds {dev.reserved} "
        f"B of {held} B: give back every wholly free segment (device.free) and count it.",
    )
    return (
        f"tiny GPT, 3 steps: {dev.mallocs} device allocations (0 in step 3), reserved peak "
        f"{dev.peak / MIB:.1f} MiB = {dev.peak / bound:.2f}x the lower bound"
    )


_PEAK_TRACE: Trace = [
    ("alloc", 0, 12 * MIB),
    ("alloc", 1, 100),
    ("free", 0, 12 * MIB),
    ("empty", -1, 0),
    ("alloc", 2, 10 * MIB),
]


def _peak_across_empty_cache(malloc: Any, free: Any, empty_cache: Any) -> None:
    """12 MiB and 100 B, free the 12 MiB, empty_cache, then 10 MiB: the 14 MiB peak stays."""
    label = "12 MiB + 100 B, free 12 MiB, empty_cache, 10 MiB"
    dev, _, counters = _replay(malloc, free, empty_cache, _PEAK_TRACE, label)
    got, want = counters[1:], [dev.reserved, dev.peak, dev.mallocs]
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
