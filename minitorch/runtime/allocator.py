"""A caching allocator in the manner of PyTorch's CUDA caching allocator, on a simulated device.

Asking the driver for memory (``cudaMalloc``) is slow and synchronises the device, so a
framework asks for big *segments* once and carves tensors out of them itself:

* every request is rounded up to a multiple of 512 B (``round_size``);
* requests of at most 1 MiB come from the **small pool**, whose segments are 2 MiB; larger
  ones from the **large pool**, whose segments are 20 MiB for requests under 10 MiB and the
  request rounded up to 2 MiB otherwise (``size_class``);
* a request takes the **best-fit** free block of its pool (the smallest that fits, lowest
  address on ties) and **splits** it when the rest is worth keeping (at least 512 B in the
  small pool, more than 1 MiB in the large one): the rest stays free, just after it
  (``alloc_block``);
* a freed block **coalesces** with its free neighbours of the same segment (``free_block``);
  blocks of two segments never merge: each segment goes back to the driver whole;
* ``empty_cache()`` returns every wholly free segment to the device.

``malloc``/``free``/``empty_cache`` work on a :class:`CacheState` (the device, the pools, the
live blocks, the counters); :class:`CachingAllocator` wraps them in an object. A pool is a
list of :class:`Block`, sorted by address. :class:`Device` is the driver: it hands
out addresses and counts its calls. :class:`NaiveAllocator` asks it once per request.

Lab: 17_caching_allocator
Paper: PyTorch, c10/cuda/CUDACachingAllocator.cpp (kMinBlockSize 512, kSmallSize 1 MiB,
kSmallBuffer 2 MiB, kLargeBuffer 20 MiB, kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB); Knuth,
TAOCP vol. 1, 2.5 (best fit, boundary-tag coalescing)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Block",
    "CacheState",
    "CachingAllocator",
    "Device",
    "NaiveAllocator",
    "alloc_block",
    "empty_cache",
    "fragmentation",
    "free",
    "free_block",
    "malloc",
    "round_size",
    "size_class",
]

MIN_BLOCK = 512  # every size is a multiple of this
SMALL_SIZE = 1 << 20  # requests <= 1 MiB use the small pool
SMALL_SEGMENT = 2 << 20  # small-pool segments are 2 MiB
LARGE_SEGMENT = 20 << 20  # large requests under MIN_LARGE_ALLOC share 20 MiB segments
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20  # bigger ones get a segment of their own, rounded to 2 MiB


@dataclass(slots=True)
class Block:
    """A piece of a segment: ``size`` bytes at ``addr``, in the segment starting at ``segment``."""

    addr: int
    size: int
    segment: int
    allocated: bool = False


class Device:
    """The driver: ``malloc``/``free`` of whole segments, every call counted.

    Addresses are handed out one after the other (segments touch: only the allocator's own
    bookkeeping keeps them apart). ``reserved`` is what it has handed out and not got back.
    """

    def __init__(self, base: int = 1 << 32) -> None:
        self.next_addr = base
        self.live: dict[int, int] = {}  # addr -> size
        self.mallocs = 0
        self.frees = 0
        self.reserved = 0
        self.peak_reserved = 0

    def malloc(self, nbytes: int) -> int:
        addr = self.next_addr
        self.next_addr += nbytes
        self.live[addr] = nbytes
        self.mallocs += 1
        self.reserved += nbytes
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return addr

    def free(self, addr: int) -> None:
        self.reserved -= self.live.pop(addr)
        self.frees += 1


def round_size(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of 512 (at least 512)."""
    return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)


def size_class(nbytes: int) -> tuple[int, str, int]:
    """``(rounded size, "small" | "large", bytes of a new segment for it)``."""
    size = round_size(nbytes)
    if size <= SMALL_SIZE:
        return size, "small", SMALL_SEGMENT
    if size < MIN_LARGE_ALLOC:
        return size, "large", LARGE_SEGMENT
    return size, "large", -(-size // ROUND_LARGE) * ROUND_LARGE


def alloc_block(pool: list[Block], size: int, small: bool) -> Block | None:
    """Take the best-fit free block of ``pool`` for ``size`` (rounded) bytes, splitting it.

    The rest of a split block becomes a free block right after the taken one (same segment);
    a block is split when the rest is >= 512 B (small pool) or > 1 MiB (large pool).
    Returns the allocated block, or None when no free block is big enough.
    """
    best: int | None = None
    for i, b in enumerate(pool):
        if not b.allocated and b.size >= size and (best is None or b.size < pool[best].size):
            best = i
    if best is None:
        return None
    block = pool[best]
    rest = block.size - size
    if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
        pool.insert(best + 1, Block(block.addr + size, rest, block.segment))
        block.size = size
    block.allocated = True
    return block


def free_block(pool: list[Block], block: Block) -> Block:
    """Mark ``block`` free and merge it with its free neighbours in the same segment."""
    i = next(k for k, b in enumerate(pool) if b is block)
    block.allocated = False
    after = pool[i + 1] if i + 1 < len(pool) else None
    if after is not None and not after.allocated and after.segment == block.segment:
        block.size += after.size
        del pool[i + 1]
    before = pool[i - 1] if i > 0 else None
    if before is not None and not before.allocated and before.segment == block.segment:
        before.size += block.size
        del pool[i]
        return before
    return block


def fragmentation(pool: list[Block]) -> float:
    """``1 - largest free block / free bytes`` of the cached blocks (0 when none is free)."""
    free = [b.size for b in pool if not b.allocated]
    return 0.0 if not free else 1.0 - max(free) / sum(free)


@dataclass(slots=True)
class CacheState:
    """Everything a caching allocator keeps: its device, two pools, the live blocks, counters."""

    device: Any
    pools: dict[str, list[Block]] = field(default_factory=lambda: {"small": [], "large": []})
    live: dict[int, tuple[Block, str]] = field(default_factory=dict)  # addr -> (block, pool)
    allocated: int = 0  # bytes in allocated blocks
    reserved: int = 0  # bytes in segments held from the device
    peak_reserved: int = 0
    device_allocs: int = 0  # device.malloc calls


def malloc(state: CacheState, nbytes: int) -> int:
    """Serve ``nbytes`` from the cache; ask the device for one segment only when nothing fits."""
    size, name, segment = size_class(nbytes)
    pool = state.pools[name]
    block = alloc_block(pool, size, name == "small")
    if block is None:
        addr = state.device.malloc(segment)
        state.device_allocs += 1
        state.reserved += segment
        state.peak_reserved = max(state.peak_reserved, state.reserved)
        at = next((k for k, b in enumerate(pool) if b.addr > addr), len(pool))
        pool.insert(at, Block(addr, segment, addr))
        block = alloc_block(pool, size, name == "small")
        assert block is not None
    state.live[block.addr] = (block, name)
    state.allocated += block.size
    return block.addr


def free(state: CacheState, addr: int) -> None:
    """Return the block at ``addr`` to its pool (coalesced); the device is not told."""
    block, name = state.live.pop(addr)
    state.allocated -= block.size
    free_block(state.pools[name], block)


def empty_cache(state: CacheState) -> int:
    """Give every wholly free segment back to the device; returns the bytes released."""
    released = 0
    for pool in state.pools.values():
        for b in [b for b in pool if not b.allocated and b.addr == b.segment]:
            if all(o is b for o in pool if o.segment == b.segment):
                state.device.free(b.addr)
                pool.remove(b)
                released += b.size
    state.reserved -= released
    return released


class CachingAllocator:
    """The functions above behind an object, with ``torch.cuda.memory_stats``-like stats."""

    def __init__(self, device: Device) -> None:
        self.state = CacheState(device)

    def malloc(self, nbytes: int) -> int:
        return malloc(self.state, nbytes)

    def free(self, addr: int) -> None:
        free(self.state, addr)

    def empty_cache(self) -> int:
        return empty_cache(self.state)

    def blocks(self) -> list[Block]:
        return sorted(self.state.pools["small"] + self.state.pools["large"], key=lambda b: b.addr)

    def stats(self) -> dict[str, float]:
        s = self.state
        return {
            "allocated": s.allocated,
            "reserved": s.reserved,
            "peak_reserved": s.peak_reserved,
            "device_allocs": s.device_allocs,
            "fragmentation": fragmentation(self.blocks()),
        }


class NaiveAllocator:
    """One device allocation per request, freed at once: the baseline without a cache."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.sizes: dict[int, int] = {}
        self.allocated = self.reserved = self.peak_reserved = 0
        self.device_allocs = 0

    def malloc(self, nbytes: int) -> int:
        size = round_size(nbytes)
        addr = self.device.malloc(size)
        self.sizes[addr] = size
        self.device_allocs += 1
        self.allocated += size
        self.reserved += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return addr

    def free(self, addr: int) -> None:
        size = self.sizes.pop(addr)
        self.device.free(addr)
        self.allocated -= size
        self.reserved -= size

    def empty_cache(self) -> int:
        return 0

    def stats(self) -> dict[str, float]:
        return {
            "allocated": self.allocated,
            "reserved": self.reserved,
            "peak_reserved": self.peak_reserved,
            "device_allocs": self.device_allocs,
            "fragmentation": 0.0,
        }
