"""Warp costs against plain loops: segments touched and degrees of bank conflict."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.kernels.simt_memory import RaceError, bank_degrees, race_check, warp_segments


def _loop_segments(addresses, active, segment):
    out = []
    for w in range(0, len(addresses), 32):
        segs = {
            a // segment
            for a, on in zip(addresses[w : w + 32], active[w : w + 32], strict=True)
            if on
        }
        out.append(len(segs))
    return out


def _loop_degrees(addresses, active):
    out = []
    for w in range(0, len(addresses), 32):
        words = {
            a // 4 for a, on in zip(addresses[w : w + 32], active[w : w + 32], strict=True) if on
        }
        banks = [sum(1 for word in words if word % 32 == b) for b in range(32)]
        out.append(max(banks))
    return out


@pytest.mark.parametrize(("stride", "want"), [(0, 1), (1, 4), (2, 8), (4, 16), (8, 32), (9, 32)])
def test_a_strided_float32_warp_touches_the_closed_form_number_of_sectors(stride, want):
    addresses = np.arange(32) * stride * 4
    assert warp_segments(addresses, np.ones(32, bool), 32).tolist() == [want]


def test_128_byte_segments_and_inactive_warps():
    addresses = np.arange(64) * 4  # two warps of consecutive floats
    active = np.r_[np.ones(32, bool), np.zeros(32, bool)]
    assert warp_segments(addresses, active, 128).tolist() == [1, 0]


@pytest.mark.parametrize(("stride", "want"), [(0, 1), (1, 1), (2, 2), (16, 16), (32, 32), (33, 1)])
def test_bank_conflict_degree_of_a_strided_word_access(stride, want):
    addresses = np.arange(32) * stride * 4
    assert bank_degrees(addresses, np.ones(32, bool)).tolist() == [want]


def test_random_accesses_match_plain_loops():
    gen = np.random.default_rng(0)
    for _ in range(50):
        n = int(gen.integers(1, 200))
        addresses = gen.integers(0, 4096, n) * 4
        active = gen.random(n) < 0.7
        assert warp_segments(addresses, active, 32).tolist() == _loop_segments(
            addresses, active, 32
        )
        assert bank_degrees(addresses, active).tolist() == _loop_degrees(addresses, active)


def test_race_check_flags_read_after_write_by_another_thread():
    writer, reader = np.full(4, -1), np.full(4, -1)
    race_check(writer, reader, np.array([0, 1]), np.array([0, 1]), store=True)
    race_check(writer, reader, np.array([0]), np.array([0]), store=False)  # own write: fine
    with pytest.raises(RaceError, match="thread 2 read element 1"):
        race_check(writer, reader, np.array([1]), np.array([2]), store=False)


def test_race_check_flags_write_after_read_and_two_writers():
    writer, reader = np.full(4, -1), np.full(4, -1)
    race_check(writer, reader, np.array([3, 3]), np.array([0, 1]), store=False)  # two readers
    with pytest.raises(RaceError, match="wrote element 3"):
        race_check(writer, reader, np.array([3]), np.array([0]), store=True)
    with pytest.raises(RaceError, match="wrote element 2"):
        race_check(np.full(4, -1), np.full(4, -1), np.array([2, 2]), np.array([5, 6]), store=True)
