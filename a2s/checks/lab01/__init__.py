"""Graders of lab 01 (numerics): decode, BF16 rounding, scaled FP8, Kahan, pairwise, loss scaling.

One module per exercise (or pair of exercises); the check cells call them as
``lab01.check_decode(decode)`` and so on. Ground truth comes from torch's own dtypes
(float8_e4m3fn, float8_e5m2, float16, bfloat16), torch.amp.GradScaler, plain float32 loops
written in the graders, and math.fsum; never from minitorch.numerics, whose entry points are
blocked while the student's code runs.
"""

from a2s.checks.lab01.bf16 import check_round_to_bf16
from a2s.checks.lab01.decode import check_decode
from a2s.checks.lab01.fp8 import check_cast_to_e4m3
from a2s.checks.lab01.loss_scaling import check_update_scale
from a2s.checks.lab01.stochastic import check_stochastic_round
from a2s.checks.lab01.summation import check_kahan_sum, check_pairwise_sum

__all__ = [
    "check_cast_to_e4m3",
    "check_decode",
    "check_kahan_sum",
    "check_pairwise_sum",
    "check_round_to_bf16",
    "check_stochastic_round",
    "check_update_scale",
]
