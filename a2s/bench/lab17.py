"""Lab 17 experiments: device allocations per training step and reserved memory, caching vs
naive, on the tiny GPT's allocation trace; and what a device allocation saves in host time.

1. Device allocations (cudaMalloc calls) per training step, from replays of 1, 2 and 3 steps:
   the caching allocator's warm step needs none, the naive one pays one per tensor.
2. Reserved peak over the live-bytes lower bound, both allocators, on the shipped trace and on
   a 4x bigger batch (whose large tensors land in 20 MiB shared segments).
3. Host time of a replay, caching against naive, alternated in one thread: the bookkeeping a
   cache costs in Python (the device calls here are free; on a GPU each one is ~10-100 us).

Lab: 17_caching_allocator
"""

from __future__ import annotations

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.runtime.allocator import CachingAllocator, Device, NaiveAllocator
from minitorch.runtime.trace import lower_bound, replay, training_step_trace


def _device_allocs(steps: int, kind: type) -> int:
    return int(replay(training_step_trace(steps=steps), kind(Device()))["device_allocs"][-1])


@register
def device_allocs_per_step() -> list[Figure]:
    out = []
    for kind, name in ((CachingAllocator, "caching"), (NaiveAllocator, "naive")):
        n = [_device_allocs(s, kind) for s in (1, 2, 3)]
        out.append(Figure(f"{name}: device allocations, step 1", n[0], "calls", "cold cache", "17"))
        out.append(
            Figure(
                f"{name}: device allocations, step 3",
                n[2] - n[1],
                "calls",
                "caching: 0 once warm",
                "17",
            )
        )
    return out


@register
def reserved_over_lower_bound() -> list[Figure]:
    out = []
    for batch in (8, 32):
        trace = training_step_trace(steps=3, batch=batch)
        bound = lower_bound(trace)
        for kind, name in ((CachingAllocator, "caching"), (NaiveAllocator, "naive")):
            peak = float(replay(trace, kind(Device()))["reserved"].max())
            out.append(
                Figure(
                    f"{name}, batch {batch}: reserved peak / lower bound",
                    peak / bound,
                    "x",
                    "lab budget 1.25x at batch 8",
                    "17",
                )
            )
    return out


@register
def replay_host_time() -> list[Figure]:
    trace = training_step_trace(steps=3)
    with one_thread():
        t_cache, t_naive = alternate(
            lambda: replay(trace, CachingAllocator(Device())),
            lambda: replay(trace, NaiveAllocator(Device())),
        )
    return [
        Figure(
            "replay host time, caching / naive",
            t_cache / t_naive,
            "x",
            "bookkeeping of best fit in Python",
            "17",
        )
    ]
