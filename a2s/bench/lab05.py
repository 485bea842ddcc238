"""Lab 05 experiments: memory-bound ops against a plain copy of the same bytes, and attention
blocked in cache against attention materialised, one thread, alternated in one process.

A copy of the bytes an op must move is the memory roof made concrete: ``op / copy`` near 1
means the op streams memory at full speed; well above 1 means extra passes (numpy's unfused
softmax and layer norm) or compute the roofline counts as one FLOP (``exp``).

Lab: 05_roofline
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.hardware import attention_cost, gemv_cost, softmax_cost

__all__ = ["attention_blocking", "memory_bound_ops"]


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@register
def memory_bound_ops() -> list[Figure]:
    """GEMV 4096² and softmax 4096² (float32, 64 MiB each, twice the L3 here) vs a copy."""
    g = np.random.default_rng(0)
    a, x = g.random((4096, 4096), dtype=np.float32), g.random(4096, dtype=np.float32)
    s = g.standard_normal((4096, 4096), dtype=np.float32)
    dst = np.empty_like(a)
    with one_thread():
        # a copy of A moves 2 x 64 MiB (read + write): scale it to the op's ideal bytes
        t_gemv, t_copy = alternate(lambda: a @ x, lambda: np.copyto(dst, a), 9)
        t_soft, t_copy2 = alternate(lambda: _softmax(s), lambda: np.copyto(dst, s), 9)
    per_byte = min(t_copy, t_copy2) / (2 * a.nbytes)
    gemv_bytes, soft_bytes = gemv_cost(4096, 4096).bytes, softmax_cost(4096, 4096).bytes
    return [
        Figure(
            "GEMV 4096² fp32 / copy of its bytes",
            t_gemv / (per_byte * gemv_bytes),
            "x",
            f"1.0 = streams at copy speed ({1 / per_byte / 1e9:.0f} GB/s read + write)",
        ),
        Figure(
            "numpy softmax 4096² fp32 / copy of its bytes",
            t_soft / (per_byte * soft_bytes),
            "x",
            "1.0 = one fused pass; numpy makes about five",
        ),
    ]


@register
def attention_blocking() -> list[Figure]:
    """Attention n=2048, d=64 (fp32): 128-query blocks (scores in cache) vs the full n x n."""
    g = np.random.default_rng(1)
    q, k, v = (g.standard_normal((2048, 64), dtype=np.float32) / 4 for _ in range(3))

    def blocked() -> np.ndarray:
        return np.concatenate([_softmax(q[i : i + 128] @ k.T) @ v for i in range(0, 2048, 128)])

    with one_thread():
        t_block, t_full = alternate(blocked, lambda: _softmax(q @ k.T) @ v, repeats=7)
    flops = attention_cost(2048, 64).flops
    return [
        Figure(
            "attention blocked / materialised, n=2048 d=64",
            t_block / t_full,
            "x",
            "below 1.0: keeping S in cache pays",
        ),
        Figure(
            "attention blocked, 1 thread",
            flops / t_block / 1e9,
            "GFLOP/s",
            "context only: absolute rate on a shared machine",
        ),
    ]
