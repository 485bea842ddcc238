"""The simulated PCIe accelerator: its cost model, its BAR of MMIO registers, its memory.

A PCIe device shows the host a **BAR** (base address register) window: Linux maps it
(``/sys/bus/pci/devices/*/resource0``, or through VFIO for a user-space driver) and the CPU
reads and writes the device's registers with plain loads and stores (**MMIO**). A write is
*posted* (the CPU does not wait): ``t_w = mmio_write_ns``; a read is a round trip over the
link: ``t_r = mmio_read_ns``, several times dearer, which is why drivers poll host memory the
device writes into, not device registers. :class:`Bar` holds the registers of
:data:`REGISTERS` (a GPU channel's doorbell and ring pointers, status, interrupt mask) and
counts every access and its time.

Device memory (HBM) is a flat byte array with its own allocator, :class:`DeviceMemory`:
first fit over a free list sorted by address, blocks aligned to ``alignment`` bytes and
coalesced with their free neighbours on free (``cuMemAlloc`` / ``cuMemFree``). Every access is
bounds-checked: an address outside the memory raises :class:`DeviceMemoryError`.

:class:`CostModel` gathers every constant of the package in one frozen dataclass, each with
its default documented. A transfer of ``n`` bytes in ``d`` descriptors costs
``d * dma_setup_ns + n / pcie_gbps`` ns (GB/s is bytes per ns).

    bar = Bar(CostModel())
    bar.write(DOORBELL, 5)          # posted write: 150 ns of CPU time, counted
    mem = DeviceMemory(1 << 20)
    a = mem.alloc(1000)             # 0; the next block starts at 1024 (alignment 256)

Lab: 29_driver_and_command_submission
Reference: PCI Express Base Specification 4.0 (BARs, posted writes, MSI-X); Linux
Documentation/driver-api/vfio.rst; NVIDIA CUDA Driver API (cuMemAlloc, cuMemcpyHtoD).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DOORBELL",
    "IRQ_MASK",
    "REGISTERS",
    "RING_HEAD",
    "RING_TAIL",
    "STATUS",
    "Bar",
    "CostModel",
    "DeviceMemory",
    "DeviceMemoryError",
]


@dataclass(frozen=True)
class CostModel:
    """Every time constant of the simulated device and its host, in ns (bandwidths in GB/s,
    which are bytes per ns). The defaults are orders of magnitude of a PCIe Gen4 x16 GPU."""

    pcie_gbps: float = 25.0  # effective PCIe Gen4 x16 DMA bandwidth (32 GB/s raw per way)
    host_copy_gbps: float = 10.0  # CPU memcpy, pageable buffer -> pinned staging buffer
    staging_bytes: int = 1 << 20  # the driver's pinned staging chunk for pageable copies
    dma_setup_ns: float = 500.0  # per descriptor: fetch it, start the engine, TLP overhead
    mmio_write_ns: float = 150.0  # a posted MMIO write (a doorbell), CPU time
    mmio_read_ns: float = 1000.0  # a non-posted MMIO read: a round trip over the link
    interrupt_ns: float = 5000.0  # MSI-X raised -> the waiting thread runs again
    irq_cpu_ns: float = 2000.0  # CPU time of one interrupt: handler, wake-up, switch
    poll_ns: float = 100.0  # one poll of a completion entry in host memory (a cache line)
    launch_cpu_ns: float = 2000.0  # driver CPU work per cuLaunchKernel (checks, packing)
    graph_launch_cpu_ns: float = 2500.0  # CPU work of one cuGraphLaunch, any graph size
    cmd_fetch_ns: float = 300.0  # the device fetches and decodes one command from the ring
    graph_node_ns: float = 100.0  # per kernel of a replayed graph (prebuilt, prefetched)
    timeslice_ns: float = 100_000.0  # the scheduler's slice per context
    context_switch_ns: float = 20_000.0  # save one context's state, load the next

    def transfer_ns(self, nbytes: int, descriptors: int = 1) -> float:
        """DMA time over the link: ``descriptors * dma_setup_ns + nbytes / pcie_gbps``."""
        return descriptors * self.dma_setup_ns + nbytes / self.pcie_gbps


# register offsets in BAR0 (8-byte registers)
DOORBELL = 0x00  # the producer writes its new ring tail here: "there is work up to here"
RING_HEAD = 0x08  # the device writes how far it has consumed the ring
RING_TAIL = 0x10  # the last tail the device saw (a copy of the doorbell value)
STATUS = 0x18  # bit 0 busy, bit 1 error
IRQ_MASK = 0x20  # bit 0 set: completion interrupts masked (the host polls instead)
REGISTERS = {
    "DOORBELL": DOORBELL,
    "RING_HEAD": RING_HEAD,
    "RING_TAIL": RING_TAIL,
    "STATUS": STATUS,
    "IRQ_MASK": IRQ_MASK,
}


@dataclass
class Bar:
    """BAR0: the registers, the host's MMIO accesses counted and timed, write hooks."""

    model: CostModel = field(default_factory=CostModel)
    regs: dict[int, int] = field(default_factory=lambda: dict.fromkeys(REGISTERS.values(), 0))
    writes: int = 0
    reads: int = 0
    cpu_ns: float = 0.0  # host CPU time spent in MMIO
    hooks: dict[int, Callable[[int], None]] = field(default_factory=dict)

    def _check(self, offset: int) -> None:
        if offset not in self.regs:
            raise KeyError(f"no register at BAR offset {offset:#x}")

    def write(self, offset: int, value: int) -> None:
        """A posted MMIO write from the host; runs the device's hook for that register."""
        self._check(offset)
        self.regs[offset] = int(value)
        self.writes += 1
        self.cpu_ns += self.model.mmio_write_ns
        if offset in self.hooks:
            self.hooks[offset](int(value))

    def read(self, offset: int) -> int:
        """A non-posted MMIO read from the host (a round trip)."""
        self._check(offset)
        self.reads += 1
        self.cpu_ns += self.model.mmio_read_ns
        return self.regs[offset]

    def device_set(self, offset: int, value: int) -> None:
        """The device updating its own register (no host cost)."""
        self._check(offset)
        self.regs[offset] = int(value)


class DeviceMemoryError(RuntimeError):
    """An access outside device memory, a double free, or memory exhausted."""


class DeviceMemory:
    """Device memory: a byte array, a first-fit allocator with alignment and coalescing."""

    def __init__(self, size: int, alignment: int = 256) -> None:
        if size < 1 or alignment < 1 or alignment & (alignment - 1):
            raise ValueError("size must be positive and alignment a power of two")
        self.size, self.alignment = size, alignment
        self.data = np.zeros(size, dtype=np.uint8)
        self.free_list: list[tuple[int, int]] = [(0, size)]  # (addr, length), by address
        self.blocks: dict[int, int] = {}  # addr -> length of each live allocation

    def alloc(self, nbytes: int) -> int:
        """The lowest free address with room for ``nbytes`` rounded up to the alignment."""
        need = -(-max(nbytes, 1) // self.alignment) * self.alignment
        for i, (addr, length) in enumerate(self.free_list):
            if length >= need:
                rest = (addr + need, length - need)
                self.free_list[i : i + 1] = [rest] if rest[1] else []
                self.blocks[addr] = need
                return addr
        raise DeviceMemoryError(f"out of device memory: {nbytes} bytes requested")

    def free(self, addr: int) -> None:
        """Return a block; merge it with free neighbours."""
        if addr not in self.blocks:
            raise DeviceMemoryError(f"free of {addr:#x}, which is not an allocation")
        self.free_list.append((addr, self.blocks.pop(addr)))
        self.free_list.sort()
        merged: list[tuple[int, int]] = []
        for a, n in self.free_list:
            if merged and merged[-1][0] + merged[-1][1] == a:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((a, n))
        self.free_list = merged

    def bytes_free(self) -> int:
        return sum(n for _, n in self.free_list)

    def _range(self, addr: int, nbytes: int) -> slice:
        if addr < 0 or nbytes < 0 or addr + nbytes > self.size:
            raise DeviceMemoryError(
                f"device access [{addr:#x}, {addr + nbytes:#x}) outside memory of {self.size:#x}"
            )
        return slice(addr, addr + nbytes)

    def write(self, addr: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self.data[self._range(addr, raw.size)] = raw

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        return self.data[self._range(addr, nbytes)].copy()
