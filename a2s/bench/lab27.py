"""Lab 27 experiments: the systolic simulator's throughput, and what it costs against numpy.

1. Simulator throughput in PE-cycles per second (one thread): weight-stationary and
   output-stationary folds on 32x32 and 128x128 arrays, alternated with ``np.matmul`` of the
   same fold so the ratio (simulated cycle-by-cycle vs one BLAS call) is stable on a busy
   machine. The lab's notebook simulates about 4 M PE-cycles, so this figure says how far it
   is from its 60 s budget.

Lab: 27_accelerator_architecture
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.hardware.systolic import simulate_os, simulate_ws


def _one(name: str, sim: Callable[..., object], size: int, rng: np.random.Generator) -> Figure:
    a, b = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    t_sim, t_blas = alternate(lambda: sim(a, b, size, size), lambda: a @ b, repeats=3)
    pe_cycles = (2 * size + size + size - 2) * size * size
    return Figure(
        f"{name} simulator, {size}x{size} fold, M=K=N={size}",
        pe_cycles / t_sim / 1e6,
        "M PE-cycles/s",
        f"{t_sim / t_blas:,.0f}x one np.matmul of the fold",
    )


@register
def simulator_throughput() -> list[Figure]:
    rng = np.random.default_rng(0)
    with one_thread():
        return [
            _one(name, sim, size, rng)
            for size in (32, 128)
            for name, sim in (
                ("weight-stationary", simulate_ws),
                ("output-stationary", simulate_os),
            )
        ]
