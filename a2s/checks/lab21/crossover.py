"""Grader of exercise 21.3: predict the message size where the ring overtakes the tree.

The learner's ``crossover_bytes(p, alpha, beta)`` is compared with the closed form written
out here (binomial tree ``2L (alpha + n beta)``, ``L = ceil(log2 p)``, against the ring
``2(p-1) alpha + 2(p-1)/p n beta``), on named and fresh cases; then the prediction is
measured: on SimWorld's clock the tree must win at a quarter of the predicted size and the
ring at four times it (the grader runs its own tree and ring, not the learner's code).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.lab21._truth import ALGORITHMS
from minitorch.comm.allreduce import ring_all_reduce, tree_all_reduce
from minitorch.comm.simworld import SimWorld

__all__ = ["check_crossover"]

_BLOCKS = (
    "minitorch.comm.cost:crossover_bytes",
    "minitorch.comm.cost:all_reduce_terms",
    "minitorch.comm.cost:time_all_reduce",
    *ALGORITHMS,
)
# ALGORITHMS: timing the course's tree and ring on a SimWorld is a measurement, not the model


def _want(p: int, alpha: float, beta: float) -> float:
    if p <= 2:
        return 0.0
    levels = math.ceil(math.log2(p))
    return (p - 1 - levels) * alpha / ((levels - (p - 1) / p) * beta)


def _hint(got: float, p: int, alpha: float, beta: float) -> str:
    exact = math.log2(p)
    if p > 2 and exact != int(exact):
        levels = exact
        if abs(got - (p - 1 - levels) * alpha / ((levels - (p - 1) / p) * beta)) < 1e-6 * abs(got):
            return "A binomial tree has ceil(log2 p) levels when p is not a power of two."
    if p <= 2:
        return "With p <= 3 the ring is never slower (p = 1 sends nothing): return 0.0."
    return (
        "Equate 2L(alpha + n beta) (tree: L = ceil(log2 p) rounds each way, whole buffer) with "
        "2(p-1) alpha + 2(p-1)/p n beta (ring) and solve for n, in bytes."
    )


def _sim_time(fn: Callable[..., Any], p: int, nbytes: float, alpha: float, beta: float) -> float:
    world = SimWorld(p, alpha=alpha, beta=beta)
    world.run(fn, [np.ones(max(1, int(nbytes) // 8))] * p, per_rank=True)
    return world.time


@grader("21.3", blocks=_BLOCKS, hand="property")
def check_crossover(crossover_bytes: Callable[..., Any]) -> str:
    """Exercise 21.3: the alpha-beta crossover between the binomial tree and the ring."""
    named = [
        (1, 1e-6, 1e-9),
        (2, 1e-6, 1e-9),
        (3, 1e-6, 1e-9),
        (4, 5e-6, 1e-10),
        (6, 5e-6, 1e-10),
        (8, 5e-6, 1e-10),
        (16, 2e-6, 4e-11),
        (64, 1e-5, 1e-10),
    ]
    fr = fresh_rng("21.3")
    cases = [(str(c), c) for c in named]
    for _ in range(8):
        c = (
            int(fr.integers(2, 257)),
            float(fr.uniform(1e-7, 1e-4)),
            float(fr.uniform(1e-11, 1e-8)),
        )
        cases.append((fresh(str(c)), c))
    for label, (p, alpha, beta) in cases:
        got = plain(crossover_bytes(p, alpha, beta), what="crossover bytes", case=label)
        want = _want(p, alpha, beta)
        assert_true(
            isinstance(got, (int, float, np.floating, np.integer))
            and math.isclose(float(got), want, rel_tol=1e-9, abs_tol=1e-9),
            f"[{label}] predicted {got!r} bytes, the alpha-beta model gives {want:.6g}. "
            f"{_hint(float(got) if isinstance(got, (int, float)) else 0.0, p, alpha, beta)}",
        )
    measured = []
    for p, alpha, beta in [(4, 5e-6, 1e-10), (8, 5e-6, 1e-10)]:
        star = float(crossover_bytes(p, alpha, beta))
        low = _sim_time(tree_all_reduce, p, star / 4, alpha, beta) < _sim_time(
            ring_all_reduce, p, star / 4, alpha, beta
        )
        high = _sim_time(ring_all_reduce, p, star * 4, alpha, beta) < _sim_time(
            tree_all_reduce, p, star * 4, alpha, beta
        )
        assert_true(low and high, f"[p={p}] the simulated clock disagrees with {star:g} bytes")
        measured.append(f"p={p}: {star / 1e3:.1f} kB")
    return (
        f"{len(cases)} predictions (8 fresh, p up to 256) equal the model; on the simulated "
        f"clock the tree wins below and the ring above ({', '.join(measured)})"
    )
