"""Ground truth of exercise 27.6 (a layer's tiles on dies under a die-to-die link budget).

Written here, independent of ``minitorch.hardware.chiplet``: every assignment of tiles to
dies is enumerated with ``itertools.product`` (kept when its die numbers appear in order of
first use, since the dies are interchangeable), each is costed with plain loops, and the
cheapest one that meets the budget is the truth. The switches model the mistakes a hint
names: both directions of a die pair counted as one link, latency forgotten, latency charged
to idle links too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

__all__ = ["best_placement", "d2d_loads", "energy_of", "link_time", "over_budget", "placements"]

Traffic = Sequence[Sequence[float]]


def d2d_loads(traffic: Traffic, dies: Sequence[int], directed: bool = True) -> dict:
    """Bytes on each die-to-die link: ``(from, to)``, or ``(low, high)`` when not directed."""
    out: dict[tuple[int, int], float] = {}
    n = len(traffic)
    for i in range(n):
        for j in range(n):
            a, b = dies[i], dies[j]
            if a == b or not traffic[i][j]:
                continue
            key = (a, b) if directed else (min(a, b), max(a, b))
            out[key] = out.get(key, 0.0) + float(traffic[i][j])
    return out


def link_time(nbytes: float, d2d: dict, latency: bool = True) -> float:
    """Seconds one link direction needs for ``nbytes``: latency plus bytes over bandwidth."""
    return (d2d["latency"] if latency else 0.0) + nbytes / d2d["bandwidth"]


def over_budget(
    traffic: Traffic,
    dies: Sequence[int],
    d2d: dict,
    budget: float,
    directed: bool = True,
    latency: bool = True,
    idle: bool = False,
) -> list[tuple[tuple[int, int], float]]:
    """The links, with their seconds, that miss the budget (idle links too when ``idle``)."""
    loads = d2d_loads(traffic, dies, directed)
    if idle:
        used = sorted(set(dies))
        for a in used:
            for b in used:
                if a != b:
                    loads.setdefault((a, b) if directed else (min(a, b), max(a, b)), 0.0)
    slack = budget * (1 + 1e-12)
    times = [(k, link_time(v, d2d, latency)) for k, v in sorted(loads.items())]
    return [(k, t) for k, t in times if t > slack]


def energy_of(traffic: Traffic, dies: Sequence[int], d2d: dict, on_die: dict) -> float:
    """Joules of one step: 8 bits a byte, at the D2D or the on-die picojoules per bit."""
    cut = kept = 0.0
    n = len(traffic)
    for i in range(n):
        for j in range(n):
            if i != j:
                if dies[i] == dies[j]:
                    kept += float(traffic[i][j])
                else:
                    cut += float(traffic[i][j])
    return 8e-12 * (cut * d2d["pj_per_bit"] + kept * on_die["pj_per_bit"])


def _canonical(dies: Sequence[int]) -> bool:
    seen = -1
    for d in dies:
        if d > seen + 1:
            return False
        seen = max(seen, d)
    return True


def placements(n: int, n_dies: int, capacity: int) -> Iterator[tuple[int, ...]]:
    """Every placement of ``n`` tiles within ``capacity``, die numbers in order of first use."""
    for dies in itertools.product(range(n_dies), repeat=n):
        if _canonical(dies) and max(dies.count(d) for d in set(dies)) <= capacity:
            yield dies


def best_placement(
    traffic: Traffic,
    n_dies: int,
    capacity: int,
    d2d: dict,
    on_die: dict,
    budget: float,
    **variant: bool,
) -> tuple[float, list[int]] | None:
    """``(joules, dies)`` of the cheapest placement within the budget, or ``None``."""
    best: tuple[float, list[int]] | None = None
    for dies in placements(len(traffic), n_dies, capacity):
        if over_budget(traffic, dies, d2d, budget, **variant):
            continue
        e = energy_of(traffic, dies, d2d, on_die)
        if best is None or e < best[0] * (1 - 1e-12):
            best = (e, list(dies))
    return best
