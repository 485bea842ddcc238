"""Grader of exercise 27.5: XY-routed link loads on a mesh, and a ring placement under a budget.

``xy_link_loads(traffic, width, height)`` must give the bytes on every outgoing link
(``[y, x, d]``, ``d`` = E, W, N, S) under XY routing, against a plain walk written here, on
named patterns and fresh random traffic. ``ring_placement(width, height)`` places the 16 ranks
of a tensor-parallel matmul on the 4 x 4 mesh; its bidirectional ring all-reduce step must
load no link with more than one chunk (the budget), counted with the grader's own router.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import close
from a2s.checks.core import assert_true, fresh_rng, grader, plain

__all__ = ["check_mesh"]

_N = "minitorch.hardware.noc"
_STEP = ((1, 0), (-1, 0), (0, 1), (0, -1))


def _loads(
    traffic: list[tuple[tuple[int, int], tuple[int, int], float]],
    w: int,
    h: int,
    y_first: bool = False,
) -> np.ndarray:
    out = np.zeros((h, w, 4))
    for (x, y), (tx, ty), nbytes in traffic:
        moves = [(0 if tx > x else 1, abs(tx - x)), (2 if ty > y else 3, abs(ty - y))]
        for d, count in moves[::-1] if y_first else moves:
            for _ in range(count):
                out[y, x, d] += nbytes
                x, y = x + _STEP[d][0], y + _STEP[d][1]
    return out


def _ring(placement: list[tuple[int, int]], chunk: float) -> list:
    p = len(placement)
    fwd = [(placement[i], placement[(i + 1) % p], chunk) for i in range(p)]
    return fwd + [(placement[i], placement[(i - 1) % p], chunk) for i in range(p)]


_NAMED = [
    ("one message east", 3, 2, [((0, 0), (2, 0), 5.0)]),
    ("one message north-west: x first, then y", 3, 3, [((2, 0), (0, 2), 7.0)]),
    ("to itself: no link", 2, 2, [((1, 1), (1, 1), 9.0)]),
    ("two messages share a link", 4, 1, [((0, 0), (3, 0), 2.0), ((1, 0), (2, 0), 3.0)]),
    (
        "opposite directions are separate links",
        2,
        1,
        [((0, 0), (1, 0), 1.0), ((1, 0), (0, 0), 4.0)],
    ),
]
_YX = "Route x first, then y (dimension-order XY routing): the turn happens in the target's column."
_BYTES = "Add the message's bytes to every link it crosses, not 1 per message."
_EW = "Direction 0 is east (+x), 1 west (-x): your east and west are swapped."
_NS = "Direction 2 is north (+y), 3 south (-y): your north and south are swapped."
_ARRIVE = (
    "Count the bytes at the router the link *leaves* (x, y before the hop), not the one it "
    "arrives at."
)
_GENERIC = (
    "loads[y, x, d] is the bytes leaving router (x, y) in direction d (0 E +x, 1 W, 2 N +y, "
    "3 S), summed over the messages that cross that link."
)


def _arrival(traffic: list, w: int, h: int) -> np.ndarray:
    out = np.zeros((h, w, 4))
    for (x, y), (tx, ty), nbytes in traffic:
        for d, count in [(0 if tx > x else 1, abs(tx - x)), (2 if ty > y else 3, abs(ty - y))]:
            for _ in range(count):
                x, y = x + _STEP[d][0], y + _STEP[d][1]
                out[y, x, d] += nbytes
    return out


def _mesh_hint(got: object, traffic: list, w: int, h: int) -> str:
    try:
        arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return _GENERIC
    want = _loads(traffic, w, h)
    if arr.shape == (w, h, 4) and (w, h) != (h, w):
        return "Index the array [y, x, d]: shape (height, width, 4)."
    for variant, hint in [
        (_loads(traffic, w, h, True), _YX),
        (_loads([(s, t, 1.0) for s, t, _ in traffic], w, h), _BYTES),
        (want[..., [1, 0, 2, 3]], _EW),
        (want[..., [0, 1, 3, 2]], _NS),
        (_arrival(traffic, w, h), _ARRIVE),
    ]:
        if arr.shape == variant.shape and np.allclose(arr, variant):
            return hint
    return _GENERIC


@grader(
    "27.5",
    blocks=(
        f"{_N}:xy_link_loads",
        f"{_N}:xy_route",
        f"{_N}:snake_ring",
        f"{_N}:congestion",
        f"{_N}:ring_traffic",
        f"{__name__}:_loads",
        f"{__name__}:_arrival",
    ),
    hand="parts",
)
def check_mesh(xy_link_loads: Callable[..., object], ring_placement: Callable[..., object]) -> str:
    """Exercise 27.5: link loads under XY routing, and a one-hop ring on a 4 x 4 mesh."""
    new = fresh_rng("27.5")
    cases = list(_NAMED)
    for i in range(4):
        w, h = (int(v) for v in new.integers(2, 6, 2))
        traffic = [
            (
                (int(new.integers(w)), int(new.integers(h))),
                (int(new.integers(w)), int(new.integers(h))),
                float(new.integers(1, 100)),
            )
            for _ in range(int(new.integers(3, 12)))
        ]
        cases.append((fresh(f"random traffic {i} on {w}x{h}"), w, h, traffic))
    for label, w, h, traffic in cases:
        got = plain(xy_link_loads(list(traffic), w, h), case=label)
        want = _loads(traffic, w, h)
        hint = _mesh_hint(got, traffic, w, h)
        close(
            np.asarray(got, dtype=np.float64),
            want,
            case=label,
            what="loads[y, x, direction]",
            hint=hint,
        )
    place = plain(ring_placement(4, 4), case="4x4 mesh")
    nodes = [tuple(int(v) for v in p) for p in place] if isinstance(place, (list, tuple)) else []
    assert_true(
        sorted(nodes) == [(x, y) for x in range(4) for y in range(4)],
        "ring_placement(4, 4) must list every (x, y) of the 4x4 mesh exactly once, rank order.",
    )
    chunk = 64 * 1024.0  # one chunk of the all-reduce, bytes
    loads = _loads(_ring(nodes, chunk), 4, 4)  # type: ignore[arg-type]
    row_major = _loads(_ring([(i % 4, i // 4) for i in range(16)], chunk), 4, 4)
    assert_true(
        loads.max() <= chunk,
        f"Over the link budget: the busiest link carries {loads.max() / chunk:.0f} chunks in one "
        "ring step (budget: 1). Neighbours in the ring must be neighbours on the mesh, including "
        "the last rank and the first: find a cycle through all 16 nodes with one-hop steps.",
    )
    return (
        f"{len(cases)} traffic patterns (4 fresh) match XY routing; your ring loads the busiest "
        f"link with {loads.max() / chunk:.0f} chunk (row-major: {row_major.max() / chunk:.0f}), "
        f"{int((loads > 0).sum())} of 48 links used"
    )
