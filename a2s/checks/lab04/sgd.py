"""Grader of exercise 04.2: the SGD update (momentum, dampening, Nesterov, weight decay).

Ground truth: torch.optim.SGD in float64 on an ill-conditioned quadratic, 100 steps, the
gradient recomputed at each side's own weights, so an error compounds as it would in
training. Configurations are ordered so each adds one feature: the first that fails names
the feature that is wrong.
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

__all__ = ["check_sgd_step"]

STEPS = 100

# (name, hyper-parameters, the rule this configuration adds): the rule is shown on a mismatch
# no modelled mistake explains; a modelled mistake's message only when the answer is that rule's
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
        "Dampening scales the new gradient, buf <- momentum * buf + (1 - dampening) * g, "
        "from the second step on: torch starts the buffer as g itself.",
    ),
    (
        "Nesterov",
        dict(lr=0.1, momentum=0.9, nesterov=True),
        "Nesterov steps along the look-ahead g + momentum * buf, with buf already updated "
        "this step.",
    ),
    (
        "weight decay 0.05",
        dict(lr=0.1, momentum=0.9, weight_decay=0.05),
        "SGD's weight_decay is L2: g <- g + weight_decay * w first, and that g feeds the "
        "momentum buffer.",
    ),
    (
        "Nesterov + weight decay",
        dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        "Weight decay goes into g before the buffer; Nesterov then uses that same g.",
    ),
]


def _sgd_rule(cfg: dict[str, Any], wrong: str = "") -> Rule:
    """torch.optim.SGD's update in numpy, or the modelled mistake ``wrong`` of it."""
    lr, mom, damp = cfg["lr"], cfg["momentum"], cfg["dampening"]
    wd, nesterov = cfg["weight_decay"], cfg["nesterov"]

    def rule(w: np.ndarray, g: np.ndarray, state: dict, t: int) -> np.ndarray:
        d = g if wrong in ("decoupled decay", "no decay") else g + wd * w
        if wrong == "decoupled decay":
            w = w * (1 - lr * wd)
        if mom:
            buf = state.get("buf")
            if buf is None:
                buf = (1 - damp) * d if wrong == "damped first step" else d.copy()
            else:
                buf = mom * buf + (1 - damp) * d
            state["buf"] = buf
            if nesterov and wrong == "nesterov along buf":
                d = buf
            elif nesterov and wrong == "nesterov look-ahead without decay":
                d = g + mom * buf
            elif nesterov:
                d = d + mom * buf
            else:
                d = buf
        return w - lr * d

    return rule


_SGD_MISTAKES = (
    (
        "damped first step",
        "That is dampening on the first step too: torch starts the buffer as g itself "
        "(buf = g), undamped, and damps only from the second step on.",
    ),
    (
        # a look-ahead with last step's buffer makes the same first step: one message for both
        "nesterov along buf",
        "That steps along buf alone (plain momentum) or along g plus last step's buffer: with "
        "nesterov=True update buf first, then step along g + momentum * buf.",
    ),
    (
        "nesterov look-ahead without decay",
        "The look-ahead used the raw gradient: the g in g + momentum * buf is the one with "
        "weight_decay * w added.",
    ),
    (
        "decoupled decay",
        "That is decoupled decay (AdamW's w <- w (1 - lr wd)): SGD's weight_decay is L2, "
        "g <- g + weight_decay * w, and that g feeds the momentum buffer.",
    ),
    ("no decay", "That trajectory ignores weight_decay: add weight_decay * w to g first."),
)


def _mistakes(cfg: dict[str, Any]) -> list[tuple[str, Rule]]:
    return [(message, _sgd_rule(cfg, wrong)) for wrong, message in _SGD_MISTAKES]


def _random_configs(
    g: np.random.Generator, n: int, mark: Callable[[str], str] = str
) -> list[tuple[str, dict[str, Any], str]]:
    out = []
    for i in range(n):
        nesterov = bool(g.integers(0, 2))
        cfg = dict(
            lr=float(g.uniform(0.02, 0.2)),
            momentum=float(g.uniform(0.5, 0.95)),
            dampening=0.0 if nesterov else float(g.uniform(0.0, 0.5)),
            nesterov=nesterov,
            weight_decay=float(g.uniform(0.0, 0.1)),
        )
        out.append((mark(f"random #{i}"), cfg, "Check each term against torch's SGD formula."))
    return out


def _run_config(
    student: Callable[..., Any],
    name: str,
    cfg: dict[str, Any],
    hint: str,
    problem: Quadratic,
    w0: np.ndarray,
) -> float:
    want = torch_trajectory(lambda params: torch.optim.SGD(params, **cfg), problem, w0, STEPS)
    state: dict[str, Any] = {"buf": None}

    def step(w: np.ndarray, g: np.ndarray, t: int, case: str) -> np.ndarray:
        result = plain(call(student, w, g, state["buf"], **cfg), what="sgd_step", case=case)
        assert_true(
            isinstance(result, tuple) and len(result) == 2,
            f"[{case}] return the pair (param, buf), got {type(result).__name__}.",
        )
        state["buf"] = buf = result[1]
        if not cfg.get("momentum"):
            assert_true(buf is None, f"[{case}] with momentum=0 there is no buffer: return None.")
        elif buf is None:
            assert_true(False, f"[{case}] with momentum > 0 return the momentum buffer, not None.")
        return float_array(result[0], case, "param")

    return follow(step, problem, w0, want, name=name, hint=hint, mistakes=_mistakes(cfg))


@grader("04.2", blocks=("minitorch.optim.sgd:SGD",), hand="trajectory")
def check_sgd_step(sgd_step: Callable[..., Any]) -> str:
    """Exercise 04.2: sgd_step matches torch.optim.SGD over 100 steps, every configuration."""
    new = fresh_rng("04.2")
    runs = [
        (*config, quadratic(rng(20 + i)), rng(120 + i))
        for i, config in enumerate(_CONFIGS + _random_configs(rng(7), 3))
    ]
    runs += [(*config, quadratic(new), new) for config in _random_configs(new, 1, fresh)]
    err = 0.0
    for name, cfg, hint, problem, g in runs:
        full = dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0) | cfg
        w0 = g.standard_normal(problem.shape)
        err = max(err, _run_config(sgd_step, name, full, hint, problem, w0))
    return (
        f"{len(runs)} configurations (1 fresh) x {STEPS} steps match torch.optim.SGD "
        f"(max |Δw| {err:.1e})"
    )
