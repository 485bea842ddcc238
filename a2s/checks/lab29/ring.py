"""Grader of exercise 29.1: submit commands through a ring, doorbells and back pressure.

``submit_all(ring, commands)`` runs in a forked child (:func:`a2s.checks.harness.run_apart`)
against a :class:`~a2s.checks.lab29._truth.Ring` proxy; the device (slots, head, the
doorbells, MMIO reads, what it fetched) lives in the grader's process. The device fetches
announced commands only while the host polls the head, at a speed drawn per case (0 to 3
commands a poll), so full rings happen. The property judged on every workload: the device
fetched exactly the commands, in order; no unfetched slot was overwritten; each doorbell but
the last was rung with the ring full (one per batch), announced every command written so far
and none announced nothing; no MMIO read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.harness import request, run_apart
from a2s.checks.values import assert_true

__all__ = ["check_ring"]

_REF = "minitorch.driver.ring"


def _index(v: Any) -> Any:
    """An int or a numpy integer as an int; anything else None."""
    ok = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    return int(v) if ok else None


class RingDevice:
    """The device side of a command ring, in the grader's process. It fetches announced
    commands only while the host waits (on each poll of the head), ``speeds[i]`` at poll i."""

    def __init__(self, capacity: int, start: int, speeds: Sequence[int], total: int) -> None:
        self.capacity, self.total = capacity, total
        self.slots: list[Any] = [None] * capacity
        self.full = [False] * capacity  # written and not yet fetched
        self.head = self.announced = start
        self.speeds, self.polls, self.idle_polls = list(speeds), 0, 0
        self.consumed: list[Any] = []
        self.written = self.doorbells = self.mmio_reads = 0
        self.early: list[int] = []  # doorbells rung before the ring was full or all written
        self.empty: list[int] = []  # doorbells that announced nothing new
        self.partial: list[int] = []  # doorbells that left written commands unannounced
        self.problem = ""

    def occupied(self) -> int:
        return sum(self.full)

    def _fail(self, text: str) -> None:
        self.problem = self.problem or text
        raise CheckFailure(text)

    def _fetch(self, n: int) -> None:
        while n > 0 and self.head != self.announced:
            self.consumed.append(self.slots[self.head])
            self.full[self.head], self.slots[self.head] = False, None
            self.head, n = (self.head + 1) % self.capacity, n - 1

    def write(self, given: Any, command: Any) -> None:
        slot = _index(given)
        if slot is None or not 0 <= slot < self.capacity:
            self._fail(
                f"ring.write(slot={given!r}): the ring has slots 0..{self.capacity - 1}. The tail "
                "wraps: tail = (tail + 1) % capacity."
            )
        if self.full[slot]:
            self._fail(
                f"ring.write overwrote slot {slot}, which still held a command the device had "
                "not fetched. Back pressure: while (head - tail - 1) % capacity == 0 the ring is "
                "full; ring the doorbell and wait for the head to move."
            )
        self.slots[slot], self.full[slot] = command, True
        self.written += 1

    def doorbell(self, given: Any) -> None:
        tail = _index(given)
        if tail is None or not 0 <= tail < self.capacity:
            self._fail(f"ring.doorbell({given!r}): write the tail, a slot index 0..capacity-1.")
        self.doorbells += 1
        new = (tail - self.announced) % self.capacity
        pending = self.occupied() - (self.announced - self.head) % self.capacity
        if new == 0 and pending > 0 and tail == self.head:
            self._fail(
                f"Your doorbell wrote tail {tail} == head with {self.occupied()} commands "
                "written: the device reads head == tail as an empty ring. Leave one slot "
                "empty: at most capacity - 1 commands in flight."
            )
        if new > pending:
            self._fail(
                f"ring.doorbell({tail}) announces {new} new slots but only {pending} were "
                "written since the last doorbell: write the tail after your last command (the "
                "ring starts at ring.tail, not at 0)."
            )
        if new == 0:
            self.empty.append(self.doorbells)
        elif self.occupied() < self.capacity - 1 and self.written < self.total:
            self.early.append(self.doorbells)
        elif new < pending:  # the ring is full, but the tail is not the producer's
            self.partial.append(self.doorbells)
        self.announced = tail

    def poll_head(self) -> int:
        speed = self.speeds[self.polls % len(self.speeds)]
        self.polls += 1
        before = self.head
        self._fetch(speed)
        stuck = self.head == self.announced and self.occupied() > 0
        self.idle_polls = self.idle_polls + 1 if stuck and self.head == before else 0
        if self.idle_polls > 200:
            self._fail(
                f"The host polled the head {self.idle_polls} times while the device had nothing "
                f"announced ({self.occupied()} commands written, none announced): ring the "
                "doorbell before you wait, or the device never sees the work."
            )
        return self.head

    def mmio_read(self, name: Any) -> int:
        self.mmio_reads += 1
        if name != "RING_HEAD":
            self._fail(f"ring.mmio_read({name!r}): the only readable register is 'RING_HEAD'.")
        return self.poll_head()

    def drain(self) -> None:
        self._fetch(self.capacity)

    def serve(self) -> dict[str, Callable[..., Any]]:
        return {
            "ring.write": self.write,
            "ring.doorbell": self.doorbell,
            "ring.head": self.poll_head,
            "ring.mmio_read": self.mmio_read,
        }


class Ring:
    """The command ring as the learner's code sees it: ``capacity``, the starting ``tail``,
    and four requests to the device (write a slot, ring the doorbell, poll the head
    write-back in host memory, read the RING_HEAD register over MMIO)."""

    __slots__ = ("capacity", "tail")

    def __init__(self, capacity: int, tail: int) -> None:
        self.capacity, self.tail = capacity, tail

    def write(self, slot: int, command: Any) -> None:
        request("ring.write", slot, command)

    def doorbell(self, tail: int) -> None:
        request("ring.doorbell", tail)

    def head(self) -> int:
        return request("ring.head")  # type: ignore[no-any-return]

    def mmio_read(self, register: str) -> int:
        return request("ring.mmio_read", register)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<Ring of {self.capacity} slots, tail {self.tail}: requests to the device>"


# (label, capacity, start slot, number of commands, device speeds per poll)
_NAMED = [
    ("3 commands, a ring of 8: one batch, one doorbell", 8, 0, 3, [1]),
    ("7 commands fill a ring of 8 exactly (one slot stays empty)", 8, 0, 7, [2]),
    ("8 commands into a ring of 8: the 8th waits for room", 8, 0, 8, [0, 1]),
    ("the ring starts at slot 6 of 8 (a previous batch left it there)", 8, 6, 5, [1]),
    ("a ring of 2: one command in flight at a time", 2, 1, 5, [0, 1]),
    ("40 commands wrap a ring of 8 five times, a slow device", 8, 3, 40, [0, 0, 1, 2]),
    ("no commands: nothing to announce", 4, 2, 0, [1]),
]


def _draw(g: np.random.Generator, label: str) -> tuple[str, int, int, int, list[int]]:
    cap = int(g.integers(2, 17))
    n = int(g.integers(0, 4 * cap + 3))
    speeds = [int(v) for v in g.integers(0, 4, int(g.integers(1, 6)))]
    speeds[-1] = max(speeds[-1], 1)  # the device makes progress
    start = int(g.integers(cap))
    return (f"{label}: {n} commands, ring of {cap} from slot {start}", cap, start, n, speeds)


def _commands(g: np.random.Generator, n: int) -> list[int]:
    return [int(v) for v in g.permutation(10 * n + 10)[:n]]


@grader("29.1", blocks=(_REF, "minitorch.driver.device:Bar"), hand="replay")
def check_ring(submit_all: Callable[..., Any]) -> str:
    """Exercise 29.1: submit_all(ring, commands) on random workloads and device speeds."""
    seeded, new = rng(2901), fresh_rng("29.1")
    cases = list(_NAMED) + [_draw(seeded, f"random workload {i}") for i in range(4)]
    cases += [(fresh(c[0]), *c[1:]) for c in (_draw(new, f"fresh workload {i}") for i in range(3))]
    doorbells = fulls = 0
    for k, (label, cap, start, n, speeds) in enumerate(cases):
        commands = _commands(rng(29100 + k), n)
        dev = RingDevice(cap, start, speeds, n)
        try:
            run_apart(submit_all, Ring(cap, start), list(commands), serve=dev.serve(), timeout=20)
        except CheckFailure as exc:
            if dev.problem:
                raise CheckFailure(f"[{label}] {dev.problem}") from None
            exc.args = (f"[{label}] {exc}",)
            raise
        unannounced = (dev.occupied() - (dev.announced - dev.head) % cap) if n else 0
        dev.drain()
        assert_true(
            not unannounced,
            f"[{label}] {unannounced} command(s) were written but never announced: ring the "
            "doorbell once more after the last write.",
        )
        got = dev.consumed
        if got != commands:
            first = next(
                (i for i, (a, b) in enumerate(zip(got, commands, strict=False)) if a != b), None
            )
            where = (
                f"first difference at command {first}"
                if first is not None
                else f"{len(got)} fetched of {len(commands)}"
            )
            raise CheckFailure(
                f"[{label}] the device fetched {got[:8]}... but {commands[:8]}... was "
                f"submitted ({where}). Write command i at slot (start + i) % capacity, in order."
            )
        assert_true(
            dev.mmio_reads == 0,
            f"[{label}] {dev.mmio_reads} MMIO read(s) of RING_HEAD: each is a round trip over "
            "the link (about 1 us). Poll ring.head(), the copy the device writes back into host "
            "memory.",
        )
        assert_true(
            not dev.empty,
            f"[{label}] doorbell number {dev.empty[0] if dev.empty else 0} announced no new "
            "command: a doorbell is an MMIO write, ring it only when there is new work.",
        )
        assert_true(
            not dev.early,
            f"[{label}] {dev.doorbells} doorbells for {n} commands: doorbell number "
            f"{dev.early[0] if dev.early else 0} was rung with room left in the ring. One "
            "doorbell per batch: ring it when the ring is full or everything is written.",
        )
        assert_true(
            not dev.partial,
            f"[{label}] {dev.doorbells} doorbells for {n} commands: doorbell number "
            f"{dev.partial[0] if dev.partial else 0} announced only part of what was written. "
            "One doorbell per batch: write the tail after your last command, which announces "
            "the whole batch at once.",
        )
        doorbells += dev.doorbells
        fulls += dev.polls
    total = sum(c[3] for c in cases)
    return (
        f"{len(cases)} workloads (3 fresh), {total} commands fetched in order with "
        f"{doorbells} doorbells, 0 MMIO reads, {fulls} polls of the head write-back"
    )
