"""Performance experiments of lab 01: bit-twiddled BF16 rounding, and the price of accuracy.

Lab: 01_numerics
"""

from __future__ import annotations

import math

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.numerics.bfloat16 import round_to_bf16_bits
from minitorch.numerics.summation import U32, kahan_sum, naive_sum, pairwise_depth, pairwise_sum

__all__ = ["bf16_rounding", "summation_cost", "summation_error"]


@register
def bf16_rounding() -> list[Figure]:
    """numpy bit manipulation vs torch's .to(bfloat16) on 10^6 float32 values (same bits)."""
    import torch

    x = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    t = torch.from_numpy(x)
    with one_thread():
        ours, ref = alternate(lambda: round_to_bf16_bits(x), lambda: t.to(torch.bfloat16))
    return [
        Figure(
            "bf16 round 10^6 values, numpy bits / torch",
            ours / ref,
            "x",
            "torch .to(bfloat16) = 1.0, one thread",
        ),
        Figure(
            "bf16 round throughput, numpy bits",
            x.size / ours / 1e6,
            "Mvalues/s",
            "context only: absolute time on a shared machine",
        ),
    ]


@register
def summation_cost() -> list[Figure]:
    """Kahan and pairwise python loops against the naive loop on 10^5 float32 values."""
    x = np.random.default_rng(1).standard_normal(100_000).astype(np.float32)
    with one_thread():
        kahan, naive_k = alternate(lambda: kahan_sum(x), lambda: naive_sum(x), repeats=3)
        pair, naive_p = alternate(lambda: pairwise_sum(x), lambda: naive_sum(x), repeats=3)
    return [
        Figure(
            "kahan / naive loop, 10^5 values",
            kahan / naive_k,
            "x",
            "naive float32 loop = 1.0; Kahan does 4 flops per value instead of 1",
        ),
        Figure(
            "pairwise / naive loop, 10^5 values",
            pair / naive_p,
            "x",
            "naive float32 loop = 1.0; same flops, plus recursion overhead",
        ),
    ]


@register
def summation_error() -> list[Figure]:
    """Error of each float32 sum of 10^5 values against math.fsum, in units of u * sum |x|.

    Deterministic (seeded data, no timing); 0.066 is the error of the correctly rounded sum.
    """
    g = np.random.default_rng(2)
    n = 100_000
    x = (g.random(n) + 0.5).astype(np.float32)  # all positive: the naive error accumulates
    exact = math.fsum(x.astype(np.float64).tolist())
    unit = U32 * math.fsum(np.abs(x.astype(np.float64)).tolist())
    sums = {
        "naive loop": naive_sum(x),
        "pairwise (blocks of 8)": pairwise_sum(x),
        "kahan": kahan_sum(x),
        "np.sum (pairwise, blocks of 128)": np.sum(x),
    }
    anchors = {
        "naive loop": f"worst case gamma_(n-1) ~ {n - 1:,}",
        "pairwise (blocks of 8)": f"worst case gamma_d, d = {pairwise_depth(n)}",
        "kahan": "worst case 2",
        "np.sum (pairwise, blocks of 128)": "numpy's own pairwise sum (8 accumulators per block)",
    }
    return [
        Figure(
            f"error of {name}, 10^5 values in [0.5, 1.5)",
            abs(float(s) - exact) / unit,
            "u*sum|x|",
            anchors[name],
        )
        for name, s in sums.items()
    ]
