"""The MoE router against plain loops, torch and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from minitorch.model import moe_router as r

pytestmark = pytest.mark.lab10


def loop_slots(experts: np.ndarray, num_experts: int, capacity: int):
    """GShard's priority as a plain loop: choice 0 of every token first, then choice 1."""
    n, k = experts.shape
    position, keep = np.zeros((n, k), int), np.zeros((n, k), bool)
    filled = [0] * num_experts
    for j in range(k):
        for t in range(n):
            e = experts[t, j]
            position[t, j] = filled[e]
            keep[t, j] = filled[e] < capacity
            filled[e] += 1
    return position, keep


def test_top_k_gating_hand_case() -> None:
    logits = np.log(np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]]))
    experts, gates = r.top_k_gating(logits, 1)
    assert experts[:, 0].tolist() == [1, 0]
    np.testing.assert_allclose(gates[:, 0], [0.6, 0.5])
    experts, gates = r.top_k_gating(logits, 2)
    assert experts.tolist() == [[1, 2], [0, 2]]
    np.testing.assert_allclose(gates, [[2 / 3, 1 / 3], [0.625, 0.375]])


def test_top_k_gating_matches_torch_topk() -> None:
    logits = np.random.default_rng(0).standard_normal((50, 6))
    experts, gates = r.top_k_gating(logits, 2)
    p = torch.softmax(torch.from_numpy(logits), -1)
    vals, idx = torch.topk(p, 2, dim=-1)
    assert np.array_equal(experts, idx.numpy())
    np.testing.assert_allclose(gates, (vals / vals.sum(-1, keepdim=True)).numpy(), rtol=1e-12)


def test_capacity_formula() -> None:
    assert r.expert_capacity(10, 4, 1.0) == 3  # ceil(2.5)
    assert r.expert_capacity(8, 4, 1.25, k=2) == 5
    assert r.expert_capacity(512, 8, 1.0) == 64


@pytest.mark.parametrize("k", [1, 2, 3])
def test_slots_match_a_plain_loop(k: int) -> None:
    g = np.random.default_rng(k)
    logits = g.standard_normal((40, 5)) + np.array([2.0, 0, 0, 0, 0])  # expert 0 popular
    experts, _ = r.top_k_gating(logits, k)
    cap = r.expert_capacity(40, 5, 1.0, k)
    position, keep = r.assign_slots(experts, 5, cap)
    want_pos, want_keep = loop_slots(experts, 5, cap)
    assert np.array_equal(position, want_pos) and np.array_equal(keep, want_keep)
    counts = np.bincount(experts[keep], minlength=5)
    assert counts.max() <= cap
    wanted = np.bincount(experts.reshape(-1), minlength=5)
    assert r.dropped_count(wanted, cap) == int((~keep).sum())


def test_hand_computed_drops() -> None:
    experts = np.array([[0], [0], [1], [0], [0]])  # 4 tokens want expert 0, capacity 2
    position, keep = r.assign_slots(experts, 2, 2)
    assert position[:, 0].tolist() == [0, 1, 0, 2, 3]
    assert keep[:, 0].tolist() == [True, True, True, False, False]


def test_load_balancing_loss_formula() -> None:
    probs = np.full((8, 4), 0.25)
    assert r.load_balancing_loss(probs, np.arange(8) % 4) == pytest.approx(1.0)
    one_hot = np.eye(4)[np.zeros(8, int)]
    assert r.load_balancing_loss(one_hot, np.zeros(8, int)) == pytest.approx(4.0)
    g = np.random.default_rng(1)
    probs = r.router_probs(g.standard_normal((30, 5)))
    first = probs.argmax(1)
    f = np.array([(first == i).mean() for i in range(5)])
    assert r.load_balancing_loss(probs, first) == pytest.approx(5 * sum(f * probs.mean(0)))


def test_z_loss_matches_torch_logsumexp() -> None:
    logits = np.random.default_rng(2).standard_normal((20, 6)) * 30
    want = (torch.logsumexp(torch.from_numpy(logits), -1) ** 2).mean().item()
    assert r.router_z_loss(logits) == pytest.approx(want, rel=1e-12)


def test_coefficient_of_variation() -> None:
    assert r.coefficient_of_variation(np.array([5, 5, 5, 5])) == 0.0
    assert r.coefficient_of_variation(np.array([8, 0, 0, 0])) == pytest.approx(math.sqrt(3))
