"""The chip: device memory as numpy buffers behind integer handles, with its own accounting.

    chip = Chip("chip0", capacity=1 << 30)
    h = chip.upload(np.ones((4, 4), np.float32))   # host -> chip, 64 bytes counted
    out = chip.download(h)                         # chip -> host, 64 bytes counted
    chip.free(h); chip.stats()                     # live, peak, allocs, h2d, d2h bytes

A backend never hands the framework a pointer: it hands out *handles* (here small integers)
that name device buffers, as a driver's allocation API does. The allocator rounds every
request up to ``alignment`` bytes (real allocators round to 256 or 512) and keeps the bytes
live and their peak; ``capacity`` makes an over-full chip raise :class:`OutOfChipMemory` as an
out-of-memory error does. Copies across the host link are counted in bytes in each
direction, so a fallback that bounces a tensor to the CPU and back shows in the figures.
Computing on the chip (:meth:`Chip.adopt`: a kernel's result becomes a new buffer) moves
nothing across the link.

:class:`Storage` owns one handle and frees it when the last tensor viewing it is gone (a
``weakref.finalize``), so ``bytes_live`` follows Python's lifetimes as a caching allocator's
"allocated" figure follows tensors.

Lab: 31_pytorch_backend
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Chip", "OutOfChipMemory", "Storage", "default_chip"]


class OutOfChipMemory(MemoryError):
    """An allocation that does not fit in what is left of the chip's capacity."""


@dataclass
class Chip:
    """A device with its own memory: buffers by handle, an allocator and link counters."""

    name: str = "chip0"
    capacity: int = 1 << 32  # bytes
    alignment: int = 256
    bytes_live: int = 0
    peak: int = 0
    allocs: int = 0
    h2d_bytes: int = 0  # host -> chip
    d2h_bytes: int = 0  # chip -> host
    h2d_copies: int = 0
    d2h_copies: int = 0
    _buffers: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _sizes: dict[int, int] = field(default_factory=dict, repr=False)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)

    def rounded(self, nbytes: int) -> int:
        """``nbytes`` rounded up to the allocator's alignment (at least one unit)."""
        units = max(1, -(-int(nbytes) // self.alignment))
        return units * self.alignment

    def _take(self, array: np.ndarray) -> int:
        size = self.rounded(array.nbytes)
        if self.bytes_live + size > self.capacity:
            raise OutOfChipMemory(
                f"{self.name}: {size} bytes asked, {self.capacity - self.bytes_live} of "
                f"{self.capacity} free"
            )
        handle = next(self._ids)
        self._buffers[handle], self._sizes[handle] = array, size
        self.bytes_live += size
        self.peak = max(self.peak, self.bytes_live)
        self.allocs += 1
        return handle

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype | type | str) -> int:
        """A fresh zeroed buffer of ``shape`` and ``dtype``; its handle."""
        return self._take(np.zeros(shape, dtype))

    def adopt(self, array: np.ndarray) -> int:
        """A kernel's result (computed on the chip) as a new buffer; nothing crosses the link."""
        return self._take(np.ascontiguousarray(array))

    def upload(self, host: np.ndarray) -> int:
        """Copy a host array onto the chip (counted host -> chip); its handle."""
        data = np.array(host, copy=True, order="C")
        self.h2d_bytes += data.nbytes
        self.h2d_copies += 1
        return self._take(data)

    def array(self, handle: int) -> np.ndarray:
        """The chip-side array of ``handle`` (kernels read and write it in place)."""
        try:
            return self._buffers[handle]
        except KeyError:
            raise KeyError(f"{self.name}: no buffer {handle} (freed or never allocated)") from None

    def download(self, handle: int, view: np.ndarray | None = None) -> np.ndarray:
        """Copy a buffer (or a view into it) to a fresh host array (counted chip -> host)."""
        src = self.array(handle) if view is None else view
        out = np.array(src, copy=True, order="C")
        self.d2h_bytes += out.nbytes
        self.d2h_copies += 1
        return out

    def free(self, handle: int) -> None:
        """Give a buffer back (a second free of the same handle is an error)."""
        if handle not in self._buffers:
            raise KeyError(f"{self.name}: double free of buffer {handle}")
        del self._buffers[handle]
        self.bytes_live -= self._sizes.pop(handle)

    def live_handles(self) -> list[int]:
        """The handles allocated and not yet freed."""
        return sorted(self._buffers)

    def reset_counters(self) -> None:
        """Zero the link counters and set the peak to what is live now."""
        self.h2d_bytes = self.d2h_bytes = self.h2d_copies = self.d2h_copies = 0
        self.peak = self.bytes_live

    def stats(self) -> dict[str, int]:
        """Memory and link figures: live, peak, allocs, buffers, h2d/d2h bytes and copies."""
        return {
            "bytes_live": self.bytes_live,
            "peak": self.peak,
            "allocs": self.allocs,
            "buffers": len(self._buffers),
            "h2d_bytes": self.h2d_bytes,
            "d2h_bytes": self.d2h_bytes,
            "h2d_copies": self.h2d_copies,
            "d2h_copies": self.d2h_copies,
        }


def _release(chip: Chip, handle: int) -> None:
    if handle in chip._buffers:
        chip.free(handle)


class Storage:
    """One chip buffer owned by the tensors that view it; freed with the last of them."""

    __slots__ = ("__weakref__", "chip", "handle")

    def __init__(self, chip: Chip, handle: int) -> None:
        self.chip, self.handle = chip, handle
        weakref.finalize(self, _release, chip, handle)

    @property
    def array(self) -> np.ndarray:
        """The whole buffer as a numpy array."""
        return self.chip.array(self.handle)


_DEFAULT: list[Chip] = []


def default_chip() -> Chip:
    """The process's chip (created on first use)."""
    if not _DEFAULT:
        _DEFAULT.append(Chip())
    return _DEFAULT[0]
