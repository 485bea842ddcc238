"""Collectives on SimWorld against plain numpy sums and concatenations; bytes vs cost.py."""

import numpy as np
import pytest

from minitorch.comm import collectives as C
from minitorch.comm import cost
from minitorch.comm.simworld import SimWorld

SIZES = [(p, n) for p in range(1, 9) for n in (0, 1, 7, 13)]


def _data(p, n):
    g = np.random.default_rng(100 * p + n)
    return [g.integers(-50, 50, n) for _ in range(p)]


def _split(x, p):
    return np.array_split(x, p)


@pytest.mark.parametrize("p,n", SIZES)
def test_reduce_family(p, n):
    xs, w = _data(p, n), SimWorld(p)
    total = xs[0].copy()
    for x in xs[1:]:
        total = total + x
    for name, fn, want in [
        ("all_reduce", C.all_reduce, [total] * p),
        ("reduce_scatter", C.reduce_scatter, _split(total, p)),
    ]:
        out = w.run(fn, xs, per_rank=True)
        for got, exp in zip(out, want, strict=True):
            np.testing.assert_array_equal(got, exp)
        assert w.bytes_sent == [cost.bytes_sent(name, n, p, r) for r in range(p)]
    root = p - 1
    out = w.run(lambda c, x: C.reduce(c, x, root), xs, per_rank=True)
    np.testing.assert_array_equal(out[root], total)
    assert w.bytes_sent == [cost.bytes_sent("reduce", n, p, r, root=root) for r in range(p)]


@pytest.mark.parametrize("p,n", SIZES)
def test_data_movement(p, n):
    xs, w = _data(p, n), SimWorld(p)
    root = p // 2
    out = w.run(lambda c, x: C.broadcast(c, x, root), xs, per_rank=True)
    assert all(np.array_equal(o, xs[root]) for o in out)
    assert w.bytes_sent == [cost.bytes_sent("broadcast", n, p, r, root=root) for r in range(p)]
    full = np.concatenate(xs)[:n]
    out = w.run(C.all_gather, _split(full, p), per_rank=True)
    assert all(np.array_equal(o, full) for o in out)
    assert w.bytes_sent == [cost.bytes_sent("all_gather", n, p, r) for r in range(p)]
    out = w.run(C.all_to_all, [_split(x, p) for x in xs], per_rank=True)
    for r in range(p):
        for s in range(p):
            np.testing.assert_array_equal(out[r][s], _split(xs[s], p)[r])
    assert w.bytes_sent == [cost.bytes_sent("all_to_all", n, p, r) for r in range(p)]


def test_clock_matches_alpha_beta_formulas():
    for p in (2, 5, 8):
        w = SimWorld(p, alpha=3e-6, beta=2e-9)
        x = np.ones(1000)
        for name, fn in [("broadcast", C.broadcast), ("all_reduce", C.all_reduce)]:
            w.run(fn, [x] * p, per_rank=True)
            assert w.time == pytest.approx(cost.time_naive(name, x.nbytes, p, 3e-6, 2e-9))


def test_bus_bandwidth_and_chunks():
    assert cost.bus_bandwidth("all_reduce", 100, 4, 1.0) == pytest.approx(150.0)
    assert C.chunk_bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert [cost.chunk_bytes(7, 3, r, 4) for r in range(3)] == [12, 8, 8]
    with pytest.raises(ValueError):
        cost.bytes_sent("gossip", 1, 2, 0)
