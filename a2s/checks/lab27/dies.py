"""Grader of exercise 27.6: a layer's tiles placed on dies under a die-to-die link budget.

``place_on_dies(traffic, dies, capacity, d2d, on_die, budget_s)`` returns one die per tile (or
``None`` when no placement fits). The grader counts everything itself with the plain loops of
``_truth``: the capacity of every die, the bytes on every die-to-die link direction and its
time (latency + bytes / bandwidth) against the budget, and the energy, which must equal the
least energy of any placement within the budget (found by exhaustive search). Named cases are
the tiny GPT's layer on 2 and 4 dies of two packages, and one case per mistake a hint names;
fresh random cases are drawn each run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.lab27 import _truth as truth
from minitorch.model.train import TINY

__all__ = ["check_place_on_dies", "place_cases"]

_C = "minitorch.hardware.chiplet"
_T = "a2s.checks.lab27._truth"

# illustrative link figures (the lab's prose says why they are not UCIe's own)
ON_DIE = {"bandwidth": 256e9, "latency": 1e-9, "pj_per_bit": 0.1}
ADVANCED = {"bandwidth": 128e9, "latency": 2e-9, "pj_per_bit": 0.3}
STANDARD = {"bandwidth": 32e9, "latency": 4e-9, "pj_per_bit": 0.6}
_SLOW = {"bandwidth": 1e9, "latency": 1e-6, "pj_per_bit": 0.5}  # small cases: 1 kB = 1 us
_SLOW_ON = {"bandwidth": 4e9, "latency": 1e-7, "pj_per_bit": 0.1}


def _tiny_layer(tokens: int = 256) -> list[list[int]]:
    d, kv = TINY.d_model, TINY.n_kv_head * (TINY.d_model // TINY.n_head)
    f = TINY.d_ff or int(8 * d / 3 + 7) // 8 * 8  # SwiGLU's hidden width
    x, k, ff = 2 * tokens * d, 2 * tokens * kv, 2 * tokens * f
    edges = {(0, 1): x, (0, 2): x, (0, 3): x, (0, 4): x, (1, 3): k, (2, 3): k, (3, 4): x}
    edges |= {(4, 5): x, (4, 6): x, (4, 7): x, (5, 7): ff, (6, 7): ff}
    return [[edges.get((i, j), 0) for j in range(8)] for i in range(8)]


def _m(n: int, edges: dict[tuple[int, int], int]) -> list[list[int]]:
    return [[1000 * edges.get((i, j), 0) for j in range(n)] for i in range(n)]


Case = tuple[str, list[list[int]], int, int, dict, dict, float]
_LAYER = _tiny_layer()
_NAMED: list[Case] = [
    ("tiny GPT layer, 2 dies of 4, advanced package, 1 us", _LAYER, 2, 4, ADVANCED, ON_DIE, 1e-6),
    ("tiny GPT layer, 4 dies of 2, advanced package, 1 us", _LAYER, 4, 2, ADVANCED, ON_DIE, 1e-6),
    ("tiny GPT layer, 4 dies of 2, standard package, 3 us", _LAYER, 4, 2, STANDARD, ON_DIE, 3e-6),
    (
        "tiny GPT layer, 2 dies of 4, standard package, 2 us: none fits",
        _LAYER,
        2,
        4,
        STANDARD,
        ON_DIE,
        2e-6,
    ),
    (
        "the cheapest cut overloads one link",
        _m(5, {(0, 2): 1, (1, 4): 8, (4, 0): 3, (4, 1): 4, (4, 2): 5}),
        3,
        2,
        _SLOW,
        _SLOW_ON,
        6e-6,
    ),
    (
        "each direction is its own link",
        _m(
            5,
            {
                (0, 3): 1,
                (1, 0): 3,
                (1, 2): 8,
                (1, 4): 7,
                (2, 1): 7,
                (2, 3): 1,
                (3, 0): 2,
                (3, 1): 3,
            },
        ),
        2,
        3,
        _SLOW,
        _SLOW_ON,
        6e-6,
    ),
    (
        "a link's time includes its latency",
        _m(4, {(2, 0): 5, (2, 1): 4, (3, 0): 4}),
        2,
        2,
        _SLOW,
        _SLOW_ON,
        5e-6,
    ),
    (
        "an idle link takes no time: budget under one latency",
        _m(4, {(0, 1): 5, (1, 0): 5, (2, 3): 5, (3, 2): 5}),
        2,
        2,
        _SLOW,
        _SLOW_ON,
        0.5e-6,
    ),
    (
        "a chain that no placement fits",
        _m(4, {(0, 1): 4, (1, 2): 4, (2, 3): 4}),
        2,
        2,
        _SLOW,
        _SLOW_ON,
        2e-6,
    ),
]

_DIRECTIONS = (
    "Each direction of a die pair is its own link (a->b and b->a have separate lanes): "
    "budget them separately, do not add their bytes."
)
_LATENCY = "A link's time is its latency plus bytes / bandwidth: add the latency."
_IDLE = "A link that carries no bytes takes no time: only used links count against the budget."
_NONE = "When no placement meets the budget, return None (not the least bad placement)."
_SEARCH = (
    "Search every placement (dies ** tiles is small here) and keep the least energy among "
    "those within the budget."
)


def _fresh_cases(new: np.random.Generator) -> list[Case]:
    out: list[Case] = []
    for i in range(3):
        n, dies = int(new.integers(6, 9)), int(new.choice([2, 4]))
        cap = -(-n // dies) + int(dies == 2 and new.integers(0, 2))  # slack on 2 dies only
        traffic = (new.random((n, n)) < 0.4) * new.integers(1, 64, (n, n)) * 512
        np.fill_diagonal(traffic, 0)
        t = traffic.astype(int).tolist()
        d2d = {
            "bandwidth": float(new.choice([16e9, 32e9, 64e9])),
            "latency": 3e-9,
            "pj_per_bit": float(new.choice([0.4, 0.6])),
        }
        free = truth.best_placement(t, dies, cap, d2d, ON_DIE, 1.0)
        worst = (
            max(
                [truth.link_time(b, d2d) for b in truth.d2d_loads(t, free[1]).values()]
                or [d2d["latency"]]
            )
            if free
            else d2d["latency"]
        )
        budget = float(worst * new.uniform(0.7, 0.95))
        out.append(
            (fresh(f"random layer {i}: {n} tiles, {dies} dies"), t, dies, cap, d2d, ON_DIE, budget)
        )
    return out


def place_cases() -> list[Case]:
    """The named cases of 27.6 (the lab's plot and tests use them too)."""
    return list(_NAMED)


def _read(got: Any, label: str, n: int, dies: int, cap: int) -> list[int] | None:
    if got is None:
        return None
    ok = isinstance(got, (list, tuple, np.ndarray)) and len(got) == n
    ok = ok and all(
        isinstance(v, (int, np.integer)) or (isinstance(v, float) and v.is_integer()) for v in got
    )
    assert_true(
        ok, f"[{label}] return a list of {n} die numbers, one per tile (or None); got {got!r}."
    )
    place = [int(v) for v in got]
    assert_true(
        all(0 <= v < dies for v in place),
        f"[{label}] die numbers run 0 .. {dies - 1}; got {place}.",
    )
    most = max(place.count(d) for d in set(place))
    assert_true(
        most <= cap,
        f"[{label}] a die holds {most} tiles, over its capacity of {cap}: "
        f"each die holds at most {cap} (the layer cannot all sit on one die).",
    )
    return place


def _one(student: Callable[..., object], case: Case) -> str:
    label, traffic, dies, cap, d2d, on_die, budget = case
    args = (traffic, dies, cap, d2d, on_die, budget)
    got = plain(student(*copy.deepcopy(args)), case=label)
    place = _read(got, label, len(traffic), dies, cap)
    want = truth.best_placement(*args)
    if want is None:
        late = place is not None and truth.over_budget(traffic, place, d2d, budget)
        assert_true(
            place is None,
            f"[{label}] no placement meets the {budget * 1e6:g} us budget"
            f"{' (yours misses it)' if late else ''}. {_NONE}",
        )
        return "none fits"
    if place is None:
        hint = _SEARCH
        if truth.best_placement(*args, directed=False) is None:
            hint = _DIRECTIONS
        elif truth.best_placement(*args, idle=True) is None:
            hint = _IDLE
        assert_true(
            False,
            f"[{label}] you returned None, but {want[1]} meets the budget "
            f"({want[0] * 1e9:.4g} nJ). {hint}",
        )
        return ""
    late = truth.over_budget(traffic, place, d2d, budget)
    if late:
        (a, b), secs = late[0]
        hint = (
            _LATENCY
            if not truth.over_budget(traffic, place, d2d, budget, latency=False)
            else "Check every link direction's latency + bytes / bandwidth before you keep a "
            "placement."
        )
        assert_true(
            False,
            f"[{label}] over the link budget: die {a} -> die {b} needs "
            f"{secs * 1e6:.3g} us, the budget is {budget * 1e6:.3g} us. {hint}",
        )
    energy = truth.energy_of(traffic, place, d2d, on_die)
    if energy > want[0] * (1 + 1e-9):
        und = truth.best_placement(*args, directed=False)
        hint = _DIRECTIONS if und and abs(und[0] - energy) <= 1e-9 * energy else _SEARCH
        assert_true(
            False,
            f"[{label}] your placement {place} is within the budget but costs "
            f"{energy * 1e9:.4g} nJ; {want[1]} costs {want[0] * 1e9:.4g} nJ. {hint}",
        )
    return f"{energy * 1e9:.3g} nJ"


@grader(
    "27.6",
    blocks=(
        f"{_C}:place_on_dies",
        f"{_C}:placement_energy",
        f"{_C}:die_link_loads",
        f"{_C}:link_seconds",
        f"{_C}:transfer_joules",
        f"{_C}:_placements",
        f"{_T}:best_placement",
        f"{_T}:over_budget",
        f"{_T}:energy_of",
        f"{_T}:d2d_loads",
        f"{_T}:link_time",
    ),
    hand="property",
)
def check_place_on_dies(place_on_dies: Callable[..., object]) -> str:
    """Exercise 27.6: the least-energy placement of tiles on dies within a D2D link budget."""
    cases = place_cases() + _fresh_cases(fresh_rng("27.6"))
    results = [_one(place_on_dies, c) for c in cases]
    return (
        f"{len(cases)} placements (3 fresh) within their link budgets at the least energy; "
        f"tiny GPT layer on 4 dies, advanced package: {results[1]}"
    )
