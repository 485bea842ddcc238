"""Graders of lab 03 (tensor autograd): unbroadcast, matmul, conv2d, pooling, batch norm, loss.

Each exercise writes a backward rule (or the forward it needs) on plain numpy arrays; the
check cells call them as ``lab03.check_unbroadcast(unbroadcast)`` and so on. Ground truth is
torch.autograd in float64 on named edge cases and seeded random shapes, never minitorch,
whose matching forward and backward functions (and the engine's backward pass) are blocked
while the student's code runs.
"""

from a2s.checks.lab03.broadcast import check_matmul_backward, check_unbroadcast
from a2s.checks.lab03.conv import check_conv2d_backward, check_conv2d_forward
from a2s.checks.lab03.loss import check_cross_entropy
from a2s.checks.lab03.norm import check_batch_norm_backward
from a2s.checks.lab03.pool import check_pool_backward

__all__ = [
    "check_batch_norm_backward",
    "check_conv2d_backward",
    "check_conv2d_forward",
    "check_cross_entropy",
    "check_matmul_backward",
    "check_pool_backward",
    "check_unbroadcast",
]
