"""Grader of exercise 04.3: the AdamW update, bias-corrected, with decoupled weight decay.

Ground truth: torch.optim.AdamW in float64 on an ill-conditioned quadratic, 100 steps, the
gradient recomputed at each side's own weights. Configurations add one feature at a time
(core Adam, eps, decoupled decay, defaults, other betas), so the first one that fails says
which part of the update is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from minitorch.checks.core import assert_close, assert_true, grader, rng
from minitorch.checks.lab04._common import (
    as_float_array,
    call,
    quadratic,
    torch_trajectory,
    unchanged_input,
)

__all__ = ["check_adamw_step"]

STEPS = 100
_BIAS = (
    "Adam divides the moments by their bias corrections 1 - beta1**t and 1 - beta2**t, "
    "with t = 1 on the first step (m and v start at zero, so they are too small early on). "
    "At t = 1 every coordinate moves by about lr."
)
_CONFIGS: list[tuple[str, dict[str, Any], str]] = [
    ("Adam core (no decay)", dict(lr=1e-2, weight_decay=0.0), _BIAS),
    (
        "large eps 0.1",
        dict(lr=1e-2, eps=0.1, weight_decay=0.0),
        "eps is added outside the square root and after bias correction: "
        "denom = sqrt(v) / sqrt(1 - beta2**t) + eps.",
    ),
    (
        "decoupled decay 0.1",
        dict(lr=1e-2, weight_decay=0.1),
        "AdamW decays the weights themselves, before the Adam update: w <- w * (1 - lr * wd). "
        "Adding wd * w to the gradient is Adam + L2: the decay then passes through m / sqrt(v) "
        "and large-gradient weights are barely decayed (Loshchilov & Hutter 2019).",
    ),
    ("torch defaults", dict(lr=1e-3), "Check every term with torch's defaults."),
    (
        "betas (0.8, 0.95), wd 0.3",
        dict(lr=5e-3, betas=(0.8, 0.95), weight_decay=0.3),
        "Use the betas passed in (beta1 for m, beta2 for v) in the moments and in the bias "
        "corrections; decay with lr * weight_decay.",
    ),
]


def _random_configs(seed: int) -> list[tuple[str, dict[str, Any], str]]:
    g = rng(seed)
    out = []
    for i in range(3):
        cfg = dict(
            lr=float(10 ** g.uniform(-3, -1.5)),
            betas=(float(g.uniform(0.7, 0.95)), float(g.uniform(0.9, 0.999))),
            eps=float(10 ** g.uniform(-8, -3)),
            weight_decay=float(g.uniform(0.0, 0.3)),
        )
        out.append((f"random #{i}", cfg, "Check each term against torch's AdamW."))
    return out


def _run_config(
    student: Callable[..., Any], name: str, cfg: dict[str, Any], hint: str, seed: int
) -> float:
    problem = quadratic(seed, spread=1e3)  # curvatures over 3 decades: Adam's per-coordinate scale
    w0 = rng(seed + 100).standard_normal(problem.shape)

    def make(params: list) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, foreach=False, **cfg)

    want = torch_trajectory(make, problem, w0, STEPS)
    w, m, v, err = w0.copy(), np.zeros_like(w0), np.zeros_like(w0), 0.0
    for t in range(1, STEPS + 1):
        g = problem.grad(w)
        g_before = g.copy()
        case = f"{name}, step {t}" + (" (the first step)" if t == 1 else "")
        result = call(student, w.copy(), g, m, v, t, **cfg)
        assert_true(
            isinstance(result, tuple) and len(result) == 3,
            f"[{case}] return the triple (param, exp_avg, exp_avg_sq), "
            f"got {type(result).__name__}.",
        )
        unchanged_input(g_before, g, case, "grad")
        w, m, v = (
            as_float_array(r, case, n) for r, n in zip(result, ("param", "m", "v"), strict=True)
        )
        err = max(err, assert_close(w, want[t - 1], case=case, rtol=1e-6, atol=1e-6, hint=hint))
    return err


@grader("04.3", blocks=("minitorch.optim.adamw:AdamW",))
def check_adamw_step(adamw_step: Callable[..., Any]) -> str:
    """Exercise 04.3: adamw_step matches torch.optim.AdamW over 100 steps, every config."""
    configs = _CONFIGS + _random_configs(8)
    err = 0.0
    for i, (name, cfg, hint) in enumerate(configs):
        full = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2) | cfg
        err = max(err, _run_config(adamw_step, name, full, hint, seed=40 + i))
    return (
        f"{len(configs)} configurations x {STEPS} steps match torch.optim.AdamW "
        f"(max |Δw| {err:.1e})"
    )
