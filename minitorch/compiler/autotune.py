"""Autotuning a matmul schedule: grid, random and cost-model guided search over tiles and orders.

A candidate is a :class:`Config` (tile sizes of ``i``, ``j``, ``k`` and one loop order used for
the tile loops and the point loops alike), turned into a nest by :func:`matmul_schedule`. A
search calls ``measure(config)`` (the expensive, true cost) at most ``budget`` times:

* ``grid_search`` measures everything (the ground truth, and the budget to beat);
* ``random_search`` measures ``budget`` configurations drawn without replacement;
* ``guided_search`` ranks the whole space with a cheap ``model`` and measures the best-ranked
  ones (TVM/Ansor rank with a learned model and measure the top of the list).

Two measures: :func:`miss_cost`, the cache misses of the schedule's trace on the LRU simulator
(deterministic, so a check can be exact), and :func:`wall_time`, the median seconds of the
compiled kernel over repeats, in process (what real tuners use, noisy on a shared machine).

Lab: 15_loop_optimization_autotuning
Paper: Chen et al. 2018, *Learning to Optimize Tensor Programs* (AutoTVM); Zheng et al. 2020,
*Ansor*; Tillet et al. 2019, *Triton* (``triton.autotune``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from minitorch.compiler.loops import Nest, compile_nest, matmul, nest, reorder, split, trace
from minitorch.hardware.cache import CacheConfig, simulate

__all__ = [
    "Config",
    "TuneResult",
    "grid_search",
    "guided_search",
    "matmul_schedule",
    "matmul_space",
    "miss_cost",
    "model_misses",
    "random_search",
    "wall_time",
]


@dataclass(frozen=True, slots=True, order=True)
class Config:
    """Tiles of ``i``, ``j``, ``k`` and the loop order (``"ikj"``: i outermost, j innermost)."""

    ti: int
    tj: int
    tk: int
    order: str = "ikj"


@dataclass(slots=True)
class TuneResult:
    """The best configuration found, its cost, and every measurement in the order made."""

    best: Config
    best_cost: float
    history: list[tuple[Config, float]] = field(default_factory=list)

    @property
    def evaluations(self) -> int:
        return len(self.history)

    def best_so_far(self) -> list[float]:
        return list(np.minimum.accumulate([c for _, c in self.history]))


def matmul_schedule(n: int, c: Config) -> Nest:
    """``n x n`` matmul: split i, j, k by their tiles; tile loops, then point loops, in order."""
    s = nest(matmul(n, n, n))
    for v, t in zip("ijk", (c.ti, c.tj, c.tk), strict=True):
        s = split(s, v, t)
    return reorder(s, *(v + "o" for v in c.order), *(v + "i" for v in c.order))


def matmul_space(tiles: Sequence[int], orders: Sequence[str]) -> list[Config]:
    """Every combination of tile sizes (for i, j, k) and loop orders."""
    return [Config(a, b, c, o) for a, b, c in itertools.product(tiles, repeat=3) for o in orders]


def miss_cost(n: int, cache: CacheConfig) -> Callable[[Config], float]:
    """The deterministic measure: misses of the schedule's trace in a fresh ``cache``."""
    return lambda c: float(simulate(trace(matmul_schedule(n, c)), cache)[0].misses)


def model_misses(n: int, c: Config, line_elems: int = 8) -> float:
    """A cheap model that ignores capacity: each array reloaded once per tile of its free loop.

    A (i, k) is re-read for each tile of j, B (k, j) for each tile of i, C (i, j) for each
    tile of k; a tile whose row is shorter than a line wastes the rest of the line. Large tiles
    always look better to it, so it is wrong once three tiles no longer fit in the cache.
    """

    def lines(cols: int) -> float:
        return max(1.0, cols / line_elems)

    a = n * n / c.tk * lines(c.tk) * (n / c.tj)
    b = n * n / c.tj * lines(c.tj) * (n / c.ti)
    cc = n * n / c.tj * lines(c.tj) * (n / c.tk)
    return a + b + cc


def wall_time(s: Nest, repeats: int = 3, seed: int = 0) -> float:
    """Median seconds of the compiled kernel over ``repeats`` runs (one warm-up) on random data."""
    kernel = compile_nest(s)
    gen = np.random.default_rng(seed)
    arrays = [gen.standard_normal(shape) for _, shape in s.kernel.shapes]
    kernel(*arrays)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        kernel(*arrays)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _search(order: Sequence[Config], measure: Callable[[Config], float]) -> TuneResult:
    history = [(c, float(measure(c))) for c in order]
    best, cost = min(history, key=lambda h: h[1])
    return TuneResult(best, cost, history)


def grid_search(space: Sequence[Config], measure: Callable[[Config], float]) -> TuneResult:
    """Measure every configuration."""
    return _search(space, measure)


def random_search(
    space: Sequence[Config], measure: Callable[[Config], float], budget: int, seed: int = 0
) -> TuneResult:
    """Measure ``budget`` configurations drawn without replacement."""
    picks = np.random.default_rng(seed).permutation(len(space))[:budget]
    return _search([space[int(p)] for p in picks], measure)


def guided_search(
    space: Sequence[Config],
    measure: Callable[[Config], float],
    model: Callable[[Config], float],
    budget: int,
) -> TuneResult:
    """Rank all of ``space`` by the cheap ``model``; measure the ``budget`` best-ranked."""
    ranked = sorted(space, key=model)
    return _search(ranked[:budget], measure)
