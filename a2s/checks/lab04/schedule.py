"""Grader of exercise 04.4: linear warmup then cosine decay, step by step.

Ground truth: torch's own schedulers chained, SequentialLR(LinearLR(1/warmup -> 1 over
warmup - 1 steps), CosineAnnealingLR(T_max = total - warmup, eta_min)), read off a torch
optimizer's learning rate at every step up to ``total_steps``; past it, and for warmup 0
or 1, the closed form written below (torch's cosine would rise again after T_max).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import Case, fresh, run_cases
from a2s.checks.compare import number
from a2s.checks.core import fresh_rng, grader

__all__ = ["check_lr_schedule"]

# (base_lr, warmup_steps, total_steps, min_lr)
_CASES: list[tuple[float, int, int, float]] = [
    (1.0, 4, 12, 0.0),
    (1e-3, 10, 100, 1e-5),
    (3e-4, 100, 2000, 3e-5),
    (0.1, 2, 7, 0.01),
    (0.5, 0, 20, 0.0),
    (0.5, 1, 20, 0.05),
]


def _torch_lrs(base: float, warmup: int, total: int, min_lr: float) -> list[float]:
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base)
    sched = torch.optim.lr_scheduler
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ramp = sched.LinearLR(opt, 1.0 / warmup, 1.0, total_iters=warmup - 1)
        cos = sched.CosineAnnealingLR(opt, T_max=total - warmup, eta_min=min_lr)
        seq = sched.SequentialLR(opt, [ramp, cos], milestones=[warmup])
        out = []
        for _ in range(total + 1):
            out.append(float(opt.param_groups[0]["lr"]))
            opt.step()
            seq.step()
    return out


def _closed_form(s: int, base: float, warmup: int, total: int, min_lr: float) -> float:
    if s < warmup:
        return base * (s + 1) / warmup
    progress = min((s - warmup) / (total - warmup), 1.0)
    return min_lr + (base - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def _hint(s: int, got: float, base: float, warmup: int, total: int, min_lr: float) -> str:
    close = lambda a, b: abs(a - b) <= 1e-9 * max(abs(b), 1e-12)  # noqa: E731
    if s < warmup and close(got, base * s / warmup):
        return (
            "Off by one in the warmup: step 0 must already train, lr(0) = base/warmup, and "
            "the ramp reaches base_lr at step warmup - 1 (torch's LinearLR from 1/warmup)."
        )
    if s >= total:
        return "After total_steps the rate stays at min_lr (a cosine would start rising again)."
    p = (s - warmup) / total
    if s >= warmup and close(got, min_lr + (base - min_lr) * 0.5 * (1 + math.cos(math.pi * p))):
        return (
            "The cosine spans the steps after warmup: progress = (s - warmup) / (total - warmup)."
        )
    if s >= warmup and close(
        got, base * 0.5 * (1 + math.cos(math.pi * (s - warmup) / (total - warmup)))
    ):
        return "The cosine decays to min_lr, not to 0: min_lr + (base - min_lr) * (1 + cos) / 2."
    return "Warmup: base * (s + 1) / warmup; then min_lr + (base - min_lr) * (1 + cos(pi p)) / 2."


def _fresh_schedules(g: np.random.Generator, n: int) -> list[tuple[float, int, int, float]]:
    out = []
    for _ in range(n):
        base, warmup = float(10 ** g.uniform(-4, 0)), int(g.integers(2, 20))
        out.append((base, warmup, warmup + int(g.integers(5, 60)), base * float(g.uniform(0, 0.2))))
    return out


def _schedule(
    lr_at: Callable[..., Any], sched: tuple[float, int, int, float], mark: Callable
) -> int:
    """Every step of one schedule, and 5 past its end, against torch (or the closed form)."""
    base, warmup, total, min_lr = sched
    want = _torch_lrs(base, warmup, total, min_lr) if warmup >= 2 else []
    label = f"base {base:g}, warmup {warmup}, total {total}, min {min_lr:g}; step {{}}"

    def read(got: Any, case: str) -> float:
        return number(got, case=case, message=f"[{case}] return a float, got {type(got).__name__}.")

    return run_cases(
        lambda s: lr_at(s, base_lr=base, warmup_steps=warmup, total_steps=total, min_lr=min_lr),
        [
            Case(mark(label.format(s)), (s,), want[s] if s < len(want) else _closed_form(s, *sched))
            for s in range(total + 6)
        ],
        read=read,
        same=lambda got, truth: abs(got - truth) <= 1e-9 * max(abs(truth), 1e-12) + 1e-15,
        message=lambda c, got, truth, _: (
            f"[{c.label}] lr {got!r}, expected {truth!r}. " + _hint(c.args[0], got, *sched)
        ),
    )


@grader(
    "04.4",
    blocks=("minitorch.optim.schedule:warmup_cosine", "minitorch.optim.schedule:WarmupCosine"),
    hand="trajectory",
)
def check_lr_schedule(lr_at: Callable[..., Any]) -> str:
    """Exercise 04.4: lr_at(step, ...) equals torch's chained warmup + cosine at every step."""
    schedules: list[tuple[tuple[float, int, int, float], Callable[[str], str]]]
    schedules = [(c, str) for c in _CASES]
    schedules += [(c, fresh) for c in _fresh_schedules(fresh_rng("04.4"), 2)]
    checked = sum(_schedule(lr_at, sched, mark) for sched, mark in schedules)
    return (
        f"{checked} steps over {len(schedules)} schedules (2 fresh) match torch's LinearLR + "
        "CosineAnnealingLR"
    )
