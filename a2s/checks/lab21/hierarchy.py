"""Grader of exercise 21.4: hierarchical all-reduce on a two-level SimWorld.

Ground truth: a plain-loop sum. Budget on the slow links (``SimWorld.inter_bytes_sent``):
in all exactly ``2 (q-1) n`` bytes between ``q`` nodes (a bandwidth-optimal all-reduce of
each 1/g of the buffer), and no rank more than ``2 (q-1) ceil(ceil(n/g)/q)`` elements' bytes,
so the load is spread over every rank of a node rather than funnelled through a leader. A flat
ring over all ranks crosses the node boundary with more; leaders doing the inter-node
all-reduce of the whole buffer break the per-rank budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.lab21._truth import ALGORITHMS, check_values, run_sim
from a2s.checks.truths import loop_sum, rank_inputs
from minitorch.comm.simworld import SimWorld

__all__ = ["check_hierarchical"]

_RING = "minitorch.comm.allreduce:ring_all_reduce"
_BLOCKS = (
    *(a for a in ALGORITHMS if a != _RING),
    "minitorch.comm.hierarchical:hierarchical_all_reduce",
    "minitorch.comm.collectives:all_reduce",
)
_FLAT = (
    "Too many bytes cross between nodes: a flat all-reduce over all ranks ignores the topology. "
    "Reduce-scatter inside the node first, so only 1/g of the buffer per rank goes between "
    "nodes."
)
_LEADER = (
    "One rank per node carries the inter-node traffic: after the intra-node reduce-scatter "
    "every rank all-reduces its own chunk with the ranks of the same local index on the other "
    "nodes."
)


@grader("21.4", blocks=_BLOCKS, uses=(("21.1", "ring_all_reduce", _RING),), hand="ranks")
def check_hierarchical(hierarchical: Callable[..., Any]) -> str:
    """Exercise 21.4: intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather."""
    gen, fr = rng(2104), fresh_rng("21.4")
    specs: list[tuple[Callable[[str], str], int, int, int]] = [
        (str, p, g, n) for p, g, n in [(4, 2, 6), (6, 3, 10), (8, 4, 37), (8, 2, 9), (4, 4, 5)]
    ]
    for _ in range(4):
        q, g = int(fr.integers(1, 4)), int(fr.integers(1, 5))
        specs.append((fresh, q * g, g, int(fr.integers(0, 30))))
    spared = 0.0
    for i, (mark, p, g, n) in enumerate(specs):
        label = mark(f"hierarchical p={p} ranks_per_node={g} n={n}")
        xs = rank_inputs(gen if mark is str else fr, p, n, bool(i % 2))
        world = SimWorld(p, 1e-6, 1e-10, ranks_per_node=g, inter_alpha=1e-5, inter_beta=1e-8)
        outs = run_sim(hierarchical, "21.4", _BLOCKS, world, label, xs, [g] * p)
        check_values(label, outs, loop_sum(xs), "Did every rank run the final all-gather?")
        q, item, inter = p // g, xs[0].itemsize, list(world.inter_bytes_sent)
        total, cap = 2 * (q - 1) * n * item, 2 * (q - 1) * math.ceil(math.ceil(n / g) / q) * item
        if sum(inter) != total:
            raise CheckFailure(
                f"[{label}] right sums, but {sum(inter)} bytes crossed between nodes (per rank "
                f"{inter}); the budget is 2 (q-1) n = {total}. "
                + (_FLAT if sum(inter) > total else "")
            )
        if max(inter) > cap:
            raise CheckFailure(
                f"[{label}] right sums and total, but rank {inter.index(max(inter))} sent "
                f"{max(inter)} bytes between nodes, over the per-rank budget {cap}. {_LEADER}"
            )
        if q > 1 and n:
            spared = max(spared, 2 * (p - 1) / p * n * item * q / total)
    return (
        f"{len(specs)} two-level worlds (4 fresh) exact; inter-node bytes exactly 2 (q-1) n, "
        f"spread over every rank ({spared:.2f}x fewer than a flat ring at best)"
    )
