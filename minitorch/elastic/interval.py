"""How often to checkpoint: Young's and Daly's optimal intervals, and a simulated failure process.

A job computes ``T_s`` seconds of work in segments of ``τ`` seconds, each followed by a save of
``δ`` seconds; failures arrive as a Poisson process of mean time between failures ``M``; after a
failure the job restarts (``R`` seconds, during which it may fail again) from the last completed
save, losing the work since. Too-frequent saves waste ``δ`` each; too-rare ones lose much work.

* Young (1974), to first order: ``τ_Y = sqrt(2 δ M)``.
* Daly (2006), the higher-order perturbation solution of the full cost function:
  ``τ_D = sqrt(2 δ M) [1 + (1/3) sqrt(δ / (2M)) + (1/9) (δ / (2M))] − δ`` for ``δ < 2M``,
  else ``τ_D = M``. (Checked against the paper's own examples: M = 24 h, δ = 5 min gives
  117 min; M = 6 h, 57 min; M = 15 min, 9.1 min; :func:`daly_interval` reproduces all three.)

:func:`expected_wall_time` is the exact expectation of this model, derived here from the
memoryless property: one segment of ``τ`` and its save take ``M e^{R/M} (e^{(τ+δ)/M} − 1)``
in expectation, and the ``T_s / τ`` segments add up (derived here, not copied from the paper;
the tests check it against the simulation). :func:`simulate` measures the same quantity on
a seeded failure process, and :func:`best_interval` scans for its minimum.

Lab: 32_fault_tolerance_elastic
Paper: J. W. Young, "A first order approximation to the optimum checkpoint interval",
CACM 17(9), 1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
restart dumps", Future Generation Computer Systems 22(3), 2006 (doi:10.1016/j.future.2004.11.016).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Outcome",
    "best_interval",
    "daly_interval",
    "expected_wall_time",
    "simulate",
    "young_interval",
]


def young_interval(cost: float, mtbf: float) -> float:
    """Young's first-order optimum ``sqrt(2 δ M)`` (same units as the inputs)."""
    if cost < 0 or mtbf <= 0:
        raise ValueError(f"need cost >= 0 and mtbf > 0, got {cost}, {mtbf}")
    return math.sqrt(2.0 * cost * mtbf)


def daly_interval(cost: float, mtbf: float) -> float:
    """Daly's higher-order optimum (see the module docstring); ``M`` when ``δ >= 2M``."""
    if cost < 0 or mtbf <= 0:
        raise ValueError(f"need cost >= 0 and mtbf > 0, got {cost}, {mtbf}")
    if cost >= 2.0 * mtbf:
        return float(mtbf)
    x = cost / (2.0 * mtbf)
    return math.sqrt(2.0 * cost * mtbf) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - cost


def expected_wall_time(
    work: float, tau: float, cost: float, mtbf: float, restart: float = 0.0
) -> float:
    """Expected wall time of ``work`` seconds in segments of ``tau`` (the model above).

    ``work / tau`` need not be whole: the last segment is shorter (and is saved too)."""
    if tau <= 0 or mtbf <= 0:
        raise ValueError("need tau > 0 and mtbf > 0")
    full, rest = divmod(work, tau)
    segs = [tau] * int(full) + ([rest] if rest > 1e-12 * tau else [])
    m = mtbf
    # a window of L = s + δ without failure takes M (e^{L/M} - 1) in expectation, failed tries
    # included; each of its e^{L/M} - 1 expected failures adds a restart phase, itself a
    # failure-free window of R: M (e^{R/M} - 1). Sum: M e^{R/M} (e^{L/M} - 1).
    total = 0.0
    for s in segs:
        total += m * math.exp(restart / m) * math.expm1((s + cost) / m)
    return total


@dataclass(frozen=True)
class Outcome:
    """A simulated run: wall time, and where it went."""

    wall: float  # seconds from start to the last save
    failures: int
    lost: float  # work computed and lost to failures (seconds)
    saving: float  # seconds spent in completed and interrupted saves
    restarting: float


def simulate(
    work: float, tau: float, cost: float, mtbf: float, restart: float = 0.0, seed: int = 0
) -> Outcome:
    """Run the job once against exponential failure times drawn from ``seed``."""
    if tau <= 0 or mtbf <= 0:
        raise ValueError("need tau > 0 and mtbf > 0")
    g = np.random.default_rng(seed)
    now, done, failures, lost, saving, restarting = 0.0, 0.0, 0, 0.0, 0.0, 0.0
    next_fail = float(g.exponential(mtbf))
    while done < work - 1e-12:
        seg = min(tau, work - done)
        if now + seg + cost <= next_fail:  # the segment and its save complete
            now += seg + cost
            done += seg
            saving += cost
            continue
        ran = next_fail - now  # failed during the segment or its save
        lost += min(ran, seg)
        saving += max(0.0, ran - seg)
        failures += 1
        now = next_fail
        while True:  # restart; a failure during it starts the restart again
            next_fail = now + float(g.exponential(mtbf))
            if now + restart <= next_fail:
                now += restart
                restarting += restart
                break
            restarting += next_fail - now
            failures += 1
            now = next_fail
    return Outcome(now, failures, lost, saving, restarting)


def best_interval(
    work: float,
    cost: float,
    mtbf: float,
    restart: float = 0.0,
    taus: Sequence[float] | None = None,
    trials: int = 200,
    seed: int = 0,
) -> tuple[float, dict[float, float]]:
    """The interval of least mean simulated wall time over ``taus`` (common random numbers:
    trial ``k`` uses seed ``seed + k`` for every interval); returns it and the means."""
    if taus is None:
        y = young_interval(cost, mtbf)
        taus = [float(t) for t in np.geomspace(y / 4, 4 * y, 25)]
    means = {
        float(t): float(
            np.mean([simulate(work, t, cost, mtbf, restart, seed + k).wall for k in range(trials)])
        )
        for t in taus
    }
    return min(means, key=lambda t: means[t]), means
