"""Grader of exercise 01.6: the dynamic loss-scale update, step for step with GradScaler."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader, plain
from a2s.checks.table import Table

__all__ = ["check_update_scale"]

_N = "minitorch.numerics"

_GROW = (
    "A clean step adds 1 to the tracker; when it reaches growth_interval the scale is "
    "multiplied by growth_factor and the tracker goes back to 0."
)
_SCALE_NAMED: list[tuple[str, tuple, tuple[float, int], str]] = [
    (
        "overflow backs off",
        (65536.0, 17, True, 2.0, 0.5, 2000),
        (32768.0, 0),
        "On inf/NaN grads: scale *= backoff_factor and the tracker restarts at 0.",
    ),
    ("clean step counts", (65536.0, 17, False, 2.0, 0.5, 2000), (65536.0, 18), _GROW),
    (
        "growth_interval-th clean step grows",
        (65536.0, 1999, False, 2.0, 0.5, 2000),
        (131072.0, 0),
        _GROW,
    ),
    ("custom factors, growth", (1024.0, 2, False, 4.0, 0.25, 3), (4096.0, 0), _GROW),
    (
        "custom factors, overflow",
        (1024.0, 2, True, 4.0, 0.25, 3),
        (256.0, 0),
        "On inf/NaN grads: scale *= backoff_factor (here 0.25) and the tracker restarts at 0.",
    ),
    (
        "growth that would overflow float32",
        (2.0**127, 1999, False, 2.0, 0.5, 2000),
        (2.0**127, 0),
        "A growth that would overflow float32 is refused (the scale stays) and the tracker "
        "resets to 0, as torch's float32 scale does.",
    ),
]


def _overflows(x: float) -> bool:
    with np.errstate(over="ignore"):
        return bool(np.isinf(np.float32(x)))


# each models one wrong update rule; its message is shown only when the answer is that rule's
_SCALE_MISTAKES = (
    Mistake(
        "That is a back-off by a fixed 0.5: multiply by the backoff_factor argument.",
        answer=lambda s, t, inf, g, b, i: _torch_update(s, t, inf, g, 0.5, i),
    ),
    Mistake(
        "That is a growth by a fixed 2: multiply by the growth_factor argument.",
        answer=lambda s, t, inf, g, b, i: _torch_update(s, t, inf, 2.0, b, i),
    ),
    Mistake(
        "The back-off is right but the tracker kept its count: an overflow restarts it at 0.",
        answer=lambda s, t, inf, g, b, i: (s * b, t) if inf else _torch_update(s, t, inf, g, b, i),
    ),
    Mistake(
        "The scale grew to inf: torch keeps the scale in float32 and refuses a growth that "
        "overflows it (the scale stays), while the tracker still resets to 0.",
        when=lambda got, s, t, inf, *_: not inf and got[0] == float("inf"),
    ),
    Mistake(
        "The refused growth is right but the tracker must still reset to 0.",
        when=lambda got, s, t, inf, g, b, i: (
            not inf and t + 1 == i and _overflows(s * g) and got == (s, t + 1)
        ),
    ),
    Mistake(
        "Off by one: the scale grows on the clean step that brings the tracker to "
        "growth_interval (tracker + 1 == growth_interval), and the tracker goes back to 0.",
        when=lambda got, s, t, inf, g, b, i: (
            not inf and t + 1 == i and not _overflows(s * g) and got == (s, t + 1)
        ),
    ),
)
_OVERFLOW_STEPS = frozenset({0, 1, 2, 9, 10, 17, 30, 31, 32, 33, 45})


class _PlainSGD:
    """Duck-typed SGD for GradScaler.step (a real torch.optim optimizer imports dynamo: 1.5 s)."""

    def __init__(self, params: list[torch.Tensor], lr: float) -> None:
        self.param_groups = [{"params": params}]
        self.lr = lr

    def zero_grad(self) -> None:
        for p in self.param_groups[0]["params"]:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for p in self.param_groups[0]["params"]:
            p -= self.lr * p.grad


def _grad_scaler_trace(steps: int, interval: int, init: float) -> list[tuple[float, int]]:
    """Drive a real torch.amp.GradScaler on a tiny Linear; grads are inf on scripted steps."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = _PlainSGD(list(model.parameters()), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=init, growth_interval=interval)
    x = torch.randn(8, 4)
    trace = []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale(model(x).square().mean()).backward()
        if step in _OVERFLOW_STEPS:
            model.weight.grad.fill_(float("inf"))
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), int(scaler._growth_tracker.item())))
    return trace


def _as_state(got: object, case: str) -> tuple[float, int]:
    try:
        scale, tracker = plain(got, case=case)
        return float(scale), int(tracker)
    except (TypeError, ValueError):
        msg = f"[{case}] return a tuple (scale, growth_tracker), got {got!r}."
        raise CheckFailure(msg) from None


def _torch_update(
    scale: float, tracker: int, found_inf: bool, growth: float, backoff: float, interval: int
) -> tuple[float, int]:
    """The next (scale, tracker) by torch's own kernel, torch._amp_update_scale_."""
    s = torch.tensor([scale], dtype=torch.float32)
    t = torch.tensor([tracker], dtype=torch.int32)
    torch._amp_update_scale_(s, t, torch.tensor([float(found_inf)]), growth, backoff, interval)
    return s.item(), int(t.item())


def _random_update(g: np.random.Generator, i: int) -> tuple[str, tuple[object, ...]]:
    """A random (scale, tracker, found_inf, factors, interval), against torch's own kernel."""
    interval = int(g.integers(1, 6))
    args = (
        float(np.float32(2.0 ** int(g.integers(-10, 128)))),
        int(g.integers(0, interval)),
        bool(g.random() < 0.3),
        float(g.choice([2.0, 4.0])),
        float(g.choice([0.5, 0.25])),
        interval,
    )
    return f"random case {i}", args


def _quiet(student: Callable[..., object]) -> Callable[..., object]:
    """The student with float32 overflow quiet (a refused growth overflows on purpose)."""

    def quiet(*args: object) -> object:
        with np.errstate(over="ignore"):
            return student(*args)

    return quiet


NAMED, RANDOM = (
    Table(
        "01.6",
        truth=_torch_update,
        named=named,
        draw=draw,
        seeded=seeded,
        fresh=seeded and 30,
        mistakes=mistakes,
        read=_as_state,
        message=f"[{{label}}] update_scale{{args}} returned {{got}}, {versus} {{want}}.{{hint}}",
        seed=106,
        prepare=_quiet,
    )
    for named, draw, seeded, mistakes, versus in (
        ([(c, a, h, w) for c, a, w, h in _SCALE_NAMED], None, 0, _SCALE_MISTAKES, "expected"),
        ((), _random_update, 200, (), "torch._amp_update_scale_ gives"),
    )
)


@grader(
    "01.6",
    blocks=(f"{_N}.loss_scaling:update_scale", f"{_N}.loss_scaling:DynamicLossScaler"),
    hand="trajectory",
)
def check_update_scale(update_scale: Callable[..., object]) -> str:
    """Exercise 01.6: dynamic loss-scale update, step for step with torch.amp.GradScaler."""
    NAMED.grade(update_scale)
    steps, interval, init = 60, 4, 1024.0
    trace = _grad_scaler_trace(steps, interval, init)
    state = (init, 0)
    for step, want in enumerate(trace):
        found_inf = step in _OVERFLOW_STEPS
        got = _quiet(update_scale)(*state, found_inf, 2.0, 0.5, interval)
        got = _as_state(got, f"step {step}")
        if got != want:
            raise CheckFailure(
                f"[GradScaler script, step {step}] from (scale, tracker) = {state} with "
                f"found_inf = {found_inf}: got {got}, torch.amp.GradScaler has {want}. "
                + ("On overflow: back off and reset." if found_inf else _GROW)
            )
        state = got
    RANDOM.grade(update_scale)
    skipped = len(_OVERFLOW_STEPS)
    return (
        f"{steps} scripted steps match torch.amp.GradScaler ({skipped} overflows skipped, "
        f"scale 1024 -> {trace[-1][0]:g}) and 230 random updates (30 fresh) match "
        "_amp_update_scale_"
    )
