"""Graders of lab 08 (fused kernels and FlashAttention).

Every kernel runs against an instrumented :class:`~minitorch.kernels.io_model.HBM`: loads and
stores are counted and capped at an SRAM tile, the bytes moved must equal the IO model's count,
and FlashAttention's extra memory (tracemalloc) must stay O(tiles). Values are checked against
torch in float64 (``F.gelu``, ``F.rms_norm``, ``torch.softmax``, ``F.scaled_dot_product_attention``
and its autograd). The reference kernels of ``minitorch.kernels`` are blocked.
"""

from a2s.checks.lab08.flash import check_flash_backward, check_flash_forward
from a2s.checks.lab08.fusion import check_fusion
from a2s.checks.lab08.softmax import check_online_softmax
from a2s.checks.lab08.traffic import check_predicted_traffic

__all__ = [
    "check_flash_backward",
    "check_flash_forward",
    "check_fusion",
    "check_online_softmax",
    "check_predicted_traffic",
]
