"""The simulated device: MMIO counted and timed, the allocator against a plain byte map."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.device import (
    DOORBELL,
    STATUS,
    Bar,
    CostModel,
    DeviceMemory,
    DeviceMemoryError,
)


def test_mmio_writes_and_reads_are_counted_and_timed() -> None:
    model = CostModel(mmio_write_ns=7.0, mmio_read_ns=50.0)
    bar = Bar(model)
    seen: list[int] = []
    bar.hooks[DOORBELL] = seen.append
    bar.write(DOORBELL, 3)
    bar.write(DOORBELL, 4)
    assert bar.read(STATUS) == 0 and bar.read(DOORBELL) == 4
    assert (bar.writes, bar.reads, seen) == (2, 2, [3, 4])
    assert bar.cpu_ns == 2 * 7.0 + 2 * 50.0
    bar.device_set(STATUS, 1)
    assert bar.cpu_ns == 114.0 and bar.regs[STATUS] == 1
    with pytest.raises(KeyError, match="no register"):
        bar.write(0x1000, 1)


def test_transfer_cost_is_setup_per_descriptor_plus_bytes_over_bandwidth() -> None:
    model = CostModel(pcie_gbps=20.0, dma_setup_ns=300.0)
    assert model.transfer_ns(4000, 3) == pytest.approx(3 * 300.0 + 4000 / 20.0)


def test_allocator_aligns_reuses_and_coalesces() -> None:
    mem = DeviceMemory(4096, alignment=256)
    a, b, c = mem.alloc(1), mem.alloc(300), mem.alloc(256)
    assert (a, b, c) == (0, 256, 768)
    mem.free(b)
    assert mem.alloc(100) == 256  # first fit: the freed hole
    mem.free(a)
    mem.free(256)
    mem.free(c)
    assert mem.free_list == [(0, 4096)] and mem.bytes_free() == 4096
    with pytest.raises(DeviceMemoryError, match="not an allocation"):
        mem.free(a)
    with pytest.raises(DeviceMemoryError, match="out of device memory"):
        mem.alloc(5000)


def test_access_outside_memory_raises_and_changes_nothing() -> None:
    mem = DeviceMemory(1024)
    mem.write(1000, np.arange(24, dtype=np.uint8))
    before = mem.data.copy()
    with pytest.raises(DeviceMemoryError, match="outside memory"):
        mem.write(1020, np.ones(8, dtype=np.uint8))
    np.testing.assert_array_equal(mem.data, before)
    assert mem.read(1000, 24).tolist() == list(range(24))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 700)), max_size=40))
def test_live_blocks_never_overlap_and_bytes_add_up(ops: list[tuple[bool, int]]) -> None:
    mem = DeviceMemory(8192, alignment=128)
    owner = np.full(8192, -1)  # plain byte map: which live block holds each byte
    live: list[int] = []
    for is_alloc, n in ops:
        if is_alloc or not live:
            try:
                addr = mem.alloc(n)
            except DeviceMemoryError:
                need = -(-n // 128) * 128
                assert all(length < need for _, length in mem.free_list)
                continue
            assert addr % 128 == 0 and (owner[addr : addr + n] == -1).all()
            owner[addr : addr + mem.blocks[addr]] = addr
            live.append(addr)
        else:
            addr = live.pop(n % len(live))
            mem.free(addr)
            owner[owner == addr] = -1
    assert mem.bytes_free() == int((owner == -1).sum())
    starts = [a for a, _ in mem.free_list]
    assert starts == sorted(starts)
    assert all(a + n < b for (a, n), (b, _) in zip(mem.free_list, mem.free_list[1:], strict=False))
