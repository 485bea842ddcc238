"""All-reduce algorithms: sums equal a plain loop; bytes, messages and clock equal cost.py."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.comm import allreduce as A
from minitorch.comm import cost
from minitorch.comm.hierarchical import hierarchical_all_reduce
from minitorch.comm.simworld import SimWorld

ALGS = {
    "ring": A.ring_all_reduce,
    "halving_doubling": A.halving_doubling_all_reduce,
    "tree": A.tree_all_reduce,
    "binary_tree": A.binary_tree_all_reduce,
    "double_binary_tree": A.double_binary_tree_all_reduce,
}


def _chunks(n, p):
    return [n // p + (r < n % p) for r in range(p)]


def _inputs(p, n, seed=0):
    gen = np.random.default_rng(seed)
    return [gen.integers(-50, 50, n) for _ in range(p)]


def _loop_sum(xs):
    return np.array([sum(int(x[i]) for x in xs) for i in range(len(xs[0]))], dtype=np.int64)


@pytest.mark.parametrize("name", ALGS)
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8])
@pytest.mark.parametrize("n", [0, 1, 5, 13, 64])
def test_every_algorithm_sums_exactly(name, p, n):
    xs = _inputs(p, n, seed=p * 100 + n)
    outs = SimWorld(p).run(ALGS[name], xs, per_rank=True)
    for out in outs:
        np.testing.assert_array_equal(out, _loop_sum(xs))


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("n", [1, 7, 16, 1001])
def test_ring_bytes_and_messages(p, n):
    world = SimWorld(p)
    world.run(A.ring_all_reduce, [np.ones(n)] * p, per_rank=True)
    c = [8 * k for k in _chunks(n, p)]
    assert world.bytes_sent == [2 * 8 * n - c[(r + 1) % p] - c[(r + 2) % p] for r in range(p)]
    assert world.msgs_sent == [2 * (p - 1)] * p
    assert set(world.link_bytes) == {(r, (r + 1) % p) for r in range(p)}
    if n % p == 0:
        assert world.bytes_sent == [2 * (p - 1) * 8 * n // p] * p


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("n", [3, 13, 64])
def test_halving_doubling_bytes_and_messages(p, n):
    world = SimWorld(p)
    world.run(A.halving_doubling_all_reduce, [np.ones(n)] * p, per_rank=True)
    c = _chunks(n, p)
    # a step sends what it gives away, its mirror what it keeps: the range held before it
    blocks = [p >> j for j in range(int(np.log2(p)))]
    want = [sum(8 * sum(c[r // b * b : r // b * b + b]) for b in blocks) for r in range(p)]
    assert world.bytes_sent == want
    if n % p == 0:
        assert want == [2 * 8 * (n - n // p)] * p
    assert world.msgs_sent == [2 * int(np.log2(p))] * p


@pytest.mark.parametrize("name", ["ring", "halving_doubling", "tree"])
@pytest.mark.parametrize("p", [2, 4, 8])
def test_clock_equals_the_alpha_beta_formula(name, p):
    alpha, beta, n = 3e-6, 2e-10, 8 * 1024
    world = SimWorld(p, alpha=alpha, beta=beta)
    world.run(ALGS[name], [np.ones(n // 8)] * p, per_rank=True)
    assert world.time == pytest.approx(cost.time_all_reduce(name, n, p, alpha, beta), rel=1e-12)


def test_crossover_separates_tree_and_ring_on_the_clock():
    alpha, beta, p = 5e-6, 1e-10, 8
    star = cost.crossover_bytes(p, alpha, beta)
    t = {}
    for nbytes in (star / 4, star * 4):
        n = int(nbytes) // 8
        for name in ("tree", "ring"):
            world = SimWorld(p, alpha=alpha, beta=beta)
            world.run(ALGS[name], [np.ones(n)] * p, per_rank=True)
            t[name, nbytes > star] = world.time
    assert t["tree", False] < t["ring", False] and t["ring", True] < t["tree", True]
    assert cost.crossover_bytes(2, alpha, beta) == 0.0


def test_double_tree_halves_each_trees_bytes():
    p, n = 8, 64
    one, two = SimWorld(p), SimWorld(p)
    one.run(A.binary_tree_all_reduce, [np.ones(n)] * p, per_rank=True)
    two.run(A.double_binary_tree_all_reduce, [np.ones(n)] * p, per_rank=True)
    assert sum(two.bytes_sent) == sum(one.bytes_sent)
    assert max(two.bytes_sent) < max(one.bytes_sent)


@pytest.mark.parametrize(("p", "g", "n"), [(8, 4, 37), (6, 2, 10), (6, 3, 64), (4, 4, 9)])
def test_hierarchical_sums_and_inter_node_bytes(p, g, n):
    xs = _inputs(p, n, seed=n)
    world = SimWorld(p, ranks_per_node=g, inter_alpha=1e-5, inter_beta=1e-8)
    outs = world.run(hierarchical_all_reduce, xs, [g] * p, per_rank=True)
    for out in outs:
        np.testing.assert_array_equal(out, _loop_sum(xs))
    q = p // g
    assert sum(world.inter_bytes_sent) == 2 * (q - 1) * 8 * n
    flat = SimWorld(p, ranks_per_node=g, inter_alpha=1e-5, inter_beta=1e-8)
    flat.run(A.ring_all_reduce, xs, per_rank=True)
    assert sum(flat.inter_bytes_sent) >= sum(world.inter_bytes_sent)


def test_hierarchical_clock_and_topology_default():
    p, g, n = 8, 4, 8 * 64
    fast, slow = (1e-6, 1e-10), (1e-5, 1e-8)
    world = SimWorld(p, *fast, ranks_per_node=g, inter_alpha=slow[0], inter_beta=slow[1])
    world.run(hierarchical_all_reduce, [np.ones(n // 8)] * p, [g] * p, per_rank=True)
    assert world.time == pytest.approx(cost.time_hierarchical(n, p, g, fast, slow), rel=1e-12)
    plain = SimWorld(p)
    assert plain.ranks_per_node == p and plain.inter_alpha == plain.alpha
    with pytest.raises(ValueError, match="divide"):
        SimWorld(6, ranks_per_node=4)
