"""Graders of lab 04 (training loop): modules, SGD, AdamW, schedule, mixed precision, loop,
recomputation.

One module per exercise; the check cells call them as ``lab04.check_sgd_step(sgd_step)``
and so on. Ground truth is torch: ``named_parameters`` of mirrored module trees,
torch.optim.SGD/AdamW trajectories, LinearLR + CosineAnnealingLR, FP32 twins and torch's
float16/bfloat16 casts, float64 gradients; plus loops and closed forms written in the
graders. The lab's reference entry points are blocked while the student's code runs.
"""

from a2s.checks.lab04.adamw import check_adamw_step
from a2s.checks.lab04.amp import check_amp_step
from a2s.checks.lab04.loop import check_fit
from a2s.checks.lab04.module import check_named_parameters
from a2s.checks.lab04.recompute import check_sqrt_checkpoint
from a2s.checks.lab04.schedule import check_lr_schedule
from a2s.checks.lab04.sgd import check_sgd_step

__all__ = [
    "check_adamw_step",
    "check_amp_step",
    "check_fit",
    "check_lr_schedule",
    "check_named_parameters",
    "check_sgd_step",
    "check_sqrt_checkpoint",
]
