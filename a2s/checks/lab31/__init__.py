"""Graders of lab 31 (a PyTorch backend for a new chip).

Ground truth is in ``_truth``: CPU torch's ATen kernels called by the grader, the grader's
own chip memory and host link with its byte counts, the conv-BatchNorm fold in closed form
and an MLP in numpy. The reference (``minitorch.chip``) is blocked while the learner's code
runs, and every ``minitorch`` module is forbidden; torch is forbidden inside the kernels of
31.1, the fold of 31.3 and the export of 31.4 (31.2's fallback runs on torch by design).
"""

from a2s.checks.lab31.convbn import check_fold_conv_bn
from a2s.checks.lab31.fallback import check_fallback
from a2s.checks.lab31.kernels import check_kernels
from a2s.checks.lab31.lowering import check_lower_aten
from a2s.checks.lab31.onnx_export import check_export_mlp
from a2s.checks.lab31.platforms import check_platforms

__all__ = [
    "check_export_mlp",
    "check_fallback",
    "check_fold_conv_bn",
    "check_kernels",
    "check_lower_aten",
    "check_platforms",
]
