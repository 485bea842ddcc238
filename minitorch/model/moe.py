"""A mixture-of-experts layer on the course's ``Tensor``: a router and E small MLP experts.

    layer = MoE(d_model=8, d_hidden=16, num_experts=4, k=1, capacity_factor=1.25, rng=rng)
    y, stats = layer(x)              # x: (N, d) Tensor -> y: (N, d) Tensor
    loss = task_loss + 0.01 * stats.balance_loss + 1e-3 * stats.z_loss

Forward: logits = x W_r (no bias); top-k gating, capacity and slots from
:mod:`minitorch.model.moe_router` (plain numpy: routing decisions are not differentiable);
dispatch as the grouped permutation of :mod:`minitorch.model.moe_dispatch`; each expert runs
on its contiguous block; combine scatter-adds gate-weighted outputs. Gradients reach the
router through the gates (gathered from the softmax Tensor) and the auxiliary losses.

Lab: 10_moe
Paper: Shazeer et al. 2017; Lepikhin et al. 2020, GShard; Fedus et al. 2021, Switch
    Transformers; Zoph et al. 2022, ST-MoE (router z-loss)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minitorch.autograd import Tensor, softmax
from minitorch.model.moe_dispatch import dispatch_order
from minitorch.model.moe_router import assign_slots, expert_capacity
from minitorch.nn import MLP, Linear, Module

__all__ = ["MoE", "MoEStats", "balance_loss_tensor", "z_loss_tensor"]


@dataclass(slots=True)
class MoEStats:
    """What one forward routed: loads, drops and the two auxiliary losses (Tensors)."""

    counts: np.ndarray  # (E,) assignments kept per expert
    wanted: np.ndarray  # (E,) assignments asked of each expert before capacity
    dropped: int
    capacity: int
    balance_loss: Tensor
    z_loss: Tensor


def balance_loss_tensor(probs: Tensor, first_choice: np.ndarray) -> Tensor:
    """E * sum_i f_i P_i with f constant (argmax is not differentiable) and P = mean(probs)."""
    n, e = probs.shape
    f = np.bincount(first_choice, minlength=e).astype(probs.dtype) / n  # (E,)
    return (probs.mean(axis=0) * Tensor(f)).sum() * float(e)


def z_loss_tensor(logits: Tensor) -> Tensor:
    """mean_n logsumexp(logits_n)^2, the max shift as a constant (it cancels in the value)."""
    m = Tensor(logits.data.max(axis=-1, keepdims=True))  # (N, 1)
    lse = (logits - m).exp().sum(axis=-1).log() + m.reshape(-1)  # (N,)
    return (lse * lse).mean()


class MoE(Module):
    """Top-k routed MLP experts with a capacity; dropped tokens get a zero output."""

    def __init__(
        self,
        d_model: int,
        d_hidden: int,
        num_experts: int,
        k: int = 1,
        capacity_factor: float = 1.25,
        *,
        rng: np.random.Generator | None = None,
        dtype: type = np.float64,
    ) -> None:
        super().__init__()
        rng = rng if rng is not None else np.random.default_rng()
        self.num_experts, self.k, self.capacity_factor = num_experts, k, capacity_factor
        self.router = Linear(d_model, num_experts, bias=False, rng=rng, dtype=dtype)
        for i in range(num_experts):  # attributes register the modules
            setattr(self, f"expert{i}", MLP([d_model, d_hidden, d_model], rng=rng, dtype=dtype))

    def expert(self, i: int) -> Module:
        return getattr(self, f"expert{i}")  # type: ignore[no-any-return]

    def forward(self, x: Tensor) -> tuple[Tensor, MoEStats]:  # type: ignore[override]
        n, e, k = x.shape[0], self.num_experts, self.k
        logits = self.router(x)  # (N, E)
        probs = softmax(logits, axis=-1)
        experts = np.argsort(-probs.data, axis=-1, kind="stable")[:, :k]  # (N, k)
        gates = probs[np.arange(n)[:, None], experts]  # (N, k), differentiable
        if k > 1:
            gates = gates / gates.sum(axis=-1, keepdims=True)
        capacity = expert_capacity(n, e, self.capacity_factor, k)
        _, keep = assign_slots(experts, e, capacity)
        order, counts = dispatch_order(experts, keep, e)
        flat_gates = gates.reshape(-1)[order]  # (M,) gate of each sent row
        sent = x[order // k]  # (M, d): the all-to-all send buffer
        y = Tensor(np.zeros(x.shape, dtype=x.dtype))
        start = 0
        for i in range(e):
            rows = slice(start, start + int(counts[i]))
            start += int(counts[i])
            if rows.stop == rows.start:
                continue
            out = self.expert(i)(sent[rows]) * flat_gates[rows].reshape(-1, 1)  # (c_i, d)
            back = np.zeros((n, rows.stop - rows.start), dtype=x.dtype)  # scatter as a matmul
            back[order[rows] // k, np.arange(rows.stop - rows.start)] = 1.0
            y = y + Tensor(back) @ out
        wanted = np.bincount(experts.reshape(-1), minlength=e)
        stats = MoEStats(
            counts=counts,
            wanted=wanted,
            dropped=int((~keep).sum()),
            capacity=capacity,
            balance_loss=balance_loss_tensor(probs, experts[:, 0]),
            z_loss=z_loss_tensor(logits),
        )
        return y, stats
