"""Contexts: per-process address spaces on one device, and a time-sliced scheduler.

Each process that opens the device gets a **context** (``cuCtxCreate``; a GPU channel group
with its own page directory): its own virtual address space, mapped page by page onto device
memory by a **page table**. Every DMA and kernel access of a context goes through its table,
so a context can only reach the physical pages it was given; an access to an unmapped page is
a **fault**, rejected before a single byte moves and reported (the way a GPU raises an MMU
fault, an Xid, and CUDA a sticky ``CUDA_ERROR_ILLEGAL_ADDRESS`` for that context only). The
same isolation is what an IOMMU gives a device assigned to a VM through VFIO.

A virtual address ``v`` is page ``v // P`` at offset ``v % P`` (``P = page_size``);
:meth:`PageTable.translate` splits a range at page boundaries into physical pieces. Virtual
page 0 is never mapped, so a null pointer faults.

:class:`TimeSliceScheduler` shares the engine between contexts round-robin: each runs at
most ``q = timeslice_ns`` of its command stream, then the engine switches (``c =
context_switch_ns``) to the next context with work. ``n > 1`` contexts with ``m q`` of work each
take ``m n`` slices and ``m n - 1`` switches; context ``i`` finishes at
``(j + 1) q + j c`` with ``j = (m - 1) n + i`` its last slice (one context alone never
switches). A context that faults loses
its remaining commands; the others run on.

Lab: 29_driver_and_command_submission
Reference: NVIDIA CUDA Driver API, Context Management; Linux Documentation/driver-api/vfio.rst
(IOMMU groups, DMA mapping); NVIDIA, "GPU Pro Tip: CUDA 7 Streams Simplify Concurrency" and
the MPS documentation (time-slicing vs sharing).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from minitorch.driver.device import CostModel, DeviceMemory
from minitorch.driver.dma import Descriptor, DmaEngine, DmaError, HostBuffer

__all__ = [
    "Command",
    "Context",
    "DmaFault",
    "PageTable",
    "Schedule",
    "TimeSliceScheduler",
]


class DmaFault(DmaError):
    """A context's access outside its address space: rejected, nothing copied."""


class PageTable:
    """Virtual page -> physical address of its frame, for one context."""

    def __init__(self, page_size: int = 4096) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.page_size = page_size
        self.entries: dict[int, int] = {}

    def map(self, vpage: int, paddr: int) -> None:
        self.entries[vpage] = paddr

    def translate(self, vaddr: int, nbytes: int) -> list[tuple[int, int]]:
        """Physical pieces ``(paddr, nbytes)`` of ``[vaddr, vaddr + nbytes)``, or DmaFault."""
        ps, out, v, end = self.page_size, [], vaddr, vaddr + nbytes
        if vaddr < 0 or nbytes < 0:
            raise DmaFault(f"bad range [{vaddr:#x}, +{nbytes})")
        while v < end:
            page, off = divmod(v, ps)
            if page not in self.entries:
                raise DmaFault(f"page {page:#x} (address {v:#x}) is not mapped")
            n = min(ps - off, end - v)
            out.append((self.entries[page] + off, n))
            v += n
        return out


class Context:
    """One context: its page table over shared device memory, its allocations, its faults."""

    def __init__(self, cid: int, memory: DeviceMemory, page_size: int = 4096) -> None:
        self.cid, self.memory = cid, memory
        self.table = PageTable(page_size)
        self.next_vpage = 1  # page 0 stays unmapped: null faults
        self.faults: list[str] = []

    def alloc(self, nbytes: int) -> int:
        """Map fresh physical frames for ``nbytes``; returns the virtual address."""
        ps = self.table.page_size
        vaddr = self.next_vpage * ps
        for _ in range(-(-max(nbytes, 1) // ps)):
            self.table.map(self.next_vpage, self.memory.alloc(ps))
            self.next_vpage += 1
        return vaddr

    def _fault(self, what: str, err: DmaFault) -> DmaFault:
        msg = f"context {self.cid}: {what} outside its address space: {err}"
        self.faults.append(msg)
        return DmaFault(msg)

    def physical_chain(self, chain: Sequence[Descriptor]) -> list[Descriptor]:
        """The chain with device addresses translated (split at page boundaries)."""
        out = []
        for i, d in enumerate(chain):
            try:
                pieces = self.table.translate(d.device, d.nbytes)
            except DmaFault as err:
                span = f"[{d.device:#x}, {d.device + d.nbytes:#x})"
                raise self._fault(f"DMA descriptor {i} {span}", err) from None
            host = d.host
            for paddr, n in pieces:
                out.append(Descriptor(host, paddr, n, d.direction))
                host += n
        return out

    def dma(self, engine: DmaEngine, chain: Sequence[Descriptor], host: HostBuffer) -> float:
        """Run a chain in this context's address space: all of it, or none and a fault."""
        return engine.run(self.physical_chain(chain), host)

    def write(self, vaddr: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        try:
            pieces = self.table.translate(vaddr, raw.size)
        except DmaFault as err:
            raise self._fault(f"write [{vaddr:#x}, +{raw.size})", err) from None
        pos = 0
        for paddr, n in pieces:
            self.memory.write(paddr, raw[pos : pos + n])
            pos += n

    def read(self, vaddr: int, nbytes: int) -> np.ndarray:
        try:
            pieces = self.table.translate(vaddr, nbytes)
        except DmaFault as err:
            raise self._fault(f"read [{vaddr:#x}, +{nbytes})", err) from None
        parts = [self.memory.read(p, n) for p, n in pieces]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)


@dataclass
class Command:
    """One command of a context's stream: engine time, and what it does when it starts."""

    duration_ns: float
    action: Callable[[], object] | None = None
    name: str = ""


@dataclass
class Schedule:
    slices: list[tuple[int, float, float]] = field(default_factory=list)  # (cid, start, end)
    finish_ns: dict[int, float] = field(default_factory=dict)
    faults: dict[int, str] = field(default_factory=dict)
    dropped: dict[int, int] = field(default_factory=dict)  # commands lost to a fault
    switches: int = 0
    makespan_ns: float = 0.0


class TimeSliceScheduler:
    """Round-robin time slicing of the engine between contexts' command streams."""

    def __init__(self, model: CostModel | None = None) -> None:
        self.model = model or CostModel()

    def run(self, streams: dict[int, Sequence[Command]]) -> Schedule:
        q, c = self.model.timeslice_ns, self.model.context_switch_ns
        if q <= 0:
            raise ValueError("timeslice_ns must be positive")
        queues = {cid: deque(cmds) for cid, cmds in streams.items()}
        left = dict.fromkeys(streams, 0.0)  # remaining time of a started command
        started: set[int] = set()
        ready = deque(cid for cid, cmds in queues.items() if cmds)
        out, t, prev = Schedule(), 0.0, None
        for cid in streams:
            if not queues[cid]:
                out.finish_ns[cid] = 0.0
        while ready:
            cid = ready.popleft()
            if prev is not None and prev != cid:
                t += c
                out.switches += 1
            start, budget, queue = t, q, queues[cid]
            while queue and budget > 0:
                if cid not in started:  # the command starts: its action runs now
                    try:
                        if queue[0].action is not None:
                            queue[0].action()
                    except DmaFault as err:
                        out.faults[cid], out.dropped[cid] = str(err), len(queue)
                        queue.clear()
                        break
                    started.add(cid)
                    left[cid] = queue[0].duration_ns
                run = min(left[cid], budget)
                t, budget, left[cid] = t + run, budget - run, left[cid] - run
                if left[cid] == 0:
                    queue.popleft()
                    started.discard(cid)
            out.slices.append((cid, start, t))
            if queue:
                ready.append(cid)
            else:
                out.finish_ns[cid] = t
            prev = cid
        out.makespan_ns = t
        return out
