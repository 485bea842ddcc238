"""Graders of lab 12 (LoRA, prefix tuning): forward/backward, merge/unmerge, optimizer memory,
many adapters, attention with a trainable prefix and its memory.

One module per concept; the check cells call them as ``lab12.check_lora(lora_forward,
lora_backward)`` and so on. Ground truth is torch autograd in float64 with the base weight
frozen (``requires_grad=False``), and plain loops written in the graders for the parameter and
byte counts. The unmerged paths are held to a memory budget: they may never build the
(d_out, d_in) update B A, nor a weight gradient.
"""

from a2s.checks.lab12.adapters import check_multi_adapter
from a2s.checks.lab12.lora import check_lora, check_merge
from a2s.checks.lab12.memory import check_lora_memory
from a2s.checks.lab12.prefix import check_prefix_attention
from a2s.checks.lab12.prefix_memory import check_prefix_memory

__all__ = [
    "check_lora",
    "check_lora_memory",
    "check_merge",
    "check_multi_adapter",
    "check_prefix_attention",
    "check_prefix_memory",
]
