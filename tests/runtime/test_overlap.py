"""Bucketed all-reduce and prefetch against the closed forms and plain loops."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.runtime.overlap import (
    allreduce_intervals,
    best_bucket_bytes,
    exposed_uniform,
    make_buckets,
    overlap_step,
    peak_resident,
    prefetch_forward,
    prefetch_intervals,
)


def test_buckets_close_at_the_cap() -> None:
    assert make_buckets([3, 3, 3, 3, 3], 6) == [[0, 1], [2, 3], [4]]
    assert make_buckets([10, 1, 1], 4) == [[0], [1, 2]]
    assert make_buckets([1, 2], float("inf")) == [[0, 1]]
    assert make_buckets([], 4) == []


@pytest.mark.parametrize("per_bucket", [1, 2, 3, 4, 6, 12])
@pytest.mark.parametrize(("alpha", "beta"), [(0.5, 0.01), (0.05, 0.001), (2.0, 0.0), (0.0, 0.05)])
def test_exposed_matches_the_closed_form(per_bucket: int, alpha: float, beta: float) -> None:
    res = overlap_step([1.0] * 12, [100] * 12, 100 * per_bucket, alpha, beta)
    assert len(res.buckets) == 12 // per_bucket
    assert res.backward == 12.0
    assert res.exposed == pytest.approx(exposed_uniform(12, 1.0, 100, per_bucket, alpha, beta))


def _plain_schedule(t, g, cap, alpha, beta):
    out, clock, comm, size, ready = [], 0.0, 0.0, 0, False
    for i, (ti, gi) in enumerate(zip(t, g, strict=True)):
        clock += ti
        size += gi
        ready = size >= cap or i == len(t) - 1
        if ready:
            start = max(clock, comm)
            comm = start + alpha + beta * size
            out.append((start, comm))
            size = 0
    return out


def test_random_schedules_match_a_plain_loop() -> None:
    gen = np.random.default_rng(1602)
    for _ in range(50):
        n = int(gen.integers(1, 15))
        t = [float(x) for x in gen.integers(1, 9, n)]
        g = [int(x) for x in gen.integers(1, 50, n)]
        cap = int(gen.integers(1, 120))
        got = allreduce_intervals(t, g, cap, 0.5, 0.05)
        np.testing.assert_allclose(got, _plain_schedule(t, g, cap, 0.5, 0.05), rtol=1e-12)
        res = overlap_step(t, g, cap, 0.5, 0.05)
        assert res.step == pytest.approx(max(sum(t), got[-1][1]))


def test_best_bucket_beats_every_cap() -> None:
    gen = np.random.default_rng(1603)
    for _ in range(10):
        n = int(gen.integers(2, 12))
        t = [float(x) for x in gen.integers(1, 6, n)]
        g = [int(x) for x in gen.integers(1, 40, n)]
        best = overlap_step(t, g, best_bucket_bytes(t, g, 1.0, 0.05), 1.0, 0.05).step
        for cap in range(1, sum(g) + 2):
            assert best <= overlap_step(t, g, cap, 1.0, 0.05).step + 1e-9


def test_prefetch_holds_two_layers_and_hides_gathers() -> None:
    iv = prefetch_intervals([2.0] * 6, [100] * 6, 0.5, 0.01)
    assert iv[0] == (0.0, 1.5, 1.5, 3.5)
    assert iv[-1][3] == pytest.approx(1.5 + 6 * 2.0)  # only the first gather is exposed
    assert peak_resident([(a, d) for a, _, _, d in iv]) == 2
    serial = prefetch_forward([2.0] * 6, [100] * 6, 0.5, 0.01, depth=0)
    assert serial.makespan == pytest.approx(6 * 3.5)
    deep = prefetch_forward([2.0] * 6, [100] * 6, 0.5, 0.01, depth=5)
    held = [(g.start, f.end) for g, f in zip(deep.timeline[::2], deep.timeline[1::2], strict=True)]
    assert peak_resident(held) > 2


def test_prefetch_comm_bound_matches_recurrence() -> None:
    f, p = [1.0, 3.0, 1.0, 1.0, 2.0], [300, 100, 400, 100, 200]
    ge, ce, rows = [], [], []
    for i in range(5):
        gs = max(ge[-1] if ge else 0.0, ce[i - 2] if i >= 2 else 0.0)
        ge.append(gs + 0.2 + 0.01 * p[i])
        cs = max(ce[-1] if ce else 0.0, ge[-1])
        ce.append(cs + f[i])
        rows.append((gs, ge[-1], cs, ce[-1]))
    np.testing.assert_allclose(prefetch_intervals(f, p, 0.2, 0.01), rows, rtol=1e-12)


def test_peak_resident_is_half_open_and_weighted() -> None:
    assert peak_resident([(0, 1), (1, 2)]) == 1
    assert peak_resident([(0, 2), (1, 3)], [5, 7]) == 12
    assert peak_resident([]) == 0
