"""The alpha-beta overlap timeline against closed forms."""

from __future__ import annotations

import pytest

from minitorch.parallel.timeline import bucket_schedule, exposed_comm, exposed_vs_bucket_size


def test_one_bucket_exposes_all_its_communication():
    compute, nbytes = [1.0, 2.0, 3.0], [100, 200, 300]
    assert exposed_comm(compute, nbytes, [[2, 1, 0]], 0.5, 0.01) == pytest.approx(0.5 + 6.0)


def test_per_parameter_buckets_hide_all_but_the_last():
    compute, nbytes = [1.0, 1.0, 1.0], [10, 10, 10]
    end, spans = bucket_schedule(compute, nbytes, [[2], [1], [0]], 0.1, 0.01)
    assert end == 3.0
    assert spans == [
        (1.0, pytest.approx(1.2)),
        (2.0, pytest.approx(2.2)),
        (3.0, pytest.approx(3.2)),
    ]
    assert exposed_comm(compute, nbytes, [[2], [1], [0]], 0.1, 0.01) == pytest.approx(0.2)


def test_slow_channel_queues_buckets():
    assert exposed_comm([1.0, 1.0, 1.0], [1, 1, 1], [[2], [1], [0]], 1.5, 0.0) == pytest.approx(2.5)


def test_bucket_size_sweep_has_an_interior_optimum():
    compute = [1e-3] * 20
    nbytes = [1_000_000] * 20
    sizes = [1, 4_000_000, 10**9]
    tiny, mid, one = exposed_vs_bucket_size(compute, nbytes, sizes, 2e-3, 1e-9)
    assert mid < tiny and mid < one
