"""DMA: runs and descriptors against an element-by-element count, the data moved exactly,
pinned vs pageable closed forms, and a bad chain rejected with device memory unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.device import CostModel, DeviceMemory
from minitorch.driver.dma import (
    D2H,
    Descriptor,
    DmaEngine,
    DmaError,
    HostBuffer,
    array_runs,
    breakeven_descriptors,
    gather_chain,
    pageable_ns,
    pinned_ns,
    tensor_runs,
)


def element_runs(view: np.ndarray, base: np.ndarray) -> list[tuple[int, int]]:
    """Plain loop: every element's byte offset in C order, merged when they touch."""
    origin = base.__array_interface__["data"][0]
    runs: list[list[int]] = []
    start = view.__array_interface__["data"][0] - origin
    for idx in np.ndindex(*view.shape):
        off = start + sum(i * s for i, s in zip(idx, view.strides, strict=True))
        if runs and runs[-1][0] + runs[-1][1] == off:
            runs[-1][1] += view.itemsize
        else:
            runs.append([off, view.itemsize])
    return [(a, n) for a, n in runs]


VIEWS = {
    "contiguous": lambda b: b,
    "column slice": lambda b: b[:, :3],
    "transpose": lambda b: b.T,
    "every other row": lambda b: b[::2],
    "reversed columns": lambda b: b[:, ::-1],
    "inner block": lambda b: b[1:4, 2:5],
    "one column": lambda b: b[:, 4:5],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_runs_match_an_element_count(name: str) -> None:
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    view = VIEWS[name](base)
    runs = array_runs(view, base)
    assert runs == element_runs(view, base)
    assert sum(n for _, n in runs) == view.nbytes


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.data(),
)
def test_runs_of_random_slices(shape: list[int], data: st.DataObject) -> None:
    full = [n * 2 for n in shape]
    base = np.arange(int(np.prod(full)), dtype=np.int16).reshape(full)
    index = tuple(
        slice(data.draw(st.integers(0, n - 1)), None, data.draw(st.sampled_from([1, 2, -1])))
        for n in full
    )
    view = base[index]
    assert array_runs(view, base) == element_runs(view, base)


def test_gather_chain_packs_and_splits() -> None:
    chain = gather_chain([(0, 10), (40, 3)], device_addr=100, max_bytes=4)
    assert [(d.host, d.device, d.nbytes) for d in chain] == [
        (0, 100, 4),
        (4, 104, 4),
        (8, 108, 2),
        (40, 110, 3),
    ]
    assert sum(d.nbytes for d in chain) == 13


@pytest.mark.parametrize("pinned", [True, False])
def test_scattered_tensor_arrives_packed(pinned: bool) -> None:
    model = CostModel()
    mem = DeviceMemory(4096)
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    view = base[::2, 1:6]  # 4 runs of 5 floats
    addr = mem.alloc(view.nbytes)
    engine = DmaEngine(model, mem)
    chain = gather_chain(array_runs(view, base), addr)
    t = engine.run(chain, HostBuffer(base, pinned=pinned))
    got = mem.read(addr, view.nbytes).view(np.float32).reshape(view.shape)
    np.testing.assert_array_equal(got, view)
    n = view.nbytes
    if pinned:
        assert engine.descriptors == 4 and engine.staged_bytes == 0
        assert t == pytest.approx(4 * model.dma_setup_ns + n / model.pcie_gbps)
    else:
        assert engine.descriptors == 1 and engine.staged_bytes == n
        want = n / model.host_copy_gbps + model.dma_setup_ns + n / model.pcie_gbps
        assert t == pytest.approx(want)
    back = np.zeros_like(base)
    out = [Descriptor(d.host, d.device, d.nbytes, D2H) for d in chain]
    engine.run(out, HostBuffer(back, pinned=True))
    np.testing.assert_array_equal(back[::2, 1:6], view)
    assert engine.bytes == 2 * n


def test_pinned_pageable_closed_forms_and_breakeven() -> None:
    model = CostModel(staging_bytes=1000)
    n = 2500
    assert pinned_ns(n, 7, model) == pytest.approx(7 * 500.0 + n / 25.0)
    assert pageable_ns(n, model) == pytest.approx(n / 10.0 + 3 * 500.0 + n / 25.0)
    d = breakeven_descriptors(n, model)
    assert d == pytest.approx(n / 10.0 / 500.0 + 3)
    assert pinned_ns(n, math.floor(d), model) <= pageable_ns(n, model)
    assert pinned_ns(n, math.floor(d) + 1, model) > pageable_ns(n, model)


def test_a_bad_descriptor_rejects_the_whole_chain() -> None:
    mem = DeviceMemory(1024)
    engine = DmaEngine(CostModel(), mem)
    host = HostBuffer(np.full(256, 7, dtype=np.uint8), pinned=True)
    chain = [Descriptor(0, 0, 64), Descriptor(64, 1000, 64)]  # the second runs past 1024
    with pytest.raises(DmaError, match=r"descriptor 1: device bytes .* outside device memory"):
        engine.run(chain, host)
    assert not mem.data.any() and engine.bytes == 0
    with pytest.raises(DmaError, match="outside the 256-byte host buffer"):
        engine.run([Descriptor(200, 0, 64)], host)


def test_runs_of_edge_shapes() -> None:
    assert tensor_runs((), (), 8) == [(0, 8)]
    assert tensor_runs((0, 3), (12, 4), 4) == []
    assert tensor_runs((3, 1, 2), (8, 999, 4), 4, offset=16) == [(16, 24)]  # size-1 dim
    assert tensor_runs((2, 2), (4, 8), 4) == [(0, 4), (8, 4), (4, 4), (12, 4)]  # transposed
