"""Grader of exercise 04.5: one mixed-precision step with dynamic loss scaling.

Ground truth is torch: an FP32 (float64) twin of the model gives the loss and gradients the
step must approximate, torch's float16/bfloat16 casts say whether a gradient really came
out of low-precision compute, and 40 steps of torch FP32 SGD give the loss curve that the
mixed-precision run must track. The scripted overflow (scale 2^40 in FP16) must be skipped:
master weights and optimizer state untouched, scale halved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain, rng
from a2s.checks.twins import torch_mlp
from minitorch.nn import MLP
from minitorch.optim import SGD, AdamW

__all__ = ["check_amp_step"]

_LOWP = {"fp16": torch.float16, "bf16": torch.bfloat16}
_GRAD_RTOL = {"fp16": 5e-3, "bf16": 3e-2}  # max |g - g_fp32| / max |g_fp32|
TRACK_STEPS, TRACK_TOL = 40, 0.01
_STALE = 100.0  # the clean steps start with p.grad full of this


def _problem(g: np.random.Generator, n: int = 32) -> tuple[MLP, np.ndarray, np.ndarray, np.ndarray]:
    model = MLP([16, 32, 4], "tanh", rng=g)  # smooth: no ReLU kink flips under rounding
    teacher = g.standard_normal((16, 4))
    x = g.standard_normal((n, 16)).astype(np.float32)
    return model, x, (x @ teacher).argmax(1), teacher


def _torch_loss_grads(model: MLP, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
    twin = torch_mlp(model)
    loss = torch.nn.functional.cross_entropy(twin(torch.from_numpy(x).double()), torch.tensor(y))
    loss.backward()
    return loss.item(), [p.grad.numpy() for p in twin.parameters()]


def _unpack(result: Any, case: str) -> tuple[float, float, int]:
    result = plain(result, case=case)
    ok = isinstance(result, tuple) and len(result) == 3
    assert_true(ok, f"[{case}] return (loss, new_scale, new_good_steps), got {result!r:.100}.")
    try:
        return float(result[0]), float(result[1]), int(result[2])
    except (TypeError, ValueError):
        raise CheckFailure(f"[{case}] loss and scale must be numbers, good_steps an int.") from None


def _in_format(a: np.ndarray, fmt: str) -> bool:
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    return bool(torch.equal(t.to(_LOWP[fmt]).to(torch.float32), t))


def _clean_step(
    student: Callable[..., Any],
    fmt: str,
    scale: float,
    good: int,
    grow: int,
    g: np.random.Generator | None = None,
) -> str:
    case = f"{fmt}, scale {scale:g}, good_steps {good}, growth_interval {grow}"
    case = fresh(case) if g is not None else case
    model, x, y, _ = _problem(rng(1) if g is None else g)
    want_loss, want_grads = _torch_loss_grads(model, x, y)
    params = model.parameters()
    before = [p.data.copy() for p in params]
    for p in params:  # a stale gradient left over from a previous step
        p.grad = np.full(p.shape, _STALE, np.float32)
    opt = SGD(params, lr=0.1)
    loss, new_scale, new_good = _unpack(
        call(student, model, opt, x, y, scale, good, fmt=fmt, growth_interval=grow), case
    )
    hint_loss = (
        " Return the unscaled loss (loss.item(), not the scaled one)."
        if abs(loss - want_loss * scale) < 1e-2 * scale
        else ""
    )
    assert_true(
        abs(loss - want_loss) < 1e-2,
        f"[{case}] loss {loss:.6g}, FP32 loss {want_loss:.6g}.{hint_loss}",
    )
    for p, w0, gw in zip(params, before, want_grads, strict=True):
        assert_true(
            p.grad is not None,
            f"[{case}] a parameter has no .grad: run backward on the scaled loss.",
        )
        grad = plain(p.grad, what="p.grad", case=case)
        err = np.abs(grad - gw).max() / np.abs(gw).max()
        ratio = np.abs(grad).max() / np.abs(gw).max()
        hint = ""
        if abs(ratio - scale) < 0.05 * scale and scale > 1:
            hint = (
                " Your gradients are `scale` times too large: divide every p.grad by the scale "
                "before the optimizer step (unscale)."
            )
        elif abs(float(np.mean(grad - gw)) - _STALE / scale) < 0.05 * _STALE / scale:
            hint = (
                " p.grad held a stale gradient from an earlier step and yours was added to it: "
                "call optimizer.zero_grad() before backward."
            )
        assert_true(
            err <= _GRAD_RTOL[fmt],
            f"[{case}] p.grad differs from torch's FP32 gradient by {err:.2e} (relative to "
            f"its max; {fmt} allows {_GRAD_RTOL[fmt]:g}).{hint}",
        )
        assert_true(
            _in_format(grad * np.float32(scale), fmt),
            f"[{case}] p.grad * scale is not a {fmt} number: the gradients were not computed in "
            f"{fmt}. Run the forward (model and loss) inside `with autocast(fmt):`, then backward.",
        )
        assert_true(
            p.data.dtype == np.float32,
            f"[{case}] master weights must stay float32, got {p.data.dtype}.",
        )
        assert_true(
            np.allclose(p.data, w0 - np.float32(0.1) * grad, rtol=1e-6, atol=1e-7),
            f"[{case}] the weights are not w - lr * p.grad after the step: call optimizer.step() "
            "exactly once, after unscaling, when the gradients are finite.",
        )
    assert_true(
        opt.step_count == 1, f"[{case}] optimizer.step() ran {opt.step_count} times, expected once."
    )
    grown = good + 1 == grow
    want_scale, want_good = (scale * 2, 0) if grown else (scale, good + 1)
    assert_true(
        (new_scale, new_good) == (want_scale, want_good),
        f"[{case}] returned scale {new_scale:g}, good_steps {new_good}; expected {want_scale:g}, "
        f"{want_good}. "
        + (
            "After growth_interval clean steps in a row the scale doubles and the count "
            "restarts at 0."
            if grown
            else "A clean step keeps the scale and counts one more good step."
        ),
    )
    return case


def _overflow_step(student: Callable[..., Any]) -> None:
    case = "fp16, scale 2^40: the scaled gradients overflow"
    model, x, y, _ = _problem(rng(2))
    want_loss, _ = _torch_loss_grads(model, x, y)
    before = [p.data.copy() for p in model.parameters()]
    opt = AdamW(model.parameters(), lr=1e-2)
    with np.errstate(over="ignore", invalid="ignore"):  # inf * 0 -> nan is the scenario
        result = call(student, model, opt, x, y, 2.0**40, 5, fmt="fp16", growth_interval=2000)
    loss, new_scale, new_good = _unpack(result, case)
    assert_true(
        np.isfinite(loss) and abs(loss - want_loss) < 1e-2,
        f"[{case}] loss {loss!r}, FP32 loss {want_loss:.6g}: return the unscaled FP32 loss "
        "even when the gradients overflow.",
    )
    changed = any(
        not np.array_equal(p.data, w0) for p, w0 in zip(model.parameters(), before, strict=True)
    )
    assert_true(
        not changed and opt.step_count == 0,
        f"[{case}] the step was not skipped (weights changed: {changed}, optimizer.step() calls: "
        f"{opt.step_count}). When any unscaled gradient is inf or NaN, skip optimizer.step() "
        "entirely: the master weights and the optimizer's moments must not move.",
    )
    assert_true(
        (new_scale, new_good) == (2.0**39, 0),
        f"[{case}] returned scale {new_scale:g}, good_steps {new_good}; expected {2.0**39:g}, 0: "
        "on overflow halve the scale and reset the count of good steps.",
    )


def _tracking(student: Callable[..., Any]) -> float:
    model, _, _, teacher = _problem(rng(3))
    twin = torch_mlp(model)
    opt, topt = SGD(model.parameters(), lr=0.2), torch.optim.SGD(twin.parameters(), lr=0.2)
    g = rng(4)
    scale, good, worst = 2.0**12, 0, 0.0
    for k in range(TRACK_STEPS):
        xb = g.standard_normal((32, 16)).astype(np.float32)
        yb = (xb @ teacher).argmax(1)
        loss, scale, good = _unpack(
            call(student, model, opt, xb, yb, scale, good, fmt="fp16", growth_interval=1000),
            f"tracking, step {k}",
        )
        ref = torch.nn.functional.cross_entropy(
            twin(torch.from_numpy(xb).double()), torch.tensor(yb)
        )
        topt.zero_grad()
        ref.backward()
        topt.step()
        worst = max(worst, abs(loss - ref.item()))
        assert_true(
            abs(loss - ref.item()) <= TRACK_TOL,
            f"[tracking, fp16 + loss scaling vs torch FP32, step {k}] loss {loss:.5f}, FP32 "
            f"{ref.item():.5f} (allowed ±{TRACK_TOL}). Mixed precision should track FP32; a drift "
            "that grows usually means gradients accumulate across steps (zero_grad before "
            "backward) or are not unscaled.",
        )
    return worst


@grader(
    "04.5",
    blocks=(
        "minitorch.optim.grad_scaler:GradScaler",
        "minitorch.numerics.loss_scaling:DynamicLossScaler",
    ),
    hand="trajectory",
)
def check_amp_step(amp_step: Callable[..., Any]) -> str:
    """Exercise 04.5: a mixed-precision step with dynamic loss scaling (skip, unscale, grow)."""
    _clean_step(amp_step, "fp16", 1024.0, 0, 2000)
    _clean_step(amp_step, "bf16", 8.0, 2, 3)
    new = fresh_rng("04.5")
    grow = int(new.integers(2, 6))
    fmt, scale = str(new.choice(["fp16", "bf16"])), 2.0 ** int(new.integers(2, 15))
    _clean_step(amp_step, fmt, scale, int(new.integers(0, grow)), grow, new)
    _overflow_step(amp_step)
    worst = _tracking(amp_step)
    return (
        f"clean (1 fresh), growth and overflow steps right; FP16 loss tracks torch FP32 over "
        f"{TRACK_STEPS} steps within {worst:.1e}"
    )
