"""Lab 21 experiments: simulated ring bytes against 2(p-1)/p N, and the ring on real gloo
processes against gloo's own all-reduce.

1. Bytes per rank of the reference ring on SimWorld (p = 2..8, n divisible by p) divided by
   ``2 (p-1)/p`` of the buffer: exactly 1.
2. Bus bandwidth of the reference ring (send/recv over TorchDistComm) and of
   ``dist.all_reduce`` on 2 and 4 local gloo processes at 1M and 16M float32 elements; both
   run alternately in the same processes (one launch per world size, one thread per rank),
   best of 3. Reported: gloo's bus bandwidth over the ring's (target: within 2x).

Lab: 21_ring_allreduce
"""

from __future__ import annotations

import numpy as np

from minitorch.bench import Figure, register
from minitorch.comm import cost
from minitorch.comm.allreduce import ring_all_reduce
from minitorch.comm.simworld import SimWorld
from minitorch.comm.torchdist import launch


@register
def ring_bytes_vs_formula() -> list[Figure]:
    worst = 0.0
    for p in range(2, 9):
        n = 840  # divisible by 2..8
        world = SimWorld(p)
        world.run(ring_all_reduce, [np.ones(n)] * p, per_rank=True)
        ideal = 2 * (p - 1) / p * 8 * n
        worst = max(worst, max(abs(b / ideal - 1) for b in world.bytes_sent))
    return [Figure("ring bytes per rank / 2(p-1)/p N, worst gap", worst, "", "0: exact", "21")]


@register
def ring_vs_gloo() -> list[Figure]:
    sizes = [1 << 20, 1 << 24]
    out = []
    for p in (2, 4):
        secs = launch("minitorch.checks.lab21.workers:time_ring", p, None, "ring", sizes, 3)[0]
        for n, (t_ring, t_gloo) in zip(sizes, secs, strict=True):
            ring = cost.bus_bandwidth("all_reduce", 4 * n, p, t_ring)
            gloo = cost.bus_bandwidth("all_reduce", 4 * n, p, t_gloo)
            tag = f"p={p}, {n >> 20}M floats"
            out.append(Figure(f"ring bus bandwidth, {tag}", ring / 1e9, "GB/s", "gloo below", "21"))
            out.append(Figure(f"gloo / ring bus bandwidth, {tag}", gloo / ring, "x", "<= 2", "21"))
    return out
