"""The searches: the grid is exhaustive, random and guided stay within budget, and the guided
search finds the best matmul schedule with a quarter of the grid on the deterministic cost."""

from __future__ import annotations

from minitorch.compiler.autotune import (
    Config,
    grid_search,
    guided_search,
    matmul_schedule,
    matmul_space,
    miss_cost,
    model_misses,
    random_search,
    wall_time,
)
from minitorch.compiler.loops import iteration_order
from minitorch.hardware.cache import CacheConfig


def test_schedule_covers_every_iteration_once():
    s = matmul_schedule(6, Config(4, 2, 4, "kji"))
    assert s.order == ("ko", "jo", "io", "ki", "ji", "ii")
    pts = iteration_order(s)
    assert len({tuple(p) for p in pts.tolist()}) == len(pts) == 6**3


def test_searches_respect_their_budget_and_guided_finds_the_grid_best():
    space = matmul_space([2, 4, 8, 16], ["ijk", "ikj", "jki"])
    cost = miss_cost(16, CacheConfig(512, 64, 8))
    grid = grid_search(space, cost)
    assert grid.evaluations == len(space) == 192
    budget = len(space) // 4
    guided = guided_search(space, cost, lambda c: model_misses(16, c), budget)
    assert guided.evaluations == budget
    assert guided.best_cost <= 1.10 * grid.best_cost
    rand = random_search(space, cost, budget, seed=0)
    assert rand.evaluations == budget and rand.best_cost >= grid.best_cost
    assert rand.best_so_far() == sorted(rand.best_so_far(), reverse=True)
    # the model alone picks the biggest tiles, which thrash the small cache
    assert cost(min(space, key=lambda c: model_misses(16, c))) > 10 * grid.best_cost


def test_wall_time_is_a_positive_median():
    assert wall_time(matmul_schedule(4, Config(2, 2, 2)), repeats=3) > 0
