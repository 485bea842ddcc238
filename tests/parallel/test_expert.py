"""Expert-parallel MoE on the simulated world equals lab 10's single-process MoE, drops included."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.autograd import Tensor
from minitorch.comm.simworld import SimWorld
from minitorch.model.moe import MoE
from minitorch.model.moe_router import assign_slots
from minitorch.parallel.expert import expert_parallel_moe, global_positions


def _weights(layer, e):
    """(W1, b1, W2, b2) with x @ W (the course's Linear stores W as (out, in))."""
    w1, b1, w2, b2 = (p.data for p in layer.expert(e).parameters())
    return w1.T, b1, w2.T, b2


@pytest.mark.parametrize(
    ("p", "experts", "k", "cf"), [(2, 4, 1, 1.0), (4, 4, 2, 1.0), (2, 6, 2, 0.75), (3, 3, 1, 1.25)]
)
def test_expert_parallel_equals_single_process_moe(p, experts, k, cf):
    rng = np.random.default_rng(p * 10 + experts)
    layer = MoE(4, 6, experts, k=k, capacity_factor=cf, rng=rng)
    n = 6 * p
    x = rng.standard_normal((n, 4))
    y, stats = layer(Tensor(x))
    w_router = layer.router.weight.data.T
    ws = [_weights(layer, e) for e in range(experts)]
    per = experts // p
    world = SimWorld(p)
    outs = world.run(
        expert_parallel_moe,
        np.split(x, p),
        [w_router] * p,
        [ws[r * per : (r + 1) * per] for r in range(p)],
        [k] * p,
        [cf] * p,
        per_rank=True,
    )
    np.testing.assert_allclose(np.concatenate([o[0] for o in outs]), y.data, atol=1e-12)
    assert sum(o[1] for o in outs) == stats.dropped
    assert stats.dropped > 0 or cf > 1  # the cases do drop


def test_global_positions_equal_lab10_priority():
    rng = np.random.default_rng(3)
    experts = np.stack([rng.permutation(5)[:2] for _ in range(12)])  # (12, 2) distinct choices
    parts = np.split(experts, 3)
    counts = np.stack([[np.bincount(part[:, j], minlength=5) for j in range(2)] for part in parts])
    got = np.concatenate([global_positions(part, counts, r) for r, part in enumerate(parts)])
    pos, _ = assign_slots(experts, 5, 3)
    np.testing.assert_array_equal(got, pos)
