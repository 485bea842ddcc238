"""Numerics: floating-point formats, rounding, scaled FP8, summation, loss scaling.

Layer 0 of the stack: what a number is before any kernel touches it. ``formats`` describes a
bit layout and decodes/encodes any of them; ``bfloat16`` and ``fp8`` are the fast casts the
training and inference labs use; ``summation`` and ``loss_scaling`` are the two classic fixes
for accumulated and vanishing error; ``stochastic`` is unbiased rounding.

Lab: 01_numerics
"""

from minitorch.numerics.bfloat16 import (
    bf16_bits_to_float32,
    round_to_bf16,
    round_to_bf16_bits,
    round_to_fp16,
)
from minitorch.numerics.formats import (
    BF16,
    FORMATS,
    FP8_E4M3,
    FP8_E5M2,
    FP16,
    FP32,
    FloatFormat,
    all_values,
    decode,
    encode,
)
from minitorch.numerics.fp8 import cast_to_e4m3, cast_to_fp8, dequantize, fp8_scale
from minitorch.numerics.loss_scaling import DynamicLossScaler, update_scale
from minitorch.numerics.stochastic import stochastic_round_to_bf16
from minitorch.numerics.summation import (
    U32,
    gamma,
    kahan_error_bound,
    kahan_sum,
    naive_error_bound,
    naive_sum,
    pairwise_depth,
    pairwise_error_bound,
    pairwise_sum,
)

__all__ = [
    "BF16",
    "FORMATS",
    "FP8_E4M3",
    "FP8_E5M2",
    "FP16",
    "FP32",
    "U32",
    "DynamicLossScaler",
    "FloatFormat",
    "all_values",
    "bf16_bits_to_float32",
    "cast_to_e4m3",
    "cast_to_fp8",
    "decode",
    "dequantize",
    "encode",
    "fp8_scale",
    "gamma",
    "kahan_error_bound",
    "kahan_sum",
    "naive_error_bound",
    "naive_sum",
    "pairwise_depth",
    "pairwise_error_bound",
    "pairwise_sum",
    "round_to_bf16",
    "round_to_bf16_bits",
    "round_to_fp16",
    "stochastic_round_to_bf16",
    "update_scale",
]
