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

_DIRECTIONS = "Each direction of a die pair is its own link: budget a->b and b->a apart."
_LATENCY = "A link's time is its latency plus bytes / bandwidth: add the latency."
_IDLE = "A link that carries no bytes takes no time: only used links count against the budget."
_NONE = "When no placement meets the budget, return None (not the least bad placement)."
_FULL = "A die may hold exactly `capacity` tiles: at most `capacity` is <=, not <."
_EXACT = "A link that finishes exactly at the budget meets it: the time must be <= budget_s."
_SEARCH = "Search every placement (dies ** tiles is small): keep the least energy in budget."


def _binding_budget(t: list[list[int]], dies: int, cap: int, d2d: dict, new: np.random.Generator):
    """A budget some placement meets, every unbudgeted optimum misses, and under which the least
    busiest link is not the cheapest (``None``, the free optimum and min-max all fail), 1 % away
    from every placement's busiest link; ``None`` when the layer has none."""
    rows = []
    for p in truth.placements(len(t), dies, cap):
        worst = max((truth.link_time(b, d2d) for b in truth.d2d_loads(t, p).values()), default=0.0)
        rows.append((truth.energy_of(t, p, d2d, ON_DIE), worst))
    least = min(e for e, _ in rows)
    w_free = min(w for e, w in rows if e <= least * (1 + 1e-9))  # the tightest optimum
    w_min = min(w for _, w in rows)
    e_mm = min(e for e, w in rows if w == w_min)  # the cheapest min-max placement
    beats = [w for e, w in rows if e < e_mm * (1 - 1e-9)]
    if not beats or min(beats) >= w_free:
        return None
    for _ in range(8):
        budget = float(min(beats) + (w_free - min(beats)) * new.uniform(0.1, 0.9))
        if all(abs(w - budget) > 0.01 * budget for _, w in rows):
            return budget
    return None


def _fresh_cases(new: np.random.Generator) -> list[Case]:
    out: list[Case] = []
    while len(out) < 3:
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
        budget = _binding_budget(t, dies, cap, d2d, new)
        if budget is None:  # a layer whose budget cannot bind both ways: draw another
            continue
        label = fresh(f"random layer {len(out)}: {n} tiles, {dies} dies")
        out.append((label, t, dies, cap, d2d, ON_DIE, budget))
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


def _hint(args: tuple, energy: float | None) -> str:
    """The hints (two at most) of the mistakes whose search gives what the student did (``None``,
    or a placement of that energy; capacity too when every placement fills a die), or _SEARCH."""
    t, dies, cap, d2d, on, budget = args
    best, found = truth.best_placement, []
    for hint, search in [
        (_DIRECTIONS, lambda: best(*args, directed=False)),
        (_IDLE, lambda: best(*args, idle=True)),
        (_FULL, lambda: best(t, dies, cap - 1, d2d, on, budget)),
        (_EXACT, lambda: best(t, dies, cap, d2d, on, budget * (1 - 1e-9))),
    ]:
        if hint == _FULL and energy is None:  # None under `<` only when no placement fits
            found += [_FULL] if dies * (cap - 1) < len(t) else []
            continue
        e = None if (got := search()) is None else got[0]
        if e == energy or (e is not None and energy and abs(e - energy) <= 1e-9 * energy):
            found.append(hint)
    return " Or: ".join(([*found, _SEARCH] if found == [_FULL] else found)[:2]) or _SEARCH


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
        assert_true(
            False,
            f"[{label}] you returned None, but {want[1]} meets the budget "
            f"({want[0] * 1e9:.4g} nJ). {_hint(args, None)}",
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
        assert_true(
            False,
            f"[{label}] your placement {place} is within the budget but costs "
            f"{energy * 1e9:.4g} nJ; {want[1]} costs {want[0] * 1e9:.4g} nJ. "
            f"{_hint(args, energy)}",
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
