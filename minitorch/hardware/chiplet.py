"""Chiplets: dies in one package joined by die-to-die links, and a layer placed across them.

A die's network on chip moves bytes between neighbouring routers over short wires; between
two dies of a package the bytes cross a **die-to-die (D2D) link** such as UCIe, whose
bandwidth per millimetre of die edge, latency and energy per bit depend on the package
(standard organic substrate or an advanced silicon bridge or interposer). A link is modelled by
three numbers: ``bandwidth`` (bytes/s, each direction), ``latency`` (s, one way) and
``pj_per_bit``. Moving ``b`` bytes over it takes ``latency + b / bandwidth`` and costs
``8 b pj_per_bit`` picojoules.

The link figures below are **illustrative inputs**, not values of the UCIe specification:
they keep the ordering the model needs (a D2D bit costs more energy and time than an on-die
one, the advanced package sits between the two) and are meant to be replaced by the figures
of a real package.

Placement: a layer cut into tiles exchanges ``traffic[i][j]`` bytes from tile ``i`` to tile
``j`` per step. Tiles go on ``dies`` dies of at most ``capacity`` tiles each; every ordered
pair of dies has its own link (one per direction). A placement meets a time budget when every
used link finishes its bytes within it; among those, the cheapest in energy wins.

Lab: 27_accelerator_architecture
Paper: Das Sharma et al. 2022, "Universal Chiplet Interconnect Express (UCIe): an open
industry standard for innovations with chiplets at package level", IEEE Trans. CPMT
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ON_DIE",
    "UCIE_ADVANCED",
    "UCIE_STANDARD",
    "Link",
    "die_link_loads",
    "layer_traffic",
    "link_seconds",
    "place_on_dies",
    "placement_energy",
    "transfer_joules",
]


@dataclass(frozen=True)
class Link:
    """One direction of a link: bytes/s, one-way seconds, picojoules per bit, and a source."""

    name: str
    bandwidth: float
    latency: float
    pj_per_bit: float
    source: str = "illustrative"

    def as_dict(self) -> dict[str, float]:
        return {"bandwidth": self.bandwidth, "latency": self.latency, "pj_per_bit": self.pj_per_bit}


_ILL = "illustrative input, not a specification value"
ON_DIE = Link("on-die NoC link", 256e9, 1e-9, 0.1, _ILL)
UCIE_ADVANCED = Link("D2D, advanced package (illustrative)", 128e9, 2e-9, 0.3, _ILL)
UCIE_STANDARD = Link("D2D, standard package (illustrative)", 32e9, 4e-9, 0.6, _ILL)


def link_seconds(nbytes: float, link: Link | dict[str, float]) -> float:
    """Time for ``nbytes`` over one link direction: latency plus bytes / bandwidth (0 if idle)."""
    bw, lat = _field(link, "bandwidth"), _field(link, "latency")
    return 0.0 if nbytes <= 0 else lat + nbytes / bw


def transfer_joules(nbytes: float, link: Link | dict[str, float]) -> float:
    """Energy of ``nbytes`` over a link: 8 bits a byte times its picojoules per bit."""
    return 8.0 * nbytes * _field(link, "pj_per_bit") * 1e-12


def _field(link: Link | dict[str, float], name: str) -> float:
    return float(link[name] if isinstance(link, dict) else getattr(link, name))


def die_link_loads(traffic: Sequence[Sequence[float]], placement: Sequence[int]) -> dict:
    """``{(a, b): bytes}`` sent from die ``a`` to die ``b != a`` in one step."""
    loads: dict[tuple[int, int], float] = {}
    for i, row in enumerate(traffic):
        for j, nbytes in enumerate(row):
            a, b = placement[i], placement[j]
            if a != b and nbytes:
                loads[(a, b)] = loads.get((a, b), 0.0) + float(nbytes)
    return loads


def placement_energy(
    traffic: Sequence[Sequence[float]],
    placement: Sequence[int],
    d2d: Link | dict[str, float],
    on_die: Link | dict[str, float],
) -> float:
    """Joules of one step: bytes between dies at the D2D cost, the rest at the on-die cost."""
    total = 0.0
    for i, row in enumerate(traffic):
        for j, nbytes in enumerate(row):
            if i != j:
                total += transfer_joules(nbytes, d2d if placement[i] != placement[j] else on_die)
    return total


def _placements(n: int, dies: int, capacity: int) -> Iterator[list[int]]:
    """Every placement up to renaming the dies (die numbers in order of first use)."""

    def grow(prefix: list[int], counts: list[int]) -> Iterator[list[int]]:
        if len(prefix) == n:
            yield list(prefix)
            return
        used = len(counts)
        for die in range(min(used + 1, dies)):
            if die == used:
                counts.append(0)
            if counts[die] < capacity:
                counts[die] += 1
                yield from grow([*prefix, die], counts)
                counts[die] -= 1
            if die == used:
                counts.pop()

    yield from grow([], [])


def place_on_dies(
    traffic: Sequence[Sequence[float]],
    dies: int,
    capacity: int,
    d2d: Link | dict[str, float],
    on_die: Link | dict[str, float],
    budget_s: float,
) -> list[int] | None:
    """The least-energy placement whose every D2D link direction finishes within ``budget_s``
    (``None`` when none does), by exhaustive search over placements up to die renaming."""
    best: tuple[float, list[int]] | None = None
    for placement in _placements(len(traffic), dies, capacity):
        loads = die_link_loads(traffic, placement)
        if any(link_seconds(b, d2d) > budget_s for b in loads.values()):
            continue
        energy = placement_energy(traffic, placement, d2d, on_die)
        if best is None or energy < best[0]:
            best = (energy, placement)
    return None if best is None else best[1]


def layer_traffic(config: Any, tokens: int) -> tuple[list[str], list[list[int]]]:
    """One transformer layer of ``config`` (a ``GPTConfig``) cut into 8 tiles, and the bf16
    activation bytes each tile sends each other tile in a forward step of ``tokens`` tokens."""
    d, hd = config.d_model, config.d_model // config.n_head
    kv = config.n_kv_head * hd
    d_ff = config.d_ff or int(8 * d / 3 + 7) // 8 * 8
    names = ["norm1 + q_proj", "k_proj", "v_proj", "attention", "o_proj + norm2", "w1", "w3", "w2"]
    x, k, f = 2 * tokens * d, 2 * tokens * kv, 2 * tokens * d_ff
    edges = {
        (0, 1): x,  # the normed input to k_proj and v_proj
        (0, 2): x,
        (0, 3): x,  # q
        (0, 4): x,  # the residual stream
        (1, 3): k,
        (2, 3): k,
        (3, 4): x,  # the heads' outputs
        (4, 5): x,  # the normed hidden state to both up projections
        (4, 6): x,
        (4, 7): x,  # the residual stream
        (5, 7): f,  # SwiGLU: w2 multiplies silu(w1 x) by w3 x
        (6, 7): f,
    }
    matrix = [[edges.get((i, j), 0) for j in range(8)] for i in range(8)]
    return names, matrix
