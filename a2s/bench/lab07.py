"""Lab 07 experiments: how fast the SIMT simulator runs, so the lab stays under 60 s.

1. Throughput of the simulator on the tiled matmul (64^3): warp memory instructions and
   thread accesses per second. Every warp instruction runs the segment or bank count with
   numpy over the block, so the cost is per *instruction*, nearly flat in threads.
2. Simulated tiled vs naive matmul, same shape: both issue about the same number of warp
   memory instructions (18,560 vs 16,512 at 64^3), but the tiled kernel's are mostly
   shared-memory accesses, which also pay for the race bookkeeping of ``syncthreads``.

Lab: 07_gpu_programming_model
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.kernels import simt_kernels as K
from minitorch.kernels.simt import KernelStats, launch, to_device

N = 64


def _matmul(kernel: Callable[..., None]) -> KernelStats:
    gen = np.random.default_rng(0)
    a, b = (gen.standard_normal((N, N)).astype(np.float32) for _ in range(2))
    c = to_device(np.zeros((N, N), np.float32))
    return launch(kernel, (N // 16, N // 16), (16, 16), (to_device(a), to_device(b), c, N, N, N))


def _instructions(s: KernelStats) -> int:
    return s.gld_requests + s.gst_requests + s.shared_load_requests + s.shared_store_requests


@register
def simulator_throughput() -> list[Figure]:
    stats = {k.__name__: _matmul(k) for k in (K.matmul_tiled, K.matmul_naive)}
    with one_thread():
        tiled, naive = alternate(
            lambda: _matmul(K.matmul_tiled), lambda: _matmul(K.matmul_naive), repeats=5
        )
    warp_ins = _instructions(stats["matmul_tiled"])
    return [
        Figure(
            "simulated warp memory instructions / s (tiled 64^3)",
            warp_ins / tiled,
            "1/s",
            "numpy per block",
        ),
        Figure(
            "simulated thread accesses / s (tiled 64^3)",
            warp_ins * 32 / tiled,
            "1/s",
            "32 lanes per instruction",
        ),
        Figure("tiled 64^3 matmul, simulated", tiled * 1e3, "ms", "lab budget 60 s"),
        Figure("simulated time, tiled / naive", tiled / naive, "x", "naive = 1.0"),
    ]
