"""A SIMT machine in numpy: a grid of blocks of threads, warps of 32, shared memory, barriers.

A kernel is a plain Python function ``kernel(ctx, *args)``. The simulator calls it **once
per block**, with every thread of the block running in lockstep: ``ctx.threadIdx.x`` is a
numpy array with one entry per thread, so one line of the kernel is one instruction issued
by every warp of the block (as a GPU runs it, minus the scheduling):

    def vector_add(ctx, a, b, c, n):
        i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x   # (threads,) global index
        ok = i < n                                              # the bounds guard, a lane mask
        ctx.store(c, i, ctx.load(a, i, ok) + ctx.load(b, i, ok), ok)

    stats = launch(vector_add, grid=(n + 255) // 256, block=256, args=(a, b, c, n))

``if`` on a per-thread condition becomes a *mask*: lanes outside it issue nothing, and a
warp with no active lane skips the instruction (that is what divergence costs). Every
``load``/``store`` is counted per warp: global segments touched (coalescing) and shared
bank conflicts, in nvprof's names (``gld_transactions``, ``shared_load_transactions``...).

Barriers: ``ctx.syncthreads()`` ends a *phase*. Lockstep execution would hide a missing
barrier, so shared memory checks races the way ``compute-sanitizer --tool racecheck``
does: a thread that reads or writes a word another thread wrote (or read) in the same
phase raises :class:`RaceError`.

Lab: 07_gpu_programming_model
Paper: NVIDIA, *CUDA C++ Programming Guide*, "Thread Hierarchy", "Shared Memory",
"SIMT Architecture"; Lindholm et al. 2008, *NVIDIA Tesla: A Unified Graphics and Computing
Architecture* (IEEE Micro).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from minitorch.kernels.simt_memory import RaceError, bank_degrees, race_check, warp_segments

__all__ = [
    "DeviceArray",
    "Dim3",
    "KernelStats",
    "RaceError",
    "SharedArray",
    "ThreadContext",
    "launch",
    "to_device",
]

Index = Any  # an int array (threads,), a scalar, or a tuple of them (one per axis)


@dataclass(slots=True, frozen=True)
class Dim3:
    """``x``, ``y``, ``z`` of a grid or block (ints) or of ``threadIdx`` (arrays)."""

    x: Any
    y: Any = 1
    z: Any = 1

    @classmethod
    def of(cls, v: int | Sequence[int] | Dim3) -> Dim3:
        if isinstance(v, Dim3):
            return v
        return cls(v) if isinstance(v, int) else cls(*(int(d) for d in v))

    def size(self) -> int:
        return int(self.x * self.y * self.z)


@dataclass(slots=True)
class KernelStats:
    """Counters of one launch. Transactions: segments (global) or wavefronts (shared)."""

    gld_requests: int = 0  # warp load instructions to global memory
    gld_transactions: int = 0  # segments they touched
    gst_requests: int = 0
    gst_transactions: int = 0
    shared_load_requests: int = 0
    shared_load_transactions: int = 0  # wavefronts = sum of degrees of conflict
    shared_store_requests: int = 0
    shared_store_transactions: int = 0
    barriers: int = 0  # syncthreads executed, per block, summed
    shared_bytes: int = 0  # per block, the largest
    blocks: int = 0

    @property
    def bank_conflicts(self) -> int:
        """Extra wavefronts caused by conflicts (0 when every access was conflict-free)."""
        loads = self.shared_load_transactions - self.shared_load_requests
        return loads + self.shared_store_transactions - self.shared_store_requests

    @property
    def shared_transactions(self) -> int:
        return self.shared_load_transactions + self.shared_store_transactions

    @property
    def global_transactions(self) -> int:
        return self.gld_transactions + self.gst_transactions

    def as_dict(self) -> dict[str, int]:
        out = {f.name: int(getattr(self, f.name)) for f in fields(self)}
        return out | {"bank_conflicts": self.bank_conflicts}  # derived counters last


@dataclass(slots=True, eq=False)
class DeviceArray:
    """An array in global memory (address 0 is aligned to every segment size).

    ``reads``/``writes`` mark the elements some thread loaded or stored, so a grader can
    tell work done by the kernel from work done around it. The contents are private: a
    kernel reaches them only through ``ctx.load``/``ctx.store``, and ``to_numpy`` (a copy to
    the host) raises while a launch that was passed the array is running.
    """

    _data: np.ndarray  # flat, C order
    shape: tuple[int, ...]
    reads: np.ndarray = field(init=False)
    writes: np.ndarray = field(init=False)
    _in_kernel: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.reads = np.zeros(self._data.size, dtype=bool)
        self.writes = np.zeros(self._data.size, dtype=bool)

    def to_numpy(self) -> np.ndarray:
        """A host copy of the array (after the kernel: a kernel reads with ctx.load)."""
        if self._in_kernel:
            raise RuntimeError("a kernel cannot copy device memory to the host; use ctx.load")
        return self._data.reshape(self.shape).copy()


def to_device(x: np.ndarray) -> DeviceArray:
    """Copy a host array into (simulated) global memory."""
    x = np.ascontiguousarray(x)
    return DeviceArray(x.reshape(-1).copy(), tuple(x.shape))


@dataclass(slots=True, eq=False)
class SharedArray:
    """A block's shared-memory array at byte ``offset``, with per-phase race bookkeeping."""

    _data: np.ndarray
    shape: tuple[int, ...]
    offset: int
    writer: np.ndarray  # thread that wrote each element in this phase, -1 none
    reader: np.ndarray  # thread that read it in this phase, -1 none, -2 several

    def new_phase(self) -> None:
        self.writer[:] = -1
        self.reader[:] = -1


def _flat(
    arr: DeviceArray | SharedArray, index: Index, active: np.ndarray, what: str
) -> np.ndarray:
    """Flat element index per thread; raise IndexError when an active lane is out of bounds."""
    parts = index if isinstance(index, tuple) else (index,)
    if len(parts) != len(arr.shape):
        raise IndexError(f"{what}: {len(parts)} indices for an array of shape {arr.shape}")
    flat = np.zeros(active.size, dtype=np.int64)
    for part, dim in zip(parts, arr.shape, strict=True):
        p = np.broadcast_to(np.asarray(part, dtype=np.int64), active.shape)
        bad = active & ((p < 0) | (p >= dim))
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            raise IndexError(
                f"{what}: thread {t} indexed {int(p[t])} on an axis of size {dim} (shape "
                f"{arr.shape}); guard it with a mask"
            )
        flat = flat * dim + np.where(active, p, 0)
    return flat


class ThreadContext:
    """What a kernel sees: its indices, shared memory, barriers, loads and stores."""

    def __init__(
        self,
        block_idx: Dim3,
        block: Dim3,
        grid: Dim3,
        stats: KernelStats,
        segment: int,
        shared_limit: int,
    ) -> None:
        lin = np.arange(block.size())
        self.threadIdx = Dim3(lin % block.x, lin // block.x % block.y, lin // (block.x * block.y))
        self.blockIdx, self.blockDim, self.gridDim = block_idx, block, grid
        self.tid = lin  # linear thread id: lane tid % 32 of warp tid // 32
        self._stats, self._segment, self._limit = stats, segment, shared_limit
        self._shared: list[SharedArray] = []
        self._used = 0

    def _mask(self, mask: Any) -> np.ndarray:
        if mask is None:
            return np.ones(self.tid.size, dtype=bool)
        return np.broadcast_to(np.asarray(mask, dtype=bool), self.tid.shape)

    def shared(self, shape: int | tuple[int, ...], dtype: Any = np.float32) -> SharedArray:
        """Allocate a shared array for this block (``__shared__ float tile[32][33]``)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        data = np.zeros(shape, dtype=dtype).reshape(-1)
        if self._used + data.nbytes > self._limit:
            raise MemoryError(
                f"shared memory: {self._used + data.nbytes} bytes per block > {self._limit}"
            )
        minus = np.full(data.size, -1, dtype=np.int64)
        arr = SharedArray(data, shape, self._used, minus, minus.copy())
        self._used += -(-data.nbytes // 4) * 4  # next array starts on a word
        self._stats.shared_bytes = max(self._stats.shared_bytes, self._used)
        self._shared.append(arr)
        return arr

    def syncthreads(self) -> None:
        """``__syncthreads()``: every thread of the block waits here; a new phase begins."""
        self._stats.barriers += 1
        for arr in self._shared:
            arr.new_phase()

    def load(self, arr: DeviceArray | SharedArray, index: Index, mask: Any = None) -> np.ndarray:
        """Each active thread reads ``arr[index]``; inactive lanes get 0. Counted per warp."""
        active = self._mask(mask)
        flat = _flat(arr, index, active, "load")
        self._count(arr, flat, active, store=False)
        return np.where(active, arr._data[flat], arr._data.dtype.type(0))

    def store(
        self, arr: DeviceArray | SharedArray, index: Index, value: Any, mask: Any = None
    ) -> None:
        """Each active thread writes its ``value`` to ``arr[index]``. Counted per warp."""
        active = self._mask(mask)
        flat = _flat(arr, index, active, "store")
        self._count(arr, flat, active, store=True)
        value = np.broadcast_to(np.asarray(value), self.tid.shape)
        arr._data[flat[active]] = value[active]

    def _count(
        self, arr: DeviceArray | SharedArray, flat: np.ndarray, active: np.ndarray, store: bool
    ) -> None:
        s, item = self._stats, arr._data.itemsize
        if isinstance(arr, DeviceArray):
            per_warp = warp_segments(flat * item, active, self._segment)
            (arr.writes if store else arr.reads)[flat[active]] = True
            if store:
                s.gst_requests += int(np.count_nonzero(per_warp))
                s.gst_transactions += int(per_warp.sum())
            else:
                s.gld_requests += int(np.count_nonzero(per_warp))
                s.gld_transactions += int(per_warp.sum())
            return
        race_check(arr.writer, arr.reader, flat[active], self.tid[active], store)
        per_warp = bank_degrees(arr.offset + flat * item, active)
        if store:
            s.shared_store_requests += int(np.count_nonzero(per_warp))
            s.shared_store_transactions += int(per_warp.sum())
        else:
            s.shared_load_requests += int(np.count_nonzero(per_warp))
            s.shared_load_transactions += int(per_warp.sum())


def launch(
    kernel: Callable[..., None],
    grid: int | Sequence[int] | Dim3,
    block: int | Sequence[int] | Dim3,
    args: Sequence[Any] = (),
    *,
    segment: int = 32,
    shared_limit: int = 48 * 1024,
    max_threads: int = 1024,
) -> KernelStats:
    """Run ``kernel(ctx, *args)`` on every block of ``grid`` (x fastest); return its counters.

    ``segment``: bytes per global transaction (32: sectors; 128: L1 cache lines).
    ``shared_limit``: bytes of shared memory a block may allocate (48 KiB, CUDA's default).
    """
    g, b = Dim3.of(grid), Dim3.of(block)
    if not 0 < b.size() <= max_threads:
        raise ValueError(f"a block has 1..{max_threads} threads, got {b.size()}")
    stats = KernelStats()
    arrays = [a for a in args if isinstance(a, DeviceArray)]
    for arr in arrays:
        arr._in_kernel = True
    try:
        for bz in range(g.z):
            for by in range(g.y):
                for bx in range(g.x):
                    ctx = ThreadContext(Dim3(bx, by, bz), b, g, stats, segment, shared_limit)
                    kernel(ctx, *args)
                    stats.blocks += 1
    finally:
        for arr in arrays:
            arr._in_kernel = False
    return stats
