"""The router of a mixture-of-experts layer: top-k gating, capacity, token dropping, aux losses.

A router scores each of ``N`` tokens against ``E`` experts (``logits: (N, E)``), sends each
token to its ``k`` best experts, and weights their outputs by gates:

    top-1 (Switch):  gate = p_e, the router probability of the chosen expert
    top-2 (GShard):  gates = p_e1, p_e2 renormalized to sum to 1

An expert processes at most ``capacity = ceil(k N / E * capacity_factor)`` tokens (a fixed
buffer, so shapes stay static). Slots are filled in priority order: every token's first choice
before any second choice, then token order (GShard's policy); assignments past the capacity are
*dropped* (the token skips that expert and keeps its residual path).

Auxiliary losses keep the router healthy:

    load balancing  L_aux = E * sum_i f_i P_i    f_i: fraction of tokens whose first choice is i,
                                                 P_i: mean router probability of expert i
    router z-loss   L_z   = mean_n (logsumexp_i logits_ni)^2

Lab: 10_moe
Paper: Shazeer et al. 2017 (sparsely-gated MoE); Lepikhin et al. 2020, GShard (top-2, capacity,
    priority); Fedus et al. 2021, Switch Transformers (top-1, eq. 4-6); Zoph et al. 2022,
    ST-MoE (router z-loss, eq. 5)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "assign_slots",
    "coefficient_of_variation",
    "dropped_count",
    "expert_capacity",
    "load_balancing_loss",
    "router_probs",
    "router_z_loss",
    "top_k_gating",
]


def router_probs(logits: np.ndarray) -> np.ndarray:
    """Softmax over experts; logits: (N, E) -> probs: (N, E), rows summing to 1."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def top_k_gating(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (experts, gates), both (N, k): best experts first, ties to the lower index.

    k = 1 keeps the Switch gate p_e; k >= 2 renormalizes the k gates to sum to 1 (GShard).
    """
    probs = router_probs(logits)
    experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]  # (N, k)
    gates = np.take_along_axis(probs, experts, axis=-1)  # (N, k)
    if k > 1:
        gates = gates / gates.sum(axis=-1, keepdims=True)
    return experts, gates


def expert_capacity(num_tokens: int, num_experts: int, capacity_factor: float, k: int = 1) -> int:
    """Slots per expert: ceil(k N / E * capacity_factor) (Switch eq. 3, times k for top-k)."""
    return math.ceil(k * num_tokens * capacity_factor / num_experts)


def assign_slots(
    experts: np.ndarray, num_experts: int, capacity: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return (position, keep), both (N, k): each assignment's slot in its expert's buffer.

    Priority: choice j = 0 of every token, in token order, then choice j = 1, ... An assignment
    is kept when its position is below ``capacity``.
    """
    n, k = experts.shape
    position = np.zeros((n, k), dtype=np.int64)
    filled = np.zeros(num_experts, dtype=np.int64)
    for j in range(k):  # every first choice before any second choice
        onehot = np.eye(num_experts, dtype=np.int64)[experts[:, j]]  # (N, E)
        before = np.cumsum(onehot, axis=0) - onehot  # same expert, earlier tokens
        position[:, j] = (before + filled)[np.arange(n), experts[:, j]]
        filled += onehot.sum(axis=0)
    return position, position < capacity


def dropped_count(counts: np.ndarray, capacity: int) -> int:
    """Assignments dropped when expert i receives counts[i] and holds ``capacity``."""
    return int(np.maximum(np.asarray(counts) - capacity, 0).sum())


def load_balancing_loss(probs: np.ndarray, first_choice: np.ndarray) -> float:
    """Switch's auxiliary loss E * sum_i f_i P_i; 1.0 when routing is perfectly uniform.

    probs: (N, E) router probabilities; first_choice: (N,) each token's top-1 expert.
    """
    n, e = probs.shape
    f = np.bincount(first_choice, minlength=e) / n  # fraction of tokens routed to i
    p = probs.mean(axis=0)  # mean router probability of i
    return float(e * np.dot(f, p))


def router_z_loss(logits: np.ndarray) -> float:
    """ST-MoE's z-loss: mean over tokens of logsumexp(logits)^2; keeps logits small."""
    m = logits.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=-1)) + m[:, 0]  # (N,)
    return float(np.mean(lse**2))


def coefficient_of_variation(load: np.ndarray) -> float:
    """std / mean of the tokens per expert: 0 if balanced, sqrt(E - 1) if one expert takes all."""
    load = np.asarray(load, dtype=np.float64)
    return float(load.std() / load.mean()) if load.mean() > 0 else 0.0
