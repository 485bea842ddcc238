"""Lab 23 experiments: DDP on 2 gloo processes vs 1 process, bucket size, and the timeline.

1. One SGD step of a float64 MLP (course autograd, batch 64): 1 process on the whole batch
   vs 2 gloo processes with :class:`~minitorch.parallel.data.DDP` on half each (one bucket,
   25 MiB), and 2 processes with 64 KiB buckets. Both DDP sides run in the same spawn and
   alternate step by step; the single-process side runs in the parent.
   The course DDP launches each bucket's all-reduce when backward has finished computing it
   (readiness replayed from the graph after ``loss.backward()``): no concurrency, so buckets
   can only add latency here, and on 2 shared cores two ranks compete for the same CPUs.
2. What the alpha-beta timeline predicts at scale: exposed communication of GPT-2 small's
   gradients (340 MB, 10 GB/s, alpha 0.5 ms) with one bucket vs 25 MiB buckets.

Lab: 23_data_parallel_zero
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from a2s.bench import Figure, median_time, register

__all__ = ["ddp_two_processes", "timeline_at_scale"]

_WIDTHS = [64, 256, 256, 10]


def _model(seed: int = 0) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    out = []
    for a, b in itertools.pairwise(_WIDTHS):
        out += [gen.standard_normal((a, b)) / np.sqrt(a), np.zeros(b)]
    return out


def _step(params: list[Any], x: np.ndarray, y: np.ndarray) -> Any:
    from minitorch.autograd import Tensor

    h = Tensor(x)
    for k in range(0, len(params), 2):
        h = h @ params[k] + params[k + 1]
        h = h.tanh() if k + 2 < len(params) else h
    return ((h - Tensor(y)) ** 2).mean()


def _ddp_rank(comm: Any, repeats: int) -> dict[str, float]:
    from minitorch.autograd import Tensor
    from minitorch.parallel.data import DDP

    gen = np.random.default_rng(1)
    x, y = gen.standard_normal((64, _WIDTHS[0])), gen.standard_normal((64, _WIDTHS[-1]))
    rows = np.array_split(np.arange(64), comm.world_size)[comm.rank]
    times: dict[str, list[float]] = {"one": [], "small": []}
    ts = [Tensor(a, requires_grad=True) for a in _model()]
    ddps = {"one": DDP(comm, ts), "small": DDP(comm, ts, bucket_bytes=64 * 1024)}
    for _ in range(repeats):
        for name, ddp in ddps.items():
            comm.barrier()
            t0 = time.perf_counter()
            ddp.backward(_step(ts, x[rows], y[rows]))
            for t in ts:
                t.data -= 0.01 * np.asarray(t.grad)
                t.grad = None
            times[name].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


@register
def ddp_two_processes() -> list[Figure]:
    from minitorch.autograd import Tensor
    from minitorch.comm.torchdist import launch

    gen = np.random.default_rng(1)
    x, y = gen.standard_normal((64, _WIDTHS[0])), gen.standard_normal((64, _WIDTHS[-1]))
    ts = [Tensor(a, requires_grad=True) for a in _model()]

    def one() -> None:
        _step(ts, x, y).backward()
        for t in ts:
            t.grad = None

    single = median_time(one, repeats=15)
    ddp = launch("a2s.bench.lab23:_ddp_rank", 2, 15)[0]
    return [
        Figure(
            "DDP step, 2 gloo processes / 1 process",
            ddp["one"] / single,
            "x",
            "1.0 = no speed-up; < 1 means the halved batch paid for the all-reduce",
        ),
        Figure(
            "DDP step, 64 KiB buckets / one 25 MiB bucket",
            ddp["small"] / ddp["one"],
            "x",
            "> 1: without concurrent all-reduce, more buckets only add latency",
        ),
        Figure("1-process step (batch 64)", single * 1e3, "ms", "context"),
    ]


@register
def timeline_at_scale() -> list[Figure]:
    from minitorch.parallel.timeline import exposed_vs_bucket_size

    h = 768
    layer = [h, h, 3 * h * h, 3 * h, h * h, h, h, h, 4 * h * h, 4 * h, 4 * h * h, h]
    nbytes = [4 * n for n in layer] * 12
    compute = [n / 5e9 for n in nbytes]
    one, ddp = exposed_vs_bucket_size(compute, nbytes, [2**31, 25 * 2**20], 5e-4, 1e-10)
    return [
        Figure(
            "GPT-2 small, exposed comm: 25 MiB buckets / one bucket",
            ddp / one,
            "x",
            "alpha-beta timeline, 10 GB/s, alpha 0.5 ms, backward 68 ms",
        ),
    ]
