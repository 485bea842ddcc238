"""An alpha-beta timeline of DDP's overlap: how much all-reduce time backward fails to hide.

Backward computes the gradients from the last parameter to the first; parameter ``i`` takes
``compute[i]`` seconds, so its gradient is ready when every parameter after it and itself
are done. A bucket may start its all-reduce when its last gradient is ready and the one
communication channel is free (buckets go in order, one at a time); it takes
``alpha + beta * bytes`` seconds. The *exposed* communication is what runs after backward
ends: ``max(0, end of the last all-reduce - end of backward)``.

One bucket (no overlap) exposes ``alpha + beta * total_bytes``. Tiny buckets hide almost all
the bytes but pay ``alpha`` per bucket; the best size lies in between.

Lab: 23_data_parallel_zero
Paper: S. Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel
Training", VLDB 2020 (Fig. 2 and Section 3.2.3, bucket size vs overlap); R. Hockney (1994),
the alpha-beta model.
"""

from __future__ import annotations

from collections.abc import Sequence

from minitorch.parallel.data import assign_buckets

__all__ = ["bucket_schedule", "exposed_comm", "exposed_vs_bucket_size"]


def bucket_schedule(
    compute: Sequence[float],
    nbytes: Sequence[int],
    buckets: Sequence[Sequence[int]],
    alpha: float,
    beta: float,
) -> tuple[float, list[tuple[float, float]]]:
    """End of backward, and ``(start, end)`` of each bucket's all-reduce, in bucket order."""
    n = len(compute)
    ready = [0.0] * n
    t = 0.0
    for i in reversed(range(n)):  # backward: the last parameter's gradient first
        t += compute[i]
        ready[i] = t
    spans: list[tuple[float, float]] = []
    free = 0.0
    for bucket in buckets:
        start = max(free, max(ready[i] for i in bucket))
        free = start + alpha + beta * sum(nbytes[i] for i in bucket)
        spans.append((start, free))
    return t, spans


def exposed_comm(
    compute: Sequence[float],
    nbytes: Sequence[int],
    buckets: Sequence[Sequence[int]],
    alpha: float,
    beta: float,
) -> float:
    """Seconds of all-reduce left after backward ends (0 when fully hidden)."""
    end, spans = bucket_schedule(compute, nbytes, buckets, alpha, beta)
    return max(0.0, (spans[-1][1] if spans else 0.0) - end)


def exposed_vs_bucket_size(
    compute: Sequence[float],
    nbytes: Sequence[int],
    sizes: Sequence[int],
    alpha: float,
    beta: float,
) -> list[float]:
    """Exposed communication for each bucket size in ``sizes`` (bytes)."""
    return [exposed_comm(compute, nbytes, assign_buckets(nbytes, s), alpha, beta) for s in sizes]
