"""Measurements run and return plausible numbers (never compared with a fixed time)."""

from __future__ import annotations

import numpy as np

from minitorch.hardware import measure_bandwidth, measure_peak_flops, median_seconds
from minitorch.hardware.measure import available_cores


def test_median_of_repeats() -> None:
    calls: list[int] = []
    t = median_seconds(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5 and t >= 0


def test_peak_and_bandwidth_are_positive_and_finite() -> None:
    for threads in (1, None):
        peak = measure_peak_flops(64, threads=threads, repeats=2)
        bw = measure_bandwidth(1 << 20, threads=threads, repeats=2)
        assert np.isfinite(peak) and peak > 1e6
        assert np.isfinite(bw) and bw > 1e6
    assert measure_peak_flops(32, dtype=np.float64, repeats=1) > 0
    assert available_cores() >= 1
