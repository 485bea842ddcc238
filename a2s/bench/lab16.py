"""Lab 16 experiments: the simulator against the closed form, and what overlap buys.

1. Exposed all-reduce time of the simulated bucketed backward divided by the closed form
   ``max(c, k t + n c - L t)``, worst over bucket sizes and alpha-beta settings: exactly 1.
2. A GPT-2-medium-like backward (24 blocks of 12.6 M fp32 parameters, 4 ms each; ring
   all-reduce on 8 GPUs over 25 GB/s, alpha 20 us): step time with no overlap over step time
   with DDP's 25 MB buckets, and over the best bucket size.
3. FSDP-style forward of the same model (all-gathers of each block): on-demand over prefetch.
4. The simulator's own cost: wall time of a 2,000-op overlapped step on the Device against a
   plain loop computing the same all-reduce intervals.

Lab: 16_streams_and_overlap
"""

from __future__ import annotations

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.runtime.overlap import (
    best_bucket_bytes,
    exposed_uniform,
    overlap_step,
    prefetch_forward,
)

_L, _T, _G = 24, 4e-3, 12_600_000 * 4
_P, _BW, _ALPHA = 8, 25e9, 20e-6
_BETA = 2 * (_P - 1) / _P / _BW  # ring all-reduce: 2 (p-1)/p bytes per byte, per rank


@register
def exposed_vs_formula() -> list[Figure]:
    worst = 0.0
    for alpha, beta in ((0.5, 0.01), (0.05, 0.001), (2.0, 0.0), (0.0, 0.05)):
        for k in (1, 2, 3, 4, 6, 12):
            sim = overlap_step([1.0] * 12, [100] * 12, 100 * k, alpha, beta).exposed
            worst = max(worst, abs(sim / exposed_uniform(12, 1.0, 100, k, alpha, beta) - 1))
    return [Figure("simulated / closed-form exposed time - 1 (worst)", worst, "", "0: exact", "16")]


@register
def overlap_speedup() -> list[Figure]:
    t, g = [_T] * _L, [_G] * _L
    none = overlap_step(t, g, float("inf"), _ALPHA, _BETA).step
    ddp = overlap_step(t, g, 25 * 2**20, _ALPHA, _BETA)
    best = overlap_step(t, g, best_bucket_bytes(t, g, _ALPHA, _BETA), _ALPHA, _BETA).step
    fwd_none = prefetch_forward(t, g, _ALPHA, _BETA / 2, depth=0).makespan
    fwd_pre = prefetch_forward(t, g, _ALPHA, _BETA / 2, depth=1).makespan
    return [
        Figure(
            "step: no overlap / DDP 25 MB buckets", none / ddp.step, "x", "Li et al. 2020", "16"
        ),
        Figure("exposed comm with 25 MB buckets", ddp.exposed * 1e3, "ms", "last bucket", "16"),
        Figure("step: 25 MB buckets / best bucket", ddp.step / best, "x", ">= 1", "16"),
        Figure("forward: on-demand gather / prefetch", fwd_none / fwd_pre, "x", "FSDP", "16"),
    ]


def _plain(t: list[float], g: list[int], cap: float) -> list[tuple[float, float]]:
    out, clock, comm, size = [], 0.0, 0.0, 0
    for i, (ti, gi) in enumerate(zip(t, g, strict=True)):
        clock, size = clock + ti, size + gi
        if size >= cap or i == len(t) - 1:
            start = max(clock, comm)
            comm = start + _ALPHA + _BETA * size
            out.append((start, comm))
            size = 0
    return out


@register
def simulator_overhead() -> list[Figure]:
    t, g = [_T] * 1000, [_G] * 1000
    with one_thread():
        t_dev, t_loop = alternate(
            lambda: overlap_step(t, g, 2 * _G - 1, _ALPHA, _BETA), lambda: _plain(t, g, 2 * _G - 1)
        )
    return [
        Figure("Device simulation / plain loop", t_dev / t_loop, "x", "cost of the timeline", "16")
    ]
