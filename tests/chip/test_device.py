"""The chip's memory: handles, alignment, live and peak bytes, capacity, link counters."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from minitorch.chip.device import Chip, OutOfChipMemory, Storage

pytestmark = pytest.mark.lab31


def test_allocator_rounds_and_tracks_live_and_peak() -> None:
    chip = Chip(alignment=256)
    a = chip.alloc((10,), np.float32)  # 40 bytes -> 256
    b = chip.alloc((100,), np.float32)  # 400 -> 512
    assert chip.bytes_live == 768 and chip.peak == 768 and chip.allocs == 2
    chip.free(a)
    assert chip.bytes_live == 512 and chip.peak == 768
    assert chip.live_handles() == [b]
    assert chip.rounded(0) == 256 and chip.rounded(257) == 512


def test_capacity_double_free_and_unknown_handle() -> None:
    chip = Chip(capacity=1024)
    h = chip.alloc((256,), np.float32)
    with pytest.raises(OutOfChipMemory, match="1024"):
        chip.alloc((1,), np.float32)
    chip.free(h)
    with pytest.raises(KeyError, match="double free"):
        chip.free(h)
    with pytest.raises(KeyError, match="no buffer"):
        chip.array(h)


def test_copies_are_counted_each_way_and_compute_is_not() -> None:
    chip = Chip()
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    h = chip.upload(host)
    host[0, 0] = 99  # the chip holds a copy
    assert chip.array(h)[0, 0] == 0
    back = chip.download(h, chip.array(h)[:, :2])
    assert back.shape == (3, 2)
    chip.adopt(chip.array(h) * 2)
    s = chip.stats()
    assert (s["h2d_bytes"], s["d2h_bytes"], s["h2d_copies"], s["d2h_copies"]) == (48, 24, 1, 1)
    chip.reset_counters()
    assert chip.stats()["h2d_bytes"] == 0 and chip.peak == chip.bytes_live


def test_storage_frees_its_buffer_with_its_last_reference() -> None:
    chip = Chip()
    s = Storage(chip, chip.alloc((64,), np.float32))
    assert chip.bytes_live == 256
    del s
    gc.collect()
    assert chip.bytes_live == 0 and chip.stats()["buffers"] == 0
