"""Lab 20 experiments: simulated bytes per rank against the closed forms, and the simulator's
own overhead per message.

1. Bytes per rank of the reference collectives on SimWorld (p = 2..8, uneven n) divided by
   ``cost.bytes_sent``: exactly 1 when the simulator and the formulas agree.
2. SimWorld's wall time per message (thread baton hand-offs) for the naive all-reduce on 8
   ranks against a plain numpy sum of the same data: what the simulation costs.

Lab: 20_collectives
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.comm import collectives as C
from minitorch.comm import cost
from minitorch.comm.simworld import SimWorld


@register
def bytes_vs_formula() -> list[Figure]:
    worst = 0.0
    for p in range(2, 9):
        for n in (1, 7, 1000, 4097):
            world = SimWorld(p)
            xs = [np.ones(n) for _ in range(p)]
            for name, fn in (("all_reduce", C.all_reduce), ("reduce_scatter", C.reduce_scatter)):
                world.run(fn, xs, per_rank=True)
                want = [cost.bytes_sent(name, n, p, r) for r in range(p)]
                worst = max(
                    worst, max(abs(a - b) for a, b in zip(world.bytes_sent, want, strict=True))
                )
    return [Figure("simulated minus formula bytes per rank (worst)", worst, "B", "0: exact", "20")]


@register
def simulator_overhead() -> list[Figure]:
    p, xs = 8, [np.ones(1024) for _ in range(8)]
    world = SimWorld(p)
    with one_thread():
        t_sim, t_np = alternate(
            lambda: world.run(C.all_reduce, xs, per_rank=True), lambda: np.sum(xs, axis=0)
        )
    msgs = 2 * (p - 1)
    return [
        Figure("SimWorld time per message", t_sim / msgs * 1e6, "us", "thread hand-off", "20"),
        Figure("SimWorld all-reduce / numpy sum", t_sim / t_np, "x", "cost of simulating", "20"),
    ]
