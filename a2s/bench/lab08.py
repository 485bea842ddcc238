"""Lab 08 experiments: peak memory and time of FlashAttention (numpy) against naive attention.

At n = 4096, d = 64, float64, one thread: peak extra memory from tracemalloc (the issue's
target: flash at least 10x lower), then wall time alternated. Both are forward passes on
plain arrays; the flash kernel uses 128 x 128 tiles.

Lab: 08_fused_kernels_flash_attention
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.kernels.attention import naive_attention
from minitorch.kernels.flash import flash_attention

N, D, BLOCK = 4096, 64, 128


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@register
def flash_memory_and_time() -> list[Figure]:
    q, k, v = (np.random.default_rng(i).standard_normal((N, D)) for i in range(3))

    def naive() -> None:
        naive_attention(q, k, v, causal=True)

    def flash() -> None:
        flash_attention(q, k, v, causal=True, block_q=BLOCK, block_kv=BLOCK)

    with one_thread():
        peak_naive, peak_flash = _peak(naive), _peak(flash)
        t_naive, t_flash = alternate(naive, flash, repeats=3, warmup=0)
    return [
        Figure("naive attention peak, n=4096 d=64", peak_naive / 2**20, "MiB", "tracemalloc"),
        Figure("flash attention peak, n=4096 d=64", peak_flash / 2**20, "MiB", "tracemalloc"),
        Figure("peak memory, naive / flash", peak_naive / peak_flash, "x", "target >= 10x"),
        Figure("forward time, flash / naive", t_flash / t_naive, "x", "naive numpy = 1.0"),
    ]
