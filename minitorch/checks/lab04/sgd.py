"""Grader of exercise 04.2: the SGD update (momentum, dampening, Nesterov, weight decay).

Ground truth: torch.optim.SGD in float64 on an ill-conditioned quadratic, 100 steps, the
gradient recomputed at each side's own weights, so an error compounds as it would in
training. Configurations are ordered so each adds one feature: the first that fails names
the feature that is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minitorch.checks.core import assert_close, assert_true, grader, rng
from minitorch.checks.lab04._common import (
    as_float_array,
    call,
    quadratic,
    torch_trajectory,
    unchanged_input,
)

__all__ = ["check_sgd_step"]

STEPS = 100

# (name, hyper-parameters, what a failure here usually means)
_CONFIGS: list[tuple[str, dict[str, Any], str]] = [
    ("plain SGD", dict(lr=0.5), "Plain SGD is w <- w - lr * g; with momentum=0 return buf=None."),
    (
        "momentum 0.9",
        dict(lr=0.1, momentum=0.9),
        "Heavy ball: buf <- momentum * buf + g, then w <- w - lr * buf. On the first step "
        "(buf is None) torch sets buf = g, a copy.",
    ),
    (
        "momentum 0.9, dampening 0.5",
        dict(lr=0.1, momentum=0.9, dampening=0.5),
        "Dampening scales the new gradient, buf <- momentum * buf + (1 - dampening) * g, but "
        "NOT on the first step: torch starts the buffer as g itself, undamped.",
    ),
    (
        "Nesterov",
        dict(lr=0.1, momentum=0.9, nesterov=True),
        "Nesterov steps along the look-ahead g + momentum * buf (buf already updated this "
        "step), not along buf.",
    ),
    (
        "weight decay 0.05",
        dict(lr=0.1, momentum=0.9, weight_decay=0.05),
        "SGD's weight_decay is L2: g <- g + weight_decay * w first, and that g feeds the "
        "momentum buffer (it is not a separate shrink of w).",
    ),
    (
        "Nesterov + weight decay",
        dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        "Weight decay goes into g before the buffer; Nesterov then uses that same g.",
    ),
]


def _random_configs(seed: int) -> list[tuple[str, dict[str, Any], str]]:
    g = rng(seed)
    out = []
    for i in range(3):
        nesterov = bool(g.integers(0, 2))
        cfg = dict(
            lr=float(g.uniform(0.02, 0.2)),
            momentum=float(g.uniform(0.5, 0.95)),
            dampening=0.0 if nesterov else float(g.uniform(0.0, 0.5)),
            nesterov=nesterov,
            weight_decay=float(g.uniform(0.0, 0.1)),
        )
        out.append((f"random #{i}", cfg, "Check each term against torch's SGD formula."))
    return out


def _run_config(
    student: Callable[..., Any], name: str, cfg: dict[str, Any], hint: str, seed: int
) -> float:
    problem = quadratic(seed)
    w0 = rng(seed + 100).standard_normal(problem.shape)
    want = torch_trajectory(lambda params: torch.optim.SGD(params, **cfg), problem, w0, STEPS)
    w, buf, err = w0.copy(), None, 0.0
    for t in range(1, STEPS + 1):
        g = problem.grad(w)
        g_before = g.copy()
        result = call(student, w.copy(), g, buf, **cfg)
        case = f"{name}, step {t}" + (" (the first step)" if t == 1 else "")
        assert_true(
            isinstance(result, tuple) and len(result) == 2,
            f"[{case}] return the pair (param, buf), got {type(result).__name__}.",
        )
        unchanged_input(g_before, g, case, "grad")
        w = as_float_array(result[0], case, "param")
        buf = result[1]
        if not cfg.get("momentum"):
            assert_true(buf is None, f"[{case}] with momentum=0 there is no buffer: return None.")
        elif buf is None:
            assert_true(False, f"[{case}] with momentum > 0 return the momentum buffer, not None.")
        err = max(err, assert_close(w, want[t - 1], case=case, rtol=1e-6, atol=1e-6, hint=hint))
    return err


@grader("04.2", blocks=("minitorch.optim.sgd:SGD",))
def check_sgd_step(sgd_step: Callable[..., Any]) -> str:
    """Exercise 04.2: sgd_step matches torch.optim.SGD over 100 steps, every configuration."""
    configs = _CONFIGS + _random_configs(7)
    err = 0.0
    for i, (name, cfg, hint) in enumerate(configs):
        full = dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0) | cfg
        err = max(err, _run_config(sgd_step, name, full, hint, seed=20 + i))
    return (
        f"{len(configs)} configurations x {STEPS} steps match torch.optim.SGD (max |Δw| {err:.1e})"
    )
