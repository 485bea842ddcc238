"""Optimizers, the learning-rate schedule, gradient clipping and loss scaling.

    opt = AdamW(model.parameters(), lr=3e-4)
    sched = WarmupCosine(opt, warmup_steps=100, total_steps=2000)
    loss.backward(); clip_grad_norm_(model.parameters(), 1.0); opt.step(); sched.step()

Lab: 04_training_loop
"""

from minitorch.optim.adamw import AdamW
from minitorch.optim.clip import clip_grad_norm_, clip_grad_value_
from minitorch.optim.grad_scaler import GradScaler
from minitorch.optim.optimizer import Optimizer
from minitorch.optim.schedule import WarmupCosine, warmup_cosine
from minitorch.optim.sgd import SGD

__all__ = [
    "SGD",
    "AdamW",
    "GradScaler",
    "Optimizer",
    "WarmupCosine",
    "clip_grad_norm_",
    "clip_grad_value_",
    "warmup_cosine",
]
