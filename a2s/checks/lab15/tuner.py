"""Grader of exercise 15.4: a tuner within 10% of the grid's best after measuring a quarter.

The learner's ``tune(space, measure, model, budget)`` returns one configuration of ``space``.
``measure(config)`` is the expensive, true cost: the grader counts its calls and refuses a
configuration outside the space; ``model(config)`` is a free estimate. The grader knows the
whole grid (it computed every cost before the call), so the verdict is exact: at most
``budget = len(space) // 4`` measurements, and the returned configuration's cost at most 1.10
times the grid's minimum.

Landscapes: the cache misses of 192 matmul schedules (n = 16, a 512 B cache: the model, which
ignores capacity, likes the biggest tiles, 16x worse than the best; only 2 of the 192 are
within 10%), and synthetic ones (a sharp bowl over log tile sizes times a loop-order factor, a
0-5% ruggedness per point, a model off by up to 25%; exactly one of the 432 within 10%), three
of them fresh per grading run. A tuner that measures a random quarter passes each synthetic
landscape one time in four and the matmul one 44 times in 100: all five about 1 in 600.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain, rng
from a2s.checks.harness import request, run_apart
from minitorch.compiler.autotune import Config, matmul_space, miss_cost, model_misses
from minitorch.hardware.cache import CacheConfig

__all__ = ["Landscape", "check_tune", "matmul_landscape", "synthetic_landscape"]

_A = "minitorch.compiler.autotune"
TOLERANCE = 1.10
Landscape = tuple[list[Config], dict[Config, float], dict[Config, float]]


def matmul_landscape() -> Landscape:
    """Misses of every (tiles, order) schedule of a 16 x 16 matmul (512 B cache); the model."""
    space = matmul_space([2, 4, 8, 16], ["ijk", "ikj", "jki"])
    cost = miss_cost(16, CacheConfig(512, 64, 8))
    return space, {c: cost(c) for c in space}, {c: model_misses(16, c) for c in space}


def synthetic_landscape(gen: np.random.Generator) -> Landscape:
    """A sharp bowl over log2 tiles times an order factor, rugged by 0-5%; a model within 25%.

    The bowl's centre lies within 0.2 of a grid point and each step away costs at least 1.35x,
    so exactly one configuration of the 432 is within 10% of the best: a random quarter finds
    it one time in four, while the true best stays among the model's 8 best-ranked.
    """
    space = matmul_space([1, 2, 4, 8, 16, 32], ["ijk", "ikj"])
    centre = gen.integers(1, 5, 3) + gen.uniform(-0.2, 0.2, 3)
    width = gen.uniform(0.6, 1.5, 3)
    worse = str(gen.choice(["ijk", "ikj"]))
    true, model = {}, {}
    for c in space:
        logs = np.log2([c.ti, c.tj, c.tk])
        bowl = float(np.prod(1 + width * (logs - centre) ** 2))
        true[c] = 1000 * bowl * (1.3 if c.order == worse else 1.0) * gen.uniform(1.0, 1.05)
        model[c] = true[c] * gen.uniform(0.8, 1.25)
    return space, true, model


def _diagnose(got: Config, calls: list[Config], land: Landscape, budget: int) -> str:
    space, true, model = land
    if len(calls) > budget:
        return (
            f"You measured {len(calls)} configurations, over the budget of {budget} "
            f"(a quarter of {len(space)}): a grid search. Measure only the model's best-ranked."
        )
    if got == min(space, key=lambda c: model[c]):
        return (
            "You returned the model's favourite. A model is only a ranking: measure the "
            "best-ranked configurations and return the best *measured* one."
        )
    if calls and true[got] > min(true[c] for c in calls):
        return "Return the configuration with the lowest measured cost, not another one."
    return "Spend the budget on the configurations the model ranks best."


def _key(c: Config) -> tuple[int, int, int, str]:
    return (c.ti, c.tj, c.tk, c.order)


def _measure(c: object) -> float:
    """The learner's ``measure`` (in the learner's process): one request to the grader."""
    if type(c) is not Config:
        raise CheckFailure(f"measure() got {c!r}, not a configuration of the space.")
    return float(request("measure", _key(c)))


def _apart(
    tune: Callable[..., object],
    space: list[Config],
    model: dict[Config, float],
    budget: int,
    case: str,
) -> object:
    """In the learner's process: run ``tune``; its answer as a plain tuple."""
    got = plain(
        tune(list(space), _measure, dict(model).__getitem__, budget), what="config", case=case
    )
    if type(got) is not Config:
        return repr(got)[:80]
    return _key(got)


def _one(tune: Callable[..., object], land: Landscape, case: str) -> tuple[int, float]:
    """``tune`` runs in a child process (:func:`~a2s.checks.harness.run_apart`); each
    ``measure`` is a request served here, where the true costs and the count of calls stay."""
    space, true, model = land
    budget = len(space) // 4
    by_key = {_key(c): c for c in space}
    calls: list[Config] = []

    def measure(key: object) -> float:
        c = by_key.get(key) if type(key) is tuple else None
        if c is None:
            raise CheckFailure(f"[{case}] measure() got {key!r}, not a configuration of the space.")
        calls.append(c)
        return float(true[c])

    answer = run_apart(_apart, tune, space, model, budget, case, serve={"measure": measure})
    got = by_key.get(answer) if type(answer) is tuple else None
    assert_true(
        got is not None,
        f"[{case}] return one Config of the space (the best you measured), got {answer}.",
    )
    assert isinstance(got, Config)
    best = min(true.values())
    ratio = true[got] / best
    if len(calls) > budget or ratio > TOLERANCE:
        raise CheckFailure(
            f"[{case}] returned {got} at {ratio:.2f}x the grid's best ({true[got]:,.0f} vs "
            f"{best:,.0f}; goal <= {TOLERANCE:.2f}x) after {len(calls)} measurements (budget "
            f"{budget}). {_diagnose(got, calls, land, budget)}"
        )
    return len(calls), ratio


@grader(
    "15.4",
    blocks=(
        f"{_A}:grid_search",
        f"{_A}:random_search",
        f"{_A}:guided_search",
        f"{__name__}:matmul_landscape",  # the attack tests swap in a cached copy: blocked here
    ),
    hand="budget",
)
def check_tune(tune: Callable[..., object]) -> str:
    """Exercise 15.4: within 10% of the grid's best, at most a quarter of the grid measured."""
    new = fresh_rng("15.4")
    lands = [
        ("matmul n=16 misses, 512 B cache", matmul_landscape()),
        ("synthetic (seeded)", synthetic_landscape(rng(1504))),
        (fresh("synthetic"), synthetic_landscape(new)),
        (fresh("synthetic"), synthetic_landscape(new)),
        (fresh("synthetic"), synthetic_landscape(new)),
    ]
    results = [_one(tune, land, case) for case, land in lands]
    calls, ratio = results[0]
    n = len(lands[0][1][0])
    return (
        f"{len(lands)} landscapes (3 fresh); matmul: {ratio:.2f}x the grid's best after "
        f"{calls} of {n} measured ({calls / n:.0%})"
    )
