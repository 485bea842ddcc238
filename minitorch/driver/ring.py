"""The command ring: the driver writes commands into host memory, the device consumes them.

A GPU channel's **pushbuffer** (NVIDIA's GPFIFO, an NVMe submission queue, a NIC's TX ring)
is a ring of ``capacity`` slots in pinned host memory shared by two parties:

* the **producer** (the driver, :class:`CommandRing`) writes a command at ``tail`` and moves
  ``tail = (tail + 1) % capacity``. Nothing it writes is visible to the device until it
  writes the new tail to the **doorbell** register in the BAR (one posted MMIO write,
  ``mmio_write_ns``); a batch of ``k`` commands needs one doorbell, not ``k``;
* the **consumer** (the device's front end, :class:`RingConsumer`) fetches the slots from
  ``head`` up to the tail of the last doorbell, in order, and writes its new ``head`` back
  (to its ``RING_HEAD`` register and into host memory, where the producer reads it for free
  instead of paying an MMIO read).

One slot is always left empty so that ``head == tail`` means *empty* and
``(tail + 1) % capacity == head`` means *full*; free slots are
``(head - tail - 1) mod capacity``, at most ``capacity - 1``. A full ring is **back
pressure**: :meth:`CommandRing.submit` refuses (returns False) and the caller waits for the
device to consume, as ``cuLaunchKernel`` blocks when a stream's pushbuffer is full.

    ring = CommandRing(4, bar)              # room for 3 commands
    ring.submit("a"); ring.submit("b")      # written, not yet visible
    ring.doorbell()                         # bar[DOORBELL] = 2
    RingConsumer(ring).consume()            # ["a", "b"]; ring.head == 2

Lab: 29_driver_and_command_submission
Reference: NVIDIA open-gpu-doc, "Host" class documentation (GPFIFO, GP_PUT/GP_GET); NVM
Express Base Specification 2.0, section 3.3.1 (circular queues, full and empty, doorbells).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minitorch.driver.device import DOORBELL, RING_HEAD, RING_TAIL, Bar

__all__ = ["CommandRing", "RingConsumer", "free_slots"]


def free_slots(head: int, tail: int, capacity: int) -> int:
    """Slots the producer may still fill: ``(head - tail - 1) mod capacity``."""
    return (head - tail - 1) % capacity


class CommandRing:
    """The ring in host memory and its producer side (the driver)."""

    def __init__(self, capacity: int, bar: Bar) -> None:
        if capacity < 2:
            raise ValueError("a ring needs at least 2 slots (one is always empty)")
        self.capacity, self.bar = capacity, bar
        self.slots: list[Any] = [None] * capacity
        self.tail = 0  # the producer's next slot
        self.head = 0  # the device's progress, written back into host memory by the device
        self.submitted = self.doorbells = self.refused = self.wraps = 0

    def free_slots(self) -> int:
        return free_slots(self.head, self.tail, self.capacity)

    def pending(self) -> int:
        """Commands written and not yet consumed (announced by a doorbell or not)."""
        return (self.tail - self.head) % self.capacity

    def submit(self, command: Any) -> bool:
        """Write one command at the tail; False (nothing written) when the ring is full."""
        if self.free_slots() == 0:
            self.refused += 1
            return False
        self.slots[self.tail] = command
        self.tail = (self.tail + 1) % self.capacity
        self.wraps += self.tail == 0
        self.submitted += 1
        return True

    def doorbell(self) -> None:
        """Tell the device there is work up to ``tail``: one MMIO write to the doorbell."""
        self.doorbells += 1
        self.bar.write(DOORBELL, self.tail)

    def submit_all(self, commands: Iterable[Any]) -> int:
        """Submit while there is room, then ring the doorbell once; returns how many went."""
        n = 0
        for command in commands:
            if not self.submit(command):
                break
            n += 1
        if n:
            self.doorbell()
        return n


class RingConsumer:
    """The device side: fetch what the last doorbell announced, in order, and advance head."""

    def __init__(self, ring: CommandRing) -> None:
        self.ring = ring
        self.head = 0
        self.consumed = 0

    def available(self) -> int:
        """Commands announced by the doorbell and not yet fetched."""
        return (self.ring.bar.regs[DOORBELL] - self.head) % self.ring.capacity

    def consume(self, max_commands: int | None = None) -> list[Any]:
        """Fetch up to ``max_commands`` announced commands (all by default), oldest first."""
        ring, bar = self.ring, self.ring.bar
        tail = bar.regs[DOORBELL]
        bar.device_set(RING_TAIL, tail)
        n = self.available() if max_commands is None else min(max_commands, self.available())
        out = []
        for _ in range(n):
            out.append(ring.slots[self.head])
            ring.slots[self.head] = None  # consumed: the slot is the producer's again
            self.head = (self.head + 1) % ring.capacity
        self.consumed += n
        ring.head = self.head  # write-back into host memory (what the producer reads)
        bar.device_set(RING_HEAD, self.head)
        return out
