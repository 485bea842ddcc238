"""Dispatch and combine of a mixture-of-experts layer, as the all-to-all permutation it is.

With experts spread over devices (expert parallelism), dispatch is an all-to-all: every token
row travels to the device of each expert it was kept for. On one device the same exchange is a
permutation: sort the kept (token, choice) assignments by expert, stable in token order, so
expert i's tokens are the contiguous block ``counts[:i].sum() : counts[:i+1].sum()`` of the
sent buffer. ``counts[i] * d * itemsize`` bytes go to expert i; padding every expert to its
capacity instead (GShard's dense ``(E, C, d)`` dispatch tensor) sends ``E * C * d``.

Combine is the inverse: each expert output row goes back to its token, multiplied by its gate,
and a token's k rows are added (scatter-add); a dropped assignment contributes nothing.

    order, counts = dispatch_order(experts, keep, E)
    sent = dispatch(x, order, k)               # (sum(counts), d), grouped by expert
    y = combine(expert_out, order, gates, N)   # (N, d)

Lab: 10_moe
Paper: Lepikhin et al. 2020, GShard (dispatch/combine tensors, all-to-all); Fedus et al. 2021,
    Switch Transformers (expert parallelism); Gale et al. 2022, MegaBlocks (dropless grouping)
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "all_to_all_bytes",
    "combine",
    "dispatch",
    "dispatch_order",
    "padded_bytes",
]


def dispatch_order(
    experts: np.ndarray, keep: np.ndarray, num_experts: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return (order, counts): kept flat assignment ids grouped by expert, and rows per expert.

    experts, keep: (N, k); a flat id is ``token * k + choice``. order: (sum(keep),) int64,
    sorted by expert and, within an expert, by flat id; counts: (E,) int64.
    """
    flat_expert = experts.reshape(-1)  # (N*k,)
    kept = np.flatnonzero(keep.reshape(-1))
    order = kept[np.argsort(flat_expert[kept], kind="stable")]
    counts = np.bincount(flat_expert[kept], minlength=num_experts).astype(np.int64)
    return order.astype(np.int64), counts


def dispatch(x: np.ndarray, order: np.ndarray, k: int) -> np.ndarray:
    """Gather the token rows to send: x: (N, d) -> (len(order), d), grouped by expert."""
    return x[order // k]


def combine(
    expert_out: np.ndarray, order: np.ndarray, gates: np.ndarray, num_tokens: int
) -> np.ndarray:
    """Scatter-add gate-weighted expert outputs back to their tokens: -> (N, d)."""
    k = gates.shape[1]
    weighted = expert_out * gates.reshape(-1)[order][:, None]  # (M, d)
    y = np.zeros((num_tokens, expert_out.shape[1]), dtype=expert_out.dtype)
    np.add.at(y, order // k, weighted)  # add: a token's k rows land on the same row
    return y


def all_to_all_bytes(counts: np.ndarray, d: int, itemsize: int) -> np.ndarray:
    """Bytes sent to each expert by a dropless (grouped) dispatch: counts * d * itemsize."""
    return np.asarray(counts, dtype=np.int64) * d * itemsize


def padded_bytes(num_experts: int, capacity: int, d: int, itemsize: int) -> int:
    """Bytes of GShard's dense dispatch, every expert padded to its capacity: E * C * d."""
    return num_experts * capacity * d * itemsize
