"""Resharding a ZeRO checkpoint for a new world size: each new rank reads only what it owns.

A sharded checkpoint of a world of ``N`` ranks holds, for every flattened parameter of ``n``
elements, rank ``k``'s chunk ``[lo_k, hi_k)`` (:func:`minitorch.comm.collectives.chunk_bounds`:
``n // N`` elements each and one more for the first ``n % N`` ranks). After a node loss
(``M < N``) or growth (``M > N``) rank ``r`` of the new world owns ``[a, b)`` of
``chunk_bounds(n, M)``; it needs from old shard ``k`` exactly the intersection
``[max(a, lo_k), min(b, hi_k))``, read at offset ``- lo_k`` inside that shard. The plan is a
pure function of ``(n, N, M, r)``: no rank reassembles the whole array, each reads
``b - a`` elements in total, from the old shards overlapping ``[a, b)`` only. That is the
load-time resharding of PyTorch DCP (``torch.distributed.checkpoint``: a ``LoadPlan`` of
``ReadItem``s, each a byte range of a stored chunk) and of ByteCheckpoint.

Lab: 32_fault_tolerance_elastic
Paper: S. Rajbhandari et al., "ZeRO", SC 2020 (the chunk layout); B. Wan et al.,
"ByteCheckpoint: A Unified Checkpointing System for Large Foundation Model Development",
NSDI 2025 (load-time resharding by read plans).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minitorch.comm.collectives import chunk_bounds

__all__ = ["read_plan", "reshard"]


def read_plan(numel: int, old_world: int, new_world: int, rank: int) -> list[tuple[int, int, int]]:
    """``(old_rank, lo, hi)``: the element ranges, local to each old shard, that ``rank`` of
    ``new_world`` reads (old shards in order, empty intersections left out)."""
    a, b = chunk_bounds(numel, new_world)[rank]
    plan = []
    for k, (lo, hi) in enumerate(chunk_bounds(numel, old_world)):
        s, e = max(a, lo), min(b, hi)
        if s < e:
            plan.append((k, s - lo, e - lo))
    return plan


def reshard(
    shards: Sequence[Any], numel: int, new_world: int, rank: int, dtype: Any = np.float32
) -> np.ndarray:
    """Rank ``rank``'s chunk in a world of ``new_world``, read from the old ranks' shards
    (``shards[k].read(lo, hi)``: elements ``lo:hi`` of old shard ``k``) by :func:`read_plan`."""
    parts = [
        np.asarray(shards[k].read(lo, hi))
        for k, lo, hi in read_plan(numel, len(shards), new_world, rank)
    ]
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)
