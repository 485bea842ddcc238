"""Expert parallelism: a mixture-of-experts layer with its experts spread over the ranks.

Rank r holds ``n_r`` tokens (rows of the global batch, in rank order), the replicated
router ``W_r: (d, E)`` and the weights of its ``E / p`` experts (expert e lives on rank
``e // (E / p)``). One forward:

1. route locally: top-k gating of lab 10 (:func:`minitorch.model.moe_router.top_k_gating`);
2. agree on the drops: an all-gather of every rank's per-choice counts ``(k, E)`` gives each
   assignment its position in the GLOBAL priority order of lab 10 (every first choice, in
   token order, before any second choice), so exactly the same assignments are dropped as
   on one process: ``capacity = ceil(k N / E * capacity_factor)`` with ``N = sum n_r``;
3. dispatch (all-to-all): the kept rows go to the rank of their expert, grouped by expert;
   dropped rows never travel; no padding to the capacity;
4. each rank runs its experts on what it received and sends the outputs back (combine);
5. the origin adds ``gate * expert(x)`` per kept assignment (a dropped one adds nothing).

Float bytes a rank sends: ``d itemsize`` per kept row it dispatches to another rank, and per
row it returns (combine) for rows other ranks dispatched to it.

Lab: 26_context_expert_parallel_planner
Paper: Lepikhin et al. 2020, GShard (expert all-to-all, capacity, priority); Fedus et al.
    2021, Switch Transformers (expert parallelism, eq. 3); Rajbhandari et al. 2022,
    DeepSpeed-MoE
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.comm.collectives import all_gather, all_to_all
from minitorch.comm.protocol import Communicator
from minitorch.model.moe_router import expert_capacity, top_k_gating

__all__ = ["ExpertWeights", "expert_mlp", "expert_parallel_moe", "global_positions"]

ExpertWeights = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # W1, b1, W2, b2


def expert_mlp(x: np.ndarray, w: ExpertWeights) -> np.ndarray:
    """Lab 10's expert: Linear, ReLU, Linear (``MLP([d, d_hidden, d])``)."""
    w1, b1, w2, b2 = w
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2  # type: ignore[no-any-return]


def global_positions(experts: np.ndarray, all_counts: np.ndarray, rank: int) -> np.ndarray:
    """Slot of each local assignment (n_r, k) in its expert's buffer, in global priority.

    ``all_counts[s, j, e]``: how many of rank s's tokens chose expert e as choice j.
    Slot = (every rank's choices j' < j for e) + (earlier ranks' choice j for e) + (earlier
    tokens of this rank with choice j = e).
    """
    n, k = experts.shape
    totals = all_counts.sum(axis=0)  # (k, E)
    pos = np.zeros((n, k), dtype=np.int64)
    for j in range(k):
        e = experts[:, j]
        onehot = np.eye(totals.shape[1], dtype=np.int64)[e]  # (n, E)
        before = (np.cumsum(onehot, axis=0) - onehot)[np.arange(n), e]
        pos[:, j] = totals[:j, e].sum(axis=0) + all_counts[:rank, j, e].sum(axis=0) + before
    return pos


def expert_parallel_moe(
    comm: Communicator,
    x: np.ndarray,
    w_router: np.ndarray,
    local_experts: Sequence[ExpertWeights],
    k: int = 1,
    capacity_factor: float = 1.25,
) -> tuple[np.ndarray, int]:
    """Return (y, dropped): this rank's MoE output (n_r, d) and its dropped assignments."""
    p, r = comm.world_size, comm.rank
    per = len(local_experts)
    num_experts = per * p
    experts, gates = top_k_gating(x @ w_router, k)  # (n, k) each
    counts = np.stack([np.bincount(experts[:, j], minlength=num_experts) for j in range(k)])
    all_counts = all_gather(comm, counts[None].astype(np.int64))  # (p, k, E)
    capacity = expert_capacity(int(all_counts[:, 0].sum()), num_experts, capacity_factor, k)
    keep = global_positions(experts, all_counts, r) < capacity
    flat = np.flatnonzero(keep.reshape(-1))  # kept flat ids token * k + choice
    flat = flat[np.argsort(experts.reshape(-1)[flat], kind="stable")]  # grouped by expert
    owner = experts.reshape(-1)[flat] // per
    sends = [flat[owner == q] for q in range(p)]
    rows = all_to_all(comm, [x[ids // k] for ids in sends])  # dispatch
    ids = all_to_all(comm, [experts.reshape(-1)[s] for s in sends])  # which expert, per row
    outs = []
    for got, eid in zip(rows, ids, strict=True):
        out = np.zeros_like(got)
        for e in np.unique(eid):
            sel = eid == e
            out[sel] = expert_mlp(got[sel], local_experts[int(e) - r * per])
        outs.append(out)
    back = all_to_all(comm, outs)  # combine
    y = np.zeros_like(x)
    for q in range(p):
        np.add.at(y, sends[q] // k, back[q] * gates.reshape(-1)[sends[q]][:, None])
    return y, int((~keep).sum())
