"""Lab 26 experiments: the planner's speed and its estimates against the published figures,
and what ring attention costs over one-process attention on the simulated world.

1. Layouts evaluated per second (enumeration, memory and step time of every layout) for the
   1T setup, and the estimated percentage of peak of each published setup divided by the
   reported one (1.0: the cost model reproduces the paper).
2. Ring attention on SimWorld (p = 4) against one-process attention of the same rows,
   alternated on one thread: the price of the blocks and the simulated messages.

Lab: 26_context_expert_parallel_planner
"""

from __future__ import annotations

import time

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.comm.simworld import SimWorld
from minitorch.parallel import context
from minitorch.parallel.planner import PUBLISHED, enumerate_layouts, estimate, plan


@register
def planner_speed_and_accuracy() -> list[Figure]:
    pub = PUBLISHED["1T"]
    layouts = enumerate_layouts(pub.model, pub.cluster, pub.batch)
    t0, rounds = time.perf_counter(), 20
    for _ in range(rounds):
        for lay in layouts:
            estimate(pub.model, pub.cluster, lay, pub.batch)
    rate = rounds * len(layouts) / (time.perf_counter() - t0)
    figs = [
        Figure(
            "planner: layouts evaluated per second (1T setup)", rate, "1/s", "closed forms", "26"
        )
    ]
    for key, setup in PUBLISHED.items():
        best = plan(setup.model, setup.cluster, setup.batch)[0]
        figs.append(
            Figure(
                f"{key}: estimated / reported % of peak ({best.layout})",
                best.util["paper"] / setup.util,
                "x",
                setup.source,
                "26",
            )
        )
    return figs


@register
def ring_vs_full_attention() -> list[Figure]:
    p, gen = 4, np.random.default_rng(0)
    q, k, v = (gen.standard_normal((4, 256, 32)) for _ in range(3))
    shards = [np.split(a, p, axis=-2) for a in (q, k, v)]
    world = SimWorld(p)
    with one_thread():
        t_ring, t_full = alternate(
            lambda: world.run(context.ring_attention, *shards, [True] * p, per_rank=True),
            lambda: context.attention(q, k, v, True),
        )
    return [
        Figure(
            "ring attention on SimWorld (p=4) / one-process attention",
            t_ring / t_full,
            "x",
            "causal: the ring skips the p(p-1)/2 masked blocks",
            "26",
        )
    ]
