"""A routing-friendly task for the MoE lab, generated in code, and its training loop.

Tokens come from C Gaussian clusters in R^d; each cluster has its own random linear map, so the
target is ``y = tanh(A_c x)``: one expert per cluster fits it exactly, while one shared expert
cannot. Training with and without the load-balancing loss shows how a router left alone
concentrates tokens on a few experts (Shazeer et al. 2017's "self-reinforcing" imbalance).

Lab: 10_moe
Paper: Shazeer et al. 2017 (imbalance without a balancing loss); Fedus et al. 2021
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from minitorch.autograd import Tensor
from minitorch.model.moe import MoE
from minitorch.model.moe_router import coefficient_of_variation

__all__ = ["TrainLog", "make_cluster_task", "train_moe"]


def make_cluster_task(
    n: int, d: int = 8, clusters: int = 4, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (x: (n, d), y: (n, d), cluster: (n,)) float64 tokens of a mixture of clusters."""
    g = np.random.default_rng(seed)
    centers = g.standard_normal((clusters, d)) * 2.0
    maps = g.standard_normal((clusters, d, d)) / np.sqrt(d)
    cluster = g.integers(0, clusters, size=n)
    x = centers[cluster] + 0.5 * g.standard_normal((n, d))
    y = np.tanh(np.einsum("nij,nj->ni", maps[cluster], x))  # (n, d)
    return x, y, cluster


@dataclass(slots=True)
class TrainLog:
    """Per step: task loss, coefficient of variation of the expert loads, dropped tokens."""

    loss: list[float] = field(default_factory=list)
    cv: list[float] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)


def train_moe(
    layer: MoE,
    x: np.ndarray,
    y: np.ndarray,
    *,
    steps: int,
    lr: float = 0.1,
    balance_coef: float = 0.0,
    z_coef: float = 0.0,
    batch: int = 128,
    seed: int = 0,
) -> TrainLog:
    """Plain SGD on mean squared error plus the weighted auxiliary losses; returns the log.

    The load is measured on the wanted assignments (before capacity), so the CV shows what the
    router asks for, not what capacity lets through.
    """
    g = np.random.default_rng(seed)
    log = TrainLog()
    params = layer.parameters()
    for _ in range(steps):
        rows = g.choice(len(x), size=batch, replace=False)
        out, stats = layer(Tensor(x[rows]))
        diff = out - Tensor(y[rows])
        task = (diff * diff).mean()
        loss = task + stats.balance_loss * balance_coef + stats.z_loss * z_coef
        for p in params:
            p.grad = None
        loss.backward()
        for p in params:
            if p.grad is not None:
                p.data = p.data - lr * p.grad
        log.loss.append(task.item())
        log.cv.append(coefficient_of_variation(stats.wanted))
        log.dropped.append(stats.dropped)
        log.counts.append(stats.wanted)
    return log
