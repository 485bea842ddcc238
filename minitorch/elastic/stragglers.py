"""Stragglers: one slow rank sets the pace of a synchronous step, and how to find it.

In synchronous data parallelism every rank waits in the gradient all-reduce for the last one
to arrive, so a step takes ``max_r c_r + t_comm`` where ``c_r`` is rank r's compute time
(:func:`sync_step_time`): one rank at ``f`` times the others' compute slows *everyone* by
about that factor, and the efficiency ``mean_r c_r / max_r c_r`` (:func:`efficiency`) falls.
The total step time cannot name the culprit (it is the same on every rank); the compute time
before the collective, or its mirror the time spent *waiting* in it, can: the straggler is the
rank that waits least. :func:`find_stragglers` flags ranks whose median compute time exceeds
``factor`` times the median of the *other* ranks' medians, over a window of steps (robust to
one noisy step; with two ranks the plain median would be the mean of the pair).

:func:`timed_steps` is the rank program that measures it on real gloo ranks
(:func:`minitorch.comm.torchdist.launch`): each step "computes" (``time.sleep``, scaled on
the slow ranks), then all-reduces a buffer with ``dist.all_reduce``; per step it records the
compute, the wait and the step time.

Lab: 32_fault_tolerance_elastic
Paper: Dean & Barroso, "The Tail at Scale", CACM 56(2), 2013; PyTorch documentation,
``torch.distributed`` (gloo all-reduce).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["efficiency", "find_stragglers", "sync_step_time", "timed_steps"]


def sync_step_time(compute: Sequence[float], comm: float = 0.0) -> float:
    """A synchronous step: the slowest rank's compute, then the collective."""
    if not len(compute):
        raise ValueError("need at least one rank")
    return float(max(compute)) + float(comm)


def efficiency(compute: Sequence[float]) -> float:
    """Useful fraction of the ranks' time: ``mean(c) / max(c)`` (1 without a straggler)."""
    c = np.asarray(compute, np.float64)
    return float(c.mean() / c.max()) if c.max() > 0 else 1.0


def find_stragglers(compute: np.ndarray, factor: float = 1.5) -> list[int]:
    """Ranks whose median compute time (over the rows: steps) exceeds ``factor`` x the
    median of the other ranks' medians. ``compute``: shape ``(steps, ranks)``."""
    c = np.asarray(compute, np.float64)
    if c.ndim != 2 or c.shape[1] < 2:
        raise ValueError(f"compute must be (steps, ranks >= 2), got shape {c.shape}")
    per_rank = np.median(c, axis=0)
    others = [np.median(np.delete(per_rank, r)) for r in range(len(per_rank))]
    return [int(r) for r in range(len(per_rank)) if per_rank[r] > factor * others[r]]


def timed_steps(
    comm: Any, steps: int, base_s: float, slow: Mapping[int, float], nbytes: int = 1 << 16
) -> dict[str, list[float]]:
    """On a gloo rank (``TorchDistComm``): ``steps`` steps of sleep-then-all-reduce; the
    rank's compute, wait and step seconds per step."""
    factor = float(slow.get(comm.rank, 1.0))
    buf = np.ones(nbytes // 8, np.float64)
    comm.torch_all_reduce(buf)  # warm the connections
    comm.barrier()
    out: dict[str, list[float]] = {"compute": [], "wait": [], "step": []}
    for _ in range(steps):
        t0 = time.perf_counter()
        time.sleep(base_s * factor)
        t1 = time.perf_counter()
        comm.torch_all_reduce(buf)
        t2 = time.perf_counter()
        out["compute"].append(t1 - t0)
        out["wait"].append(t2 - t1)
        out["step"].append(t2 - t0)
    return out
