"""DMA: descriptors, gather chains for strided tensors, pinned vs pageable host buffers.

The device's copy engine moves bytes between host and device memory on its own; the driver
only hands it a **descriptor chain**, each descriptor ``(host offset, device address, bytes,
direction)`` one contiguous piece (a scatter-gather list, as ``cuMemcpy2D`` and a NIC's
``sg_list`` use). A tensor that is not contiguous (a transposed or sliced view) is a set of
contiguous byte **runs**; :func:`tensor_runs` finds them by collapsing trailing dimensions
whose stride equals the run so far (``strides[d] == itemsize * prod(shape[d+1:])``), then
merging runs that happen to touch. :func:`gather_chain` turns runs into descriptors that
pack the tensor contiguously on the device, splitting runs longer than ``max_bytes``.

Costs (``t_s = dma_setup_ns``, ``B = pcie_gbps``, ``B_h = host_copy_gbps``, ``S =
staging_bytes``) for ``N`` bytes in ``d`` descriptors:

* **pinned** (page-locked, ``cudaHostAlloc``): the engine reads host memory directly,
  ``t_pinned = d * t_s + N / B``;
* **pageable** (plain ``malloc``): the pages may move, so the driver first copies (and
  gathers) into a pinned staging buffer, then DMAs contiguous chunks of ``S`` bytes,
  ``t_pageable = N / B_h + ceil(N / S) * t_s + N / B`` (staging not overlapped with the
  DMA here; real drivers pipeline the chunks).

Pageable wins only for a tensor so scattered that ``d > N / (B_h t_s) + ceil(N / S)``
(:func:`breakeven_descriptors`): there the CPU's gather beats per-descriptor setup.

    a = np.arange(64, dtype=np.float32).reshape(8, 8)[:, :4]   # 8 runs of 16 bytes
    chain = gather_chain(tensor_runs(a.shape, a.strides, a.itemsize), device_addr=0)
    DmaEngine(CostModel(), mem).run(chain, HostBuffer(a.base, pinned=True))

Lab: 29_driver_and_command_submission
Reference: NVIDIA, "CUDA C++ Best Practices Guide", section 10.1.1 (pinned memory); Linux
Documentation/core-api/dma-api.rst (scatterlists, dma_map_sg).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from minitorch.driver.device import CostModel, DeviceMemory

__all__ = [
    "D2H",
    "H2D",
    "Descriptor",
    "DmaEngine",
    "DmaError",
    "HostBuffer",
    "array_runs",
    "breakeven_descriptors",
    "gather_chain",
    "pageable_ns",
    "pinned_ns",
    "tensor_runs",
]

H2D, D2H = "h2d", "d2h"


class DmaError(RuntimeError):
    """A descriptor outside its host buffer or device memory; nothing of the chain ran."""


@dataclass(frozen=True)
class Descriptor:
    """One contiguous piece of a transfer."""

    host: int  # byte offset in the host buffer
    device: int  # device address
    nbytes: int
    direction: str = H2D


class HostBuffer:
    """A host buffer as raw bytes, pinned (page-locked) or pageable."""

    def __init__(self, array: np.ndarray, pinned: bool) -> None:
        if not array.flags.c_contiguous:
            raise ValueError("a host buffer is a contiguous allocation (pass the view's base)")
        self.data = array.reshape(-1).view(np.uint8)
        self.pinned = pinned


def tensor_runs(
    shape: Sequence[int], strides: Sequence[int], itemsize: int, offset: int = 0
) -> list[tuple[int, int]]:
    """The contiguous byte runs ``(start, nbytes)`` of a strided tensor, in C order."""
    if any(n == 0 for n in shape):
        return []
    dims = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    run = itemsize
    while dims and dims[-1][1] == run:  # the innermost dimensions are one run
        run *= dims[-1][0]
        dims.pop()
    out: list[tuple[int, int]] = []
    for idx in np.ndindex(*(n for n, _ in dims)):
        start = offset + sum(i * s for i, (_, s) in zip(idx, dims, strict=True))
        if out and out[-1][0] + out[-1][1] == start:  # touches the previous run
            out[-1] = (out[-1][0], out[-1][1] + run)
        else:
            out.append((start, run))
    return out


def array_runs(view: np.ndarray, base: np.ndarray) -> list[tuple[int, int]]:
    """Runs of ``view`` as byte offsets into the contiguous buffer ``base`` it views."""
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return tensor_runs(view.shape, view.strides, view.itemsize, offset)


def gather_chain(
    runs: Sequence[tuple[int, int]],
    device_addr: int,
    direction: str = H2D,
    max_bytes: int | None = None,
) -> list[Descriptor]:
    """Descriptors packing the runs contiguously from ``device_addr`` (pieces <= max_bytes)."""
    chain, dev = [], device_addr
    for start, n in runs:
        step = n if max_bytes is None else max_bytes
        for off in range(0, n, step):
            piece = min(step, n - off)
            chain.append(Descriptor(start + off, dev, piece, direction))
            dev += piece
    return chain


def pinned_ns(nbytes: int, descriptors: int, model: CostModel) -> float:
    """``d * t_s + N / B``: the engine reads the pinned buffer directly."""
    return model.transfer_ns(nbytes, descriptors)


def pageable_ns(nbytes: int, model: CostModel) -> float:
    """``N / B_h + ceil(N / S) * t_s + N / B``: a CPU copy into staging, then chunks."""
    chunks = math.ceil(nbytes / model.staging_bytes)
    return nbytes / model.host_copy_gbps + model.transfer_ns(nbytes, chunks)


def breakeven_descriptors(nbytes: int, model: CostModel) -> float:
    """The descriptor count above which a pageable copy beats a pinned one."""
    stage = nbytes / model.host_copy_gbps / model.dma_setup_ns
    return stage + math.ceil(nbytes / model.staging_bytes)


class DmaEngine:
    """The copy engine: validates a whole chain, then moves its bytes; counts and times."""

    def __init__(self, model: CostModel, memory: DeviceMemory) -> None:
        self.model, self.memory = model, memory
        self.bytes = self.descriptors = 0  # descriptors the engine itself processed
        self.staged_bytes = 0  # bytes the CPU copied into pinned staging (pageable)
        self.busy_ns = 0.0

    def validate(self, chain: Sequence[Descriptor], host: HostBuffer) -> None:
        for i, d in enumerate(chain):
            if d.direction not in (H2D, D2H) or d.nbytes < 0:
                raise DmaError(f"descriptor {i}: bad direction or length: {d}")
            if d.host < 0 or d.host + d.nbytes > host.data.size:
                raise DmaError(
                    f"descriptor {i}: host bytes [{d.host}, {d.host + d.nbytes}) outside the "
                    f"{host.data.size}-byte host buffer"
                )
            if d.device < 0 or d.device + d.nbytes > self.memory.size:
                raise DmaError(
                    f"descriptor {i}: device bytes [{d.device:#x}, {d.device + d.nbytes:#x}) "
                    f"outside device memory of {self.memory.size:#x}"
                )

    def run(self, chain: Sequence[Descriptor], host: HostBuffer) -> float:
        """Execute the chain (all of it or, on a bad descriptor, none); its time in ns."""
        self.validate(chain, host)
        for d in chain:
            span = slice(d.host, d.host + d.nbytes)
            if d.direction == H2D:
                self.memory.write(d.device, host.data[span])
            else:
                host.data[span] = self.memory.read(d.device, d.nbytes)
        nbytes = sum(d.nbytes for d in chain)
        if host.pinned:
            issued, t = len(chain), pinned_ns(nbytes, len(chain), self.model)
        else:
            issued, t = (
                math.ceil(nbytes / self.model.staging_bytes),
                pageable_ns(nbytes, self.model),
            )
            self.staged_bytes += nbytes
        self.bytes += nbytes
        self.descriptors += issued
        self.busy_ns += t
        return t
