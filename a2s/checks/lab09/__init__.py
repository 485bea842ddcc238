"""Graders of lab 09 (the transformer and the tiny GPT).

Students write each piece in numpy; every answer is compared with torch in float64
(``F.scaled_dot_product_attention``, the complex-number RoPE, ``F.rms_norm``, ``F.silu``) or
with the paper's closed form (ALiBi slopes), on fixed teaching cases with a hint per known
mistake plus fresh random cases. The reference of ``minitorch.model`` is blocked and torch
is forbidden in student code. ``_truth`` holds the torch twin of the course GPT.
"""

from a2s.checks.lab09.attention import check_causal_attention, check_gqa
from a2s.checks.lab09.blocks import check_rms_norm, check_swiglu
from a2s.checks.lab09.kv_cache import check_kv_cache_bytes
from a2s.checks.lab09.positions import check_alibi_slopes, check_rope

__all__ = [
    "check_alibi_slopes",
    "check_causal_attention",
    "check_gqa",
    "check_kv_cache_bytes",
    "check_rms_norm",
    "check_rope",
    "check_swiglu",
]
