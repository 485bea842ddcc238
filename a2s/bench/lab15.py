"""Lab 15 experiments: what the autotuner finds for its budget, and what a schedule buys in time.

1. The 192 matmul schedules of the lab (n=16, misses in a 512 B cache, deterministic): grid
   best vs the best found by the model-guided search and by random search (median over 20
   seeds) with a quarter of the grid, and the evaluations each spent.
2. Wall time of generated code, one thread, alternated in one process: the n=48 matmul with
   its inner loop vectorized into numpy slices of 48 vs the scalar source-order loop nest.

Lab: 15_loop_optimization_autotuning
"""

from __future__ import annotations

import statistics

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.compiler.autotune import (
    Config,
    grid_search,
    guided_search,
    matmul_schedule,
    matmul_space,
    miss_cost,
    model_misses,
    random_search,
)
from minitorch.compiler.loops import compile_nest, matmul, nest, vectorize
from minitorch.hardware.cache import CacheConfig


@register
def tuner_vs_grid() -> list[Figure]:
    space = matmul_space([2, 4, 8, 16], ["ijk", "ikj", "jki"])
    measure = miss_cost(16, CacheConfig(512, 64, 8))
    costs = {c: measure(c) for c in space}
    grid = grid_search(space, costs.__getitem__)
    budget = len(space) // 4
    guided = guided_search(space, costs.__getitem__, lambda c: model_misses(16, c), budget)
    rand = [random_search(space, costs.__getitem__, budget, seed=s).best_cost for s in range(20)]
    return [
        Figure("grid search: evaluations", float(grid.evaluations), "configs", "the full grid"),
        Figure(
            "model-guided best / grid best",
            guided.best_cost / grid.best_cost,
            "x",
            f"{guided.evaluations} of {len(space)} measured; goal <= 1.10",
        ),
        Figure(
            "random best / grid best (median of 20 seeds)",
            statistics.median(rand) / grid.best_cost,
            "x",
            f"{budget} of {len(space)} measured; goal <= 1.10",
        ),
    ]


@register
def vectorized_vs_scalar() -> list[Figure]:
    n = 48
    gen = np.random.default_rng(0)
    a, b = gen.standard_normal((n, n)), gen.standard_normal((n, n))
    scalar = compile_nest(nest(matmul(n, n, n)))
    vector = compile_nest(vectorize(matmul_schedule(n, Config(4, n, 4, "ikj")), "ji"))
    with one_thread():
        t_scalar, t_vector = alternate(
            lambda: scalar(a, b, np.zeros((n, n))), lambda: vector(a, b, np.zeros((n, n))), 3
        )
    return [
        Figure(
            f"n={n} matmul: scalar loops / vectorized j (slices of {n})",
            t_scalar / t_vector,
            "x",
            "generated Python/numpy, 1 thread",
        )
    ]
