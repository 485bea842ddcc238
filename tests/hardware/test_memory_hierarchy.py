"""Memory hierarchy: footprints, traffic, and small tiles turning a GEMM memory-bound."""

from __future__ import annotations

import pytest

from minitorch.hardware import memory_hierarchy as mh


def test_every_level_is_sourced_and_ordered():
    names = [lv.name for lv in mh.H100_HIERARCHY]
    assert names[-1] == "HBM3" and all(lv.source for lv in mh.H100_HIERARCHY)
    energies = [lv.pj_per_byte for lv in mh.H100_HIERARCHY]
    assert energies == sorted(energies)  # further from the ALU costs more per byte
    assert mh.H100_HIERARCHY[-1].bandwidth == 3.35e12


def test_footprint_and_traffic_closed_forms():
    assert mh.sram_footprint(2, 3, 4, elem=2) == 2 * 2 * (6 + 12) + 4 * 8
    assert mh.hbm_bytes(4, 5, 6, 2, 5, 3, elem=1) == 4 * 5 * 2 + 5 * 6 * 2 + 24


def test_small_tiles_turn_a_compute_bound_gemm_memory_bound():
    peak = 989.5e12
    big = mh.map_gemm(8192, 8192, 8192, (683, 16, 683), peak)
    small = mh.map_gemm(8192, 8192, 8192, (64, 64, 64), peak)
    assert big.bound == "compute" and small.bound == "memory"
    assert small.seconds > 3 * big.seconds and small.joules > big.joules
    assert big.intensity > peak / 3.35e12 > small.intensity


def test_decode_gemv_is_memory_bound_and_oversized_tiles_are_refused():
    assert mh.map_gemm(1, 4096, 4096, (1, 16, 4096), 989.5e12).bound == "memory"
    with pytest.raises(ValueError, match="SRAM"):
        mh.map_gemm(8192, 8192, 8192, (8192, 8192, 8192), 989.5e12)
