"""Grader of exercise 29.2: the gather chain of a strided tensor, and what a copy costs.

``dma_chain(shape, strides, itemsize, offset, device_addr, max_bytes)`` must return the
descriptors ``(host, device, nbytes)`` of the plain element loop of ``_truth`` (maximal runs
in C order, packed from ``device_addr``, cut into pieces of at most ``max_bytes`` from the
start of each run): the chain's bytes and descriptor count follow from it. ``copy_ns(nbytes,
descriptors, pinned, model)`` must give the closed forms of a pinned and a pageable copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab29._truth import (
    chain_truth,
    copy_truth,
    element_offsets,
    pack,
    runs_by_element,
)
from a2s.checks.table import Table
from minitorch.driver.device import CostModel

__all__ = ["check_dma"]

_REF = "minitorch.driver.dma"


def _view(shape: tuple[int, ...], index: tuple[Any, ...], itemsize: int = 4) -> tuple:
    """(shape, strides, itemsize, offset) of ``np.empty(shape)[index]``, in bytes."""
    base = np.empty(shape, dtype=f"V{itemsize}")
    v = base[index]
    off = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return (tuple(v.shape), tuple(v.strides), itemsize, off)


_NAMED = [
    ("a contiguous (4, 8) float32 tensor: one descriptor", (*_view((4, 8), ()), 0, None)),
    ("columns 0..3 of an (8, 8) float32: 8 runs of 16 B", (*_view((8, 8), np.s_[:, :4]), 0, None)),
    ("a transposed (6, 4) float32: every element its own run", ((4, 6), (4, 16), 4, 0, 0, None)),
    (
        "rows 2..5 of a (10, 16) float32: one run at offset 128",
        (*_view((10, 16), (slice(2, 6),)), 4096, None),
    ),
    ("a 1 KiB contiguous run split into 256 B pieces", ((256,), (4,), 4, 0, 0, 256)),
    (
        "every other row of a (6, 5) float64, 24 B pieces",
        (*_view((6, 5), (slice(None, None, 2),), 8), 64, 24),
    ),
    ("a (3, 1, 4) slice with a length-1 axis", (*_view((3, 2, 4), np.s_[:, 1:2, :]), 0, None)),
    ("an empty tensor: no descriptor", ((0, 4), (16, 4), 4, 0, 0, None)),
]


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    ndim = int(g.integers(1, 4))
    full = tuple(int(v) for v in g.integers(1, 7, ndim))
    index = tuple(
        slice(int(g.integers(0, n)), n, int(g.integers(1, 3))) if g.random() < 0.7 else slice(None)
        for n in full
    )
    item = int(g.choice([1, 2, 4, 8]))
    shape, strides, itemsize, off = _view(full, index, item)
    if ndim > 1 and g.random() < 0.4:  # a transposed view
        shape, strides = shape[::-1], strides[::-1]
    dev = int(g.integers(0, 64)) * 256
    mx = None if g.random() < 0.5 else int(g.integers(1, 5)) * itemsize
    return (
        f"view {shape} strides {strides} of {itemsize}-byte items, max_bytes {mx}",
        (shape, strides, itemsize, off, dev, mx),
    )


def _per_element(shape, strides, itemsize, offset, dev, mx):  # type: ignore[no-untyped-def]
    return pack([(a, itemsize) for a in element_offsets(shape, strides, offset)], dev, mx)


def _unsplit(shape, strides, itemsize, offset, dev, mx):  # type: ignore[no-untyped-def]
    return pack(runs_by_element(shape, strides, itemsize, offset), dev, None)


def _unpacked(shape, strides, itemsize, offset, dev, mx):  # type: ignore[no-untyped-def]
    return [(h, dev + h, n) for h, _, n in chain_truth(shape, strides, itemsize, offset, dev, mx)]


def _cut_across(shape, strides, itemsize, offset, dev, mx):  # type: ignore[no-untyped-def]
    """The packed bytes cut every ``mx`` of the whole chain, not from each run's start."""
    out, used = [], 0
    for h, d, n in chain_truth(shape, strides, itemsize, offset, dev, None):
        while n > 0:
            k = n if mx is None else min(n, mx - used % mx)
            out.append((h, d, k))
            h, d, n, used = h + k, d + k, n - k, used + k
    return out


def _no_offset(shape, strides, itemsize, offset, dev, mx):  # type: ignore[no-untyped-def]
    return chain_truth(shape, strides, itemsize, 0, dev, mx)


_CHAIN_MISTAKES = (
    Mistake(
        "One descriptor per element: merge an element into the run before it when it starts "
        "where that run ends (each descriptor costs a setup).",
        answer=_per_element,
    ),
    Mistake("Cut every run into pieces of at most max_bytes, from its start.", answer=_unsplit),
    Mistake(
        "Cut each run from its own start: the count of max_bytes restarts at every run (a "
        "piece never continues a cut of the run before).",
        answer=_cut_across,
    ),
    Mistake(
        "Pack the tensor contiguously on the device: descriptor i lands at device_addr plus the "
        "bytes of the descriptors before it, not at device_addr plus its host offset.",
        answer=_unpacked,
    ),
    Mistake("The view starts at `offset` bytes into its buffer: add it.", answer=_no_offset),
)


def _read_chain(got: Any, label: str) -> list[tuple[int, int, int]]:
    ok = isinstance(got, (list, tuple)) and all(
        isinstance(d, (list, tuple))
        and len(d) == 3
        and all(isinstance(v, (int, np.integer)) for v in d)
        for d in got
    )
    if not ok:
        raise CheckFailure(
            f"[{label}] dma_chain returned {str(got)[:80]}: return a list of (host, device, "
            "nbytes) tuples of ints."
        )
    return [tuple(int(v) for v in d) for d in got]  # type: ignore[misc]


CHAIN = Table(
    "29.2",
    truth=chain_truth,
    named=_NAMED,
    draw=_draw,
    seeded=6,
    fresh=3,
    mistakes=_CHAIN_MISTAKES,
    hint="Walk the elements in C order; merge touching ones into runs; pack; cut at max_bytes.",
    read=_read_chain,
    what="dma_chain",
    message="[{label}] dma_chain returned {got!r:.300}, the element walk: {want!r:.300}.{hint}",
)

_MODELS = [CostModel(), CostModel(staging_bytes=4096, host_copy_gbps=5.0, dma_setup_ns=800.0)]


def _close(got: Any, want: float) -> bool:
    return isinstance(got, (int, float)) and abs(got - want) <= 1e-9 * max(1.0, abs(want))


def _no_staging(n: int, d: int, pinned: bool, m: Any) -> float:
    return copy_truth(n, d, True, m)


def _per_descriptor(n: int, d: int, pinned: bool, m: Any) -> float:
    return copy_truth(n, d, True, m) + (0.0 if pinned else n / m.host_copy_gbps)


def _no_setup(n: int, d: int, pinned: bool, m: Any) -> float:
    return n / m.pcie_gbps + (0.0 if pinned else n / m.host_copy_gbps)


_COPY_MISTAKES = (
    Mistake(
        "A pageable buffer is first copied by the CPU into pinned staging: add N / host_copy_gbps "
        "and pay one setup per staging chunk, ceil(N / staging_bytes).",
        when=lambda got, n, d, pinned, m: not pinned and _close(got, _no_staging(n, d, pinned, m)),
    ),
    Mistake(
        "After staging the bytes are contiguous: the DMA runs ceil(N / staging_bytes) chunks, "
        "not the tensor's descriptors.",
        when=lambda got, n, d, pinned, m: (
            not pinned
            and d != -(-n // m.staging_bytes)
            and _close(got, _per_descriptor(n, d, pinned, m))
        ),
    ),
    Mistake(
        "Every descriptor costs dma_setup_ns before its bytes move.",
        answer=_no_setup,
    ),
)


def _copy_draw(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    n, d = int(g.integers(1, 1 << 22)), int(g.integers(1, 5000))
    pinned, k = bool(g.random() < 0.5), int(g.integers(2))
    return (
        f"{n} B in {d} descriptors, {'pinned' if pinned else 'pageable'}, model {k}",
        (n, d, pinned, _MODELS[k]),
    )


COPY = Table(
    "29.2",
    truth=copy_truth,
    named=[
        ("4 MiB pinned in 1 descriptor", (4 << 20, 1, True, _MODELS[0])),
        ("4 MiB pageable (4 staging chunks)", (4 << 20, 1, False, _MODELS[0])),
        ("1 MiB pinned as 4096 descriptors of 256 B", (1 << 20, 4096, True, _MODELS[0])),
        (
            "1 MiB pageable, 4096 descriptors gathered by the CPU",
            (1 << 20, 4096, False, _MODELS[0]),
        ),
        ("10000 B pageable, 4 KiB staging: 3 chunks", (10000, 7, False, _MODELS[1])),
    ],
    draw=_copy_draw,
    seeded=4,
    fresh=2,
    mistakes=_COPY_MISTAKES,
    hint="pinned: d t_s + N / B; pageable: N / B_h + ceil(N / S) t_s + N / B.",
    same=_close,
    what="copy_ns",
    message="[{label}] copy_ns returned {got!r}, the closed form gives {want!r}.{hint}",
)


@grader(
    "29.2",
    blocks=(_REF, "minitorch.driver.device:CostModel.transfer_ns", "minitorch.driver.context"),
    hand="parts",
)
def check_dma(dma_chain: Callable[..., Any], copy_ns: Callable[..., Any]) -> str:
    """Exercise 29.2: the gather chain of a strided view, and the pinned/pageable copy time."""
    n = CHAIN.grade(dma_chain)
    m = COPY.grade(copy_ns)
    chain = chain_truth(*_NAMED[1][1])
    return (
        f"{n} chains equal the element walk (3 fresh), {m} copy times equal the closed forms; "
        f"8 columns of 16 B: {len(chain)} descriptors, {sum(c[2] for c in chain)} B"
    )
