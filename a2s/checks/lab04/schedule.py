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

from a2s.checks.cases import Mistake
from a2s.checks.compare import number
from a2s.checks.core import grader
from a2s.checks.table import Table

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


def _schedule(ramp: int = 1, span: int = 1, floor: bool = True) -> Callable[..., float]:
    """The closed form, or a learner's with one mistake: the warmup ramps from s + ``ramp``,
    the cosine spans total - ``span`` x warmup steps, it decays to min_lr (``floor``) or 0."""

    def lr(s: int, base_lr: float, warmup_steps: int, total_steps: int, min_lr: float) -> float:
        if s < warmup_steps:
            return base_lr * (s + ramp) / warmup_steps
        low = min_lr if floor else 0.0
        progress = min((s - warmup_steps) / (total_steps - span * warmup_steps), 1.0)
        return low + (base_lr - low) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return lr


def _same(got: float, truth: float) -> bool:
    return abs(got - truth) <= 1e-9 * max(abs(truth), 1e-12) + 1e-15


def _gives(wrong: Callable[..., float]) -> Callable[..., bool]:
    # when=, not answer=: the learner is called by keyword, a mistake's answer positionally
    return lambda got, *args: _same(got, wrong(*args))


_closed_form = _schedule()
_MISTAKES = (
    Mistake(
        "Off by one in the warmup: step 0 must already train, lr(0) = base/warmup, and "
        "the ramp reaches base_lr at step warmup - 1 (torch's LinearLR from 1/warmup).",
        when=_gives(_schedule(ramp=0)),
    ),
    Mistake(
        "After total_steps the rate stays at min_lr (a cosine would start rising again).",
        when=lambda got, s, base, warmup, total, min_lr: s >= total,
    ),
    Mistake(
        "The cosine spans the steps after warmup: progress = (s - warmup) / (total - warmup).",
        when=_gives(_schedule(span=0)),
    ),
    Mistake(
        "The cosine decays to min_lr, not to 0: min_lr + (base - min_lr) * (1 + cos) / 2.",
        when=_gives(_schedule(floor=False)),
    ),
)


def _steps(sched: tuple[float, int, int, float]) -> list[tuple[Any, ...]]:
    """Every step of one schedule, and 5 past its end, with torch's rate (or the closed form)."""
    base, warmup, total, min_lr = sched
    want = _torch_lrs(base, warmup, total, min_lr) if warmup >= 2 else []
    label = f"base {base:g}, warmup {warmup}, total {total}, min {min_lr:g}; step {{}}"
    return [
        (label.format(s), (s, *sched), None, want[s] if s < len(want) else _closed_form(s, *sched))
        for s in range(total + 6)
    ]


def _fresh_schedule(g: np.random.Generator, i: int) -> Any:
    base, warmup = float(10 ** g.uniform(-4, 0)), int(g.integers(2, 20))
    return _steps((base, warmup, warmup + int(g.integers(5, 60)), base * float(g.uniform(0, 0.2))))


SCHEDULE = Table(
    "04.4",
    truth=_closed_form,  # every row carries torch's rate: the truth past total and at warmup < 2
    draw=_fresh_schedule,
    fresh=2,
    mistakes=_MISTAKES,
    hint="Warmup: base * (s + 1) / warmup; then min_lr + (base - min_lr) * (1 + cos(pi p)) / 2.",
    same=_same,
    read=lambda got, case: number(
        got, case=case, message=f"[{case}] return a float, got {type(got).__name__}."
    ),
    message="[{label}] lr {got!r}, expected {want!r}.{hint}",
    prepare=lambda lr_at: (
        lambda s, base, warmup, total, min: lr_at(
            s, base_lr=base, warmup_steps=warmup, total_steps=total, min_lr=min
        )
    ),
)


@grader(
    "04.4",
    blocks=("minitorch.optim.schedule:warmup_cosine", "minitorch.optim.schedule:WarmupCosine"),
)
def check_lr_schedule(lr_at: Callable[..., Any]) -> str:
    """Exercise 04.4: lr_at(step, ...) equals torch's chained warmup + cosine at every step."""
    checked = SCHEDULE.grade(lr_at, named=[row for c in _CASES for row in _steps(c)])
    return (
        f"{checked} steps over {len(_CASES) + 2} schedules (2 fresh) match torch's LinearLR + "
        "CosineAnnealingLR"
    )
