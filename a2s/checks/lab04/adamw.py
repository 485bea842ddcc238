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

from a2s.checks.cases import fresh
from a2s.checks.compare import call, float_array
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.trajectory import Quadratic, Rule, follow, quadratic, torch_trajectory

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
        "AdamW decays the weights themselves, before the Adam update: w <- w * (1 - lr * wd) "
        "(Loshchilov & Hutter 2019).",
    ),
    ("torch defaults", dict(lr=1e-3), "lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2."),
    (
        "betas (0.8, 0.95), wd 0.3",
        dict(lr=5e-3, betas=(0.8, 0.95), weight_decay=0.3),
        "beta1 for m, beta2 for v, in the moments and in the bias corrections; decay with "
        "lr * weight_decay.",
    ),
]


def _adamw_rule(cfg: dict[str, Any], wrong: str = "") -> Rule:
    """torch.optim.AdamW's update in numpy, or the modelled mistake ``wrong`` of it."""
    lr, eps, wd = cfg["lr"], cfg["eps"], cfg["weight_decay"]
    b1, b2 = cfg["betas"][::-1] if wrong == "betas swapped" else cfg["betas"]

    def rule(w: np.ndarray, g: np.ndarray, state: dict, t: int) -> np.ndarray:
        if wrong == "L2":
            g = g + wd * w
        elif wrong == "decay without lr":
            w = w * (1 - wd)
        elif wrong != "decay after":
            w = w * (1 - lr * wd)
        m = state["m"] = b1 * state.get("m", 0.0) + (1 - b1) * g
        v = state["v"] = b2 * state.get("v", 0.0) + (1 - b2) * g * g
        bc1, bc2 = (1.0, 1.0) if wrong == "no bias correction" else (1 - b1**t, 1 - b2**t)
        if wrong == "eps inside sqrt":
            denom = np.sqrt(v / bc2 + eps)
        elif wrong == "eps before correction":
            denom = (np.sqrt(v) + eps) / np.sqrt(bc2)
        else:
            denom = np.sqrt(v) / np.sqrt(bc2) + eps
        w = w - lr / bc1 * m / denom
        return w * (1 - lr * wd) if wrong == "decay after" else w

    return rule


_ADAMW_MISTAKES = (
    (
        "no bias correction",
        "That trajectory has no bias correction: divide m by 1 - beta1**t and v by "
        "1 - beta2**t (t = 1 on the first step), or the first steps are far too small.",
    ),
    (
        "eps inside sqrt",
        "That puts eps inside the square root: torch adds it outside, "
        "denom = sqrt(v) / sqrt(1 - beta2**t) + eps.",
    ),
    (
        "eps before correction",
        "That adds eps before the bias correction, (sqrt(v) + eps) / sqrt(1 - beta2**t): torch "
        "adds it after, sqrt(v) / sqrt(1 - beta2**t) + eps.",
    ),
    (
        "L2",
        "That is Adam + L2 (wd * w added to the gradient): the decay then passes through "
        "m / sqrt(v), and weights with large gradients are barely decayed. AdamW decays the "
        "weights themselves: w <- w * (1 - lr * wd).",
    ),
    (
        "decay after",
        "That decays after the Adam step: torch decays first, w <- w * (1 - lr * wd), then "
        "applies the update.",
    ),
    ("decay without lr", "That decays by w * (1 - wd): the decoupled decay is lr * wd."),
    ("betas swapped", "Those are the betas swapped: beta1 is for m, beta2 for v."),
)


def _mistakes(cfg: dict[str, Any]) -> list[tuple[str, Rule]]:
    return [(message, _adamw_rule(cfg, wrong)) for wrong, message in _ADAMW_MISTAKES]


def _random_configs(
    g: np.random.Generator, n: int, mark: Callable[[str], str] = str
) -> list[tuple[str, dict[str, Any], str]]:
    out = []
    for i in range(n):
        cfg = dict(
            lr=float(10 ** g.uniform(-3, -1.5)),
            betas=(float(g.uniform(0.7, 0.95)), float(g.uniform(0.9, 0.999))),
            eps=float(10 ** g.uniform(-8, -3)),
            weight_decay=float(g.uniform(0.0, 0.3)),
        )
        out.append((mark(f"random #{i}"), cfg, "Check each term against torch's AdamW."))
    return out


def _run_config(
    student: Callable[..., Any],
    name: str,
    cfg: dict[str, Any],
    hint: str,
    problem: Quadratic,
    w0: np.ndarray,
) -> float:
    def make(params: list) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, foreach=False, **cfg)

    want = torch_trajectory(make, problem, w0, STEPS)
    state = {"m": np.zeros_like(w0), "v": np.zeros_like(w0)}

    def step(w: np.ndarray, g: np.ndarray, t: int, case: str) -> np.ndarray:
        result = plain(call(student, w, g, state["m"], state["v"], t, **cfg), case=case)
        assert_true(
            isinstance(result, tuple) and len(result) == 3,
            f"[{case}] return the triple (param, exp_avg, exp_avg_sq), "
            f"got {type(result).__name__}.",
        )
        w, state["m"], state["v"] = (
            float_array(r, case, n) for r, n in zip(result, ("param", "m", "v"), strict=True)
        )
        return w

    return follow(step, problem, w0, want, name=name, hint=hint, mistakes=_mistakes(cfg))


@grader("04.3", blocks=("minitorch.optim.adamw:AdamW",), hand="trajectory")
def check_adamw_step(adamw_step: Callable[..., Any]) -> str:
    """Exercise 04.3: adamw_step matches torch.optim.AdamW over 100 steps, every config."""
    new = fresh_rng("04.3")
    # curvatures over 3 decades: Adam's per-coordinate scale matters
    runs = [
        (*config, quadratic(rng(40 + i), spread=1e3), rng(140 + i))
        for i, config in enumerate(_CONFIGS + _random_configs(rng(8), 3))
    ]
    runs += [(*c, quadratic(new, spread=1e3), new) for c in _random_configs(new, 1, fresh)]
    err = 0.0
    for name, cfg, hint, problem, g in runs:
        full = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2) | cfg
        w0 = g.standard_normal(problem.shape)
        err = max(err, _run_config(adamw_step, name, full, hint, problem, w0))
    return (
        f"{len(runs)} configurations (1 fresh) x {STEPS} steps match torch.optim.AdamW "
        f"(max |Δw| {err:.1e})"
    )
