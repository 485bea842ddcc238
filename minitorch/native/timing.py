"""Wall-clock time of the C++ kernels next to numpy's matmul (BLAS), in one process.

Same inputs, same process, the best of ``repeat`` runs after one warm-up (the first call
pays for page faults and, for the C++ kernels, the build and ``dlopen``): the C++ loop nests
``ijk`` and ``ikj``, the tiled C++ kernel and ``a @ b`` (numpy hands it to BLAS: blocked,
vectorised, possibly multi-threaded). GFLOP/s is ``2 n^3 / seconds``.

Lab: 37_python_to_machine_code
Paper: Goto & van de Geijn 2008, *Anatomy of High-Performance Matrix Multiplication*.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from minitorch.native.loader import kernels

__all__ = ["best_of", "gflops", "matmul_times"]


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of ``repeat`` timed calls of ``fn``, after one untimed warm-up call."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def gflops(n: int, seconds: float) -> float:
    """GFLOP/s of an ``n x n x n`` matmul (``2 n^3`` FLOPs) done in ``seconds``."""
    return 2 * n**3 / seconds / 1e9


def matmul_times(
    n: int, tile: int = 32, repeat: int = 3, seed: int = 0, cache: Path | None = None
) -> dict[str, float]:
    """Seconds of each way to compute ``A @ B`` for ``n x n`` float64 (same inputs)."""
    g = np.random.default_rng(seed)
    a, b = g.normal(size=(n, n)), g.normal(size=(n, n))
    k = kernels(cache)
    return {
        "c++ ijk": best_of(lambda: k.matmul(a, b, "ijk"), repeat),
        "c++ ikj": best_of(lambda: k.matmul(a, b, "ikj"), repeat),
        f"c++ tiled {tile}": best_of(lambda: k.matmul_tiled(a, b, tile), repeat),
        "numpy (BLAS)": best_of(lambda: a @ b, repeat),
    }
