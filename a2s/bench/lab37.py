"""Lab 37 experiments: the C++ kernels called through ctypes, against numpy on this machine.

1. GFLOP/s of the C++ matmul nests (ijk, ikj, tiled) at n = 256, against numpy's BLAS on the
   same inputs in the same process (``minitorch.native.timing``): how far a plain loop nest,
   compiled with -O2, is from a tuned library.
2. Microseconds of one ctypes call of the fused bias + GELU on a tiny input (the price of the
   boundary itself: argument conversion and the ``dlsym``-ed call), against numpy's own.

Lab: 37_python_to_machine_code
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, median_time, one_thread, register
from minitorch.native import loader, timing


@register
def matmul_nests() -> list[Figure]:
    n = 256
    with one_thread():
        times = timing.matmul_times(n, tile=32, repeat=3)
    blas = timing.gflops(n, times["numpy (BLAS)"])
    return [
        Figure(
            f"{name} matmul, n = {n} (ctypes)",
            timing.gflops(n, t),
            "GFLOP/s",
            f"{timing.gflops(n, t) / blas:.2f}x numpy's BLAS ({blas:.1f} GFLOP/s)",
        )
        for name, t in times.items()
        if name != "numpy (BLAS)"
    ]


@register
def call_overhead() -> list[Figure]:
    k = loader.kernels()
    x, b = np.ones((1, 8)), np.zeros(8)
    with one_thread():
        t_c = median_time(lambda: k.bias_gelu(x, b), repeats=5)
        t_np = median_time(lambda: np.tanh(x + b), repeats=5)
    return [
        Figure(
            "one ctypes call of a2s_bias_gelu on 8 values",
            t_c * 1e6,
            "us",
            f"numpy's tanh(x + b) on the same: {t_np * 1e6:.1f} us",
        )
    ]
