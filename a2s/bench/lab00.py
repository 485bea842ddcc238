"""Lab 00 experiments: float32 GEMM throughput of numpy's BLAS against torch's, one thread."""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, register
from minitorch.hardware import matmul_flops


@register
def gemm_throughput() -> list[Figure]:
    import torch

    n = 512
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    t_np, t_torch = alternate(lambda: a @ b, lambda: torch.mm(ta, tb), repeats=9)
    flops = matmul_flops(n, n, n)
    return [
        Figure(
            "numpy GEMM 512³ float32, 1 thread",
            flops / t_np / 1e9,
            "GFLOP/s",
            f"torch.mm same shape: {flops / t_torch / 1e9:.1f} GFLOP/s",
        ),
        Figure("numpy / torch GEMM time ratio", t_np / t_torch, "x", "1.0 = same BLAS speed"),
    ]
