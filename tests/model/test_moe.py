"""Dispatch/combine as a permutation, and the MoE layer against a torch loop over tokens."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.model import moe_dispatch as dsp
from minitorch.model.moe import MoE, z_loss_tensor
from minitorch.model.moe_router import assign_slots, router_z_loss, top_k_gating
from minitorch.model.moe_task import make_cluster_task, train_moe

pytestmark = pytest.mark.lab10


def routed(n: int, e: int, k: int, cap: int, seed: int = 0):
    logits = np.random.default_rng(seed).standard_normal((n, e))
    experts, gates = top_k_gating(logits, k)
    _, keep = assign_slots(experts, e, cap)
    return experts, gates, keep


@pytest.mark.parametrize("k", [1, 2])
def test_dispatch_groups_by_expert_and_combine_inverts_it(k: int) -> None:
    experts, gates, keep = routed(30, 4, k, cap=6)
    order, counts = dsp.dispatch_order(experts, keep, 4)
    assert counts.sum() == keep.sum() == len(order)
    assert np.array_equal(np.sort(order), np.flatnonzero(keep.reshape(-1)))  # a permutation
    sent_experts = experts.reshape(-1)[order]
    assert np.all(np.diff(sent_experts) >= 0)  # grouped by expert
    assert np.array_equal(np.bincount(sent_experts, minlength=4), counts)
    x = np.random.default_rng(1).standard_normal((30, 3))
    sent = dsp.dispatch(x, order, k)
    y = dsp.combine(sent, order, np.ones_like(gates), 30)  # identity experts, gates 1
    kept_per_token = keep.sum(axis=1)
    np.testing.assert_allclose(y, x * kept_per_token[:, None])


def test_bytes_per_expert() -> None:
    counts = np.array([3, 0, 5])
    assert dsp.all_to_all_bytes(counts, 4, 8).tolist() == [96, 0, 160]
    assert dsp.padded_bytes(3, 5, 4, 8) == 480


def test_moe_layer_matches_a_torch_loop_over_tokens() -> None:
    n, d, e, k = 24, 5, 4, 2
    layer = MoE(d, 7, e, k=k, capacity_factor=0.75, rng=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((n, d))
    xt = Tensor(x, requires_grad=True)
    y, stats = layer(xt)
    y.sum().backward()
    w = {name: torch.tensor(p.data, requires_grad=True) for name, p in layer.named_parameters()}
    xx = torch.tensor(x, requires_grad=True)
    p = torch.softmax(xx @ w["router.weight"].T, -1)
    experts = np.argsort(-p.detach().numpy(), axis=1, kind="stable")[:, :k]
    _, keep = assign_slots(experts, e, stats.capacity)
    out = []
    for t in range(n):
        g = p[t, experts[t]] / p[t, experts[t]].sum()
        row = torch.zeros(d, dtype=torch.float64)
        for j in range(k):
            if keep[t, j]:
                i = experts[t, j]
                h = torch.relu(xx[t] @ w[f"expert{i}.0.weight"].T + w[f"expert{i}.0.bias"])
                row = row + g[j] * (h @ w[f"expert{i}.2.weight"].T + w[f"expert{i}.2.bias"])
        out.append(row)
    want = torch.stack(out)
    want.sum().backward()
    np.testing.assert_allclose(y.data, want.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(xt.grad, xx.grad.numpy(), atol=1e-12)
    for name, param in layer.named_parameters():
        np.testing.assert_allclose(param.grad, w[name].grad.numpy(), atol=1e-12, err_msg=name)
    assert stats.counts.max() <= stats.capacity and stats.dropped == int((~keep).sum())


def test_aux_loss_tensors_match_numpy_and_torch() -> None:
    logits = np.random.default_rng(3).standard_normal((10, 4)) * 5
    lt = Tensor(logits, requires_grad=True)
    z = z_loss_tensor(lt)
    z.backward()
    tt = torch.tensor(logits, requires_grad=True)
    (torch.logsumexp(tt, -1) ** 2).mean().backward()
    assert z.item() == pytest.approx(router_z_loss(logits), rel=1e-12)
    np.testing.assert_allclose(lt.grad, tt.grad.numpy(), atol=1e-12)


def test_balancing_loss_lowers_the_imbalance() -> None:
    x, y, _ = make_cluster_task(2048, seed=0)
    cv = {}
    for coef in (0.0, 0.1):
        layer = MoE(8, 16, 4, rng=np.random.default_rng(0))
        log = train_moe(layer, x, y, steps=400, lr=0.2, balance_coef=coef)
        cv[coef] = float(np.mean(log.cv[-20:]))
    assert cv[0.1] < 0.3 < cv[0.0]
