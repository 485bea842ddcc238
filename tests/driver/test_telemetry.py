"""Counters: wrap-around decoding (Hypothesis against true sums) and sampled metrics against
an independent per-nanosecond loop over the segments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.telemetry import HardwareCounter, Segment, decode_delta, sample, truth


@settings(max_examples=100, deadline=None)
@given(
    width=st.integers(1, 40),
    data=st.data(),
)
def test_decoded_deltas_equal_true_sums_below_the_wrap(width: int, data: st.DataObject) -> None:
    incs = data.draw(st.lists(st.integers(0, (1 << width) - 1), min_size=1, max_size=30))
    c = HardwareCounter(width)
    prev, total = c.read(), 0
    for n in incs:
        c.add(n)
        total += n
        assert decode_delta(prev, c.read(), width) == n
        assert 0 <= c.read() < (1 << width)
        prev = c.read()
    assert c.wraps * (1 << width) + c.read() == total


def test_an_increment_of_a_full_wrap_is_invisible() -> None:
    c = HardwareCounter(8)
    c.add(5)
    before = c.read()
    c.add(256)
    assert decode_delta(before, c.read(), 8) == 0  # aliased: sample faster than the wrap


def test_counter_refuses_to_go_down() -> None:
    with pytest.raises(ValueError):
        HardwareCounter(8).add(-1)


def _loop_truth(segs: list[Segment], interval: int, n_sm: int, ghz: float) -> np.ndarray:
    """One ns at a time: accumulate busy, bytes, SM-cycles into each interval's bucket."""
    total = int(sum(s.duration_ns for s in segs))
    n = total // interval
    out = np.zeros((n, 3))
    t = 0
    for s in segs:
        for _ in range(int(s.duration_ns)):
            k = t // interval
            if k < n:
                out[k] += [float(s.busy), s.bytes_per_ns, s.active_sms * ghz]
            t += 1
    out[:, 0] /= interval
    out[:, 1] /= interval
    out[:, 2] /= n_sm * ghz * interval
    return out


SEGS = [
    Segment(300, busy=True, bytes_per_ns=3000.0, active_sms=132),
    Segment(170, busy=False),
    Segment(530, busy=True, bytes_per_ns=400.0, active_sms=4),
]


def test_truth_matches_a_per_ns_loop() -> None:
    ref = _loop_truth(SEGS, 100, 132, 1.98)
    t = truth(SEGS, 100)
    np.testing.assert_allclose(np.c_[t.util, t.bandwidth_gbps, t.sm_active], ref, atol=1e-9)


@pytest.mark.parametrize("width", [16, 20, 64 - 2])
def test_sampled_counters_decode_to_the_truth_within_one_count(width: int) -> None:
    # 3000 B/ns * 100 ns = 300 kB per interval: a 20-bit counter wraps, 16-bit aliases
    ref = _loop_truth(SEGS, 100, 132, 1.98)
    s = sample(SEGS, 100, width_bits=width)
    if (1 << width) > 300_000 * 1.01:
        np.testing.assert_allclose(s.bandwidth_gbps, ref[:, 1], atol=1.0 / 100 + 1e-9)
        np.testing.assert_allclose(s.sm_active, ref[:, 2], atol=1.0 / (132 * 1.98 * 100) + 1e-9)
    else:
        assert not np.allclose(s.bandwidth_gbps, ref[:, 1], atol=0.011)
    np.testing.assert_allclose(s.util, ref[:, 0], atol=1.0 / 100 + 1e-9)


def test_utilisation_is_not_sm_activity() -> None:
    t = truth([Segment(1000, busy=True, active_sms=4)], 1000)
    assert t.util[0] == pytest.approx(1.0) and t.sm_active[0] == pytest.approx(4 / 132)
