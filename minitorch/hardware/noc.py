"""A 2-D mesh network-on-chip: XY routing, link loads, hop latency and congestion.

Cores sit at ``(x, y)`` on a ``width x height`` mesh; each router has four outgoing links,
``E`` (+x), ``W`` (-x), ``N`` (+y), ``S`` (-y). **XY (dimension-order) routing** moves a message
along x first, then along y: deadlock-free and deterministic, so the links a traffic pattern
uses are known in advance. ``loads[y, x, d]`` is the number of bytes leaving router ``(x, y)``
in direction ``d``; the pattern takes at least ``max(loads) / link_bandwidth`` seconds (the
busiest link serialises its messages) plus ``hops x hop_latency`` for the longest route.

Tensor-parallel matmuls end in an all-reduce; a ring all-reduce sends each rank's chunk to the
next rank (a bidirectional ring sends to both neighbours). On a mesh, where the ranks sit
decides whether each ring step crosses one link or
several, and how many messages share the busiest link.

Lab: 27_accelerator_architecture
Paper: Dally and Towles 2001, "Route packets, not wires: on-chip interconnection networks", DAC
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "DIRECTIONS",
    "congestion",
    "pattern_seconds",
    "ring_traffic",
    "snake_ring",
    "xy_link_loads",
    "xy_route",
]

DIRECTIONS = ("E", "W", "N", "S")
_STEP = {0: (1, 0), 1: (-1, 0), 2: (0, 1), 3: (0, -1)}

Node = tuple[int, int]
Message = tuple[Node, Node, float]  # (source, destination, bytes)


def xy_route(src: Node, dst: Node) -> list[tuple[int, int, int]]:
    """The links ``(x, y, direction)`` a message crosses, x first then y."""
    (x, y), (tx, ty) = src, dst
    links = []
    while x != tx:
        d = 0 if tx > x else 1
        links.append((x, y, d))
        x += _STEP[d][0]
    while y != ty:
        d = 2 if ty > y else 3
        links.append((x, y, d))
        y += _STEP[d][1]
    return links


def xy_link_loads(traffic: Sequence[Message], width: int, height: int) -> np.ndarray:
    """``(height, width, 4)`` bytes on each outgoing link under XY routing."""
    loads = np.zeros((height, width, 4))
    for src, dst, nbytes in traffic:
        for x, y, d in xy_route(src, dst):
            loads[y, x, d] += nbytes
    return loads


def congestion(traffic: Sequence[Message], width: int, height: int) -> int:
    """The most messages that share one link (1: no two messages ever contend)."""
    count = xy_link_loads([(s, t, 1.0) for s, t, _ in traffic], width, height)
    return int(count.max(initial=0))


def pattern_seconds(
    traffic: Sequence[Message], width: int, height: int, link_bw: float, hop_latency: float
) -> float:
    """Lower bound on a pattern's time: busiest link's bytes / bandwidth + longest route's hops."""
    loads = xy_link_loads(traffic, width, height)
    hops = max((len(xy_route(s, t)) for s, t, _ in traffic), default=0)
    return float(loads.max(initial=0.0)) / link_bw + hops * hop_latency


def ring_traffic(placement: Sequence[Node], nbytes: float, both: bool = True) -> list[Message]:
    """One step of a (bidirectional) ring all-reduce: rank ``i`` sends ``nbytes`` to rank
    ``i + 1`` and, when ``both``, another ``nbytes`` to rank ``i - 1`` (mod p)."""
    p = len(placement)
    out = [(placement[i], placement[(i + 1) % p], nbytes) for i in range(p)]
    if both:
        out += [(placement[i], placement[(i - 1) % p], nbytes) for i in range(p)]
    return out


def snake_ring(width: int, height: int) -> list[Node]:
    """A placement whose ring crosses one link per step (a Hamiltonian cycle; even ``height``).

    Column 0 is the way back: go up it, then snake over columns 1..width-1 row by row downward.
    """
    if height % 2 or width < 2:
        raise ValueError("a one-hop ring on a mesh needs an even height and width >= 2")
    order: list[Node] = [(0, y) for y in range(height)]
    for i, y in enumerate(range(height - 1, -1, -1)):
        xs = range(1, width) if i % 2 == 0 else range(width - 1, 0, -1)
        order += [(x, y) for x in xs]
    return order
