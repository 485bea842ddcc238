"""Stochastic rounding to BF16: round up with probability equal to the distance rounded off.

Round-to-nearest is biased for repeated small updates: adding 2^-10 to a BF16 weight of 1.0
does nothing (the update is under half an ulp of 1.0), forever. Stochastic rounding picks the
upper neighbour with probability p = (x - down) / (up - down) and the lower one otherwise, so
E[round(x)] = x and small updates survive on average. By bits: add a uniform random 16-bit
integer to the float32 word and truncate the low 16 bits; the carry into bit 16 happens with
probability (low 16 bits) / 2^16, which is exactly p.

Lab: 01_numerics
Paper: Gupta et al. 2015, "Deep Learning with Limited Numerical Precision"
"""

from __future__ import annotations

import numpy as np

__all__ = ["stochastic_round_to_bf16"]


def stochastic_round_to_bf16(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Round float32 values stochastically to bfloat16 and return them as float32.

    x: (...) float32 -> (...) float32 on the BF16 grid, with E[result] = x for finite x whose
    neighbours are finite. NaN stays NaN; values already on the grid are unchanged.
    """
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    noise = rng.integers(0, 1 << 16, size=u.shape, dtype=np.uint32)
    rounded = (u + noise) & np.uint32(0xFFFF0000)  # carry into bit 16 with prob. low / 2^16
    is_nan = (u & 0x7FFFFFFF) > 0x7F800000
    out = np.where(is_nan, u | 0x00400000, rounded)  # quiet NaN, never truncated to inf
    return out.astype(np.uint32).view(np.float32)
