"""Graders of exercises 10.3 (predict capacity and dropped tokens) and 10.4 (auxiliary losses).

Ground truth: the capacity ceil(k N cf / E) in exact rational arithmetic and the drops
sum_i max(0, wanted_i - C) (closed forms written here); Switch's load-balancing loss
E * sum_i f_i P_i and ST-MoE's z-loss mean(logsumexp^2) computed with torch in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import torch

from a2s.checks.cases import Mistake, fresh
from a2s.checks.compare import call, number
from a2s.checks.core import CheckFailure, assert_close, assert_true, fresh_rng, grader
from a2s.checks.core import plain as _plain
from a2s.checks.table import Table

__all__ = ["check_aux_losses", "check_predicted_drops", "torch_aux_losses"]

_R = "minitorch.model.moe_router"


def _capacity(n: int, cf: float, e: int, k: int) -> int:
    return math.ceil(Fraction(k * n) * Fraction(cf) / e)


def _want(wanted: tuple[int, ...], n: int, cf: float, k: int) -> tuple[int, int]:
    cap = _capacity(n, cf, len(wanted), k)
    return cap, sum(max(0, w - cap) for w in wanted)


_MISTAKES = [
    Mistake(
        "The capacity rounds up: ceil(k N / E * capacity_factor), so no slot is lost to flooring.",
        lambda w, n, cf, k: (
            (c := math.floor(Fraction(k * n) * Fraction(cf) / len(w))),
            sum(max(0, x - c) for x in w),
        ),
    ),
    Mistake(
        "With top-k routing each token makes k assignments: capacity = ceil(k N / E * cf).",
        lambda w, n, cf, k: _want(w, n, cf, 1) if k > 1 else None,
    ),
    Mistake(
        "Dropped counts assignments, not experts: an expert asked for w > C drops w - C.",
        when=lambda got, w, n, cf, k: (
            isinstance(got, tuple)
            and len(got) == 2
            and got[1] == sum(x > _want(w, n, cf, k)[0] for x in w) != _want(w, n, cf, k)[1]
        ),
    ),
]


def _random(g: np.random.Generator, i: int) -> tuple[str, tuple[object, ...]]:
    e, k = int(g.integers(2, 9)), int(g.integers(1, 3))
    n = int(g.integers(1, 300))
    wanted = np.bincount(g.integers(0, e, size=n * k), minlength=e).tolist()
    cf = float(g.choice([0.5, 0.75, 1.0, 1.25, 1.5, 2.0]))
    return f"random case {i}: E = {e}, k = {k}, cf = {cf}", (tuple(wanted), n, cf, k)


def _ints(got: object, label: str) -> object:
    got = tuple(got) if isinstance(got, (tuple, list)) else got
    if isinstance(got, tuple) and len(got) == 2:
        for name, v in zip(("capacity", "dropped"), got, strict=True):
            if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
                raise CheckFailure(
                    f"[{label}] {name} = {v!r} is a {type(v).__name__}: return the pair of "
                    "integers (int(np.ceil(...)), not np.ceil's float)."
                )
    return got


DROPS = Table(
    "10.3",
    truth=_want,
    named=[
        ("10 tokens, 4 experts, cf 1.0: 6 want expert 0", ((6, 2, 1, 1), 10, 1.0, 1)),
        ("the same, cf 2.0", ((6, 2, 1, 1), 10, 2.0, 1)),
        ("top-2: 20 assignments", ((9, 3, 4, 4), 10, 1.0, 2)),
        ("perfect balance, cf 1.0: nothing dropped", ((32, 32, 32, 32), 128, 1.0, 1)),
        ("one hot expert, cf 1.25", ((100, 10, 10, 8), 128, 1.25, 1)),
        ("cf 0.5 (below 1)", ((5, 0, 0), 5, 0.5, 1)),
    ],
    draw=_random,
    fresh=4,
    mistakes=_MISTAKES,
    hint="C = ceil(k N cf / E).",
    read=_ints,
    what="(capacity, dropped)",
    message="[{label}] predicted {got!r}, expected {want!r}.{hint}",
)


@grader(
    "10.3",
    blocks=(
        f"{_R}:expert_capacity",
        f"{_R}:dropped_count",
        f"{__name__}:_capacity",  # the grader's own closed form
        f"{__name__}:_want",
    ),
)
def check_predicted_drops(predict: Callable[..., object]) -> str:
    """Exercise 10.3: (capacity, dropped assignments) from the loads the router asks for."""
    n = DROPS.grade(predict)
    return f"{n} predictions exact (capacity and dropped assignments)"


def torch_aux_losses(logits: np.ndarray) -> tuple[float, float]:
    """(load-balancing loss, z-loss) with torch in float64, f from each token's argmax."""
    z = torch.from_numpy(logits.astype(np.float64))
    p = torch.softmax(z, dim=-1)
    e = z.shape[1]
    f = torch.nn.functional.one_hot(p.argmax(dim=-1), e).double().mean(dim=0)
    balance = float(e * (f * p.mean(dim=0)).sum())
    return balance, float((torch.logsumexp(z, dim=-1) ** 2).mean())


def _loss_cases() -> list[tuple[str, np.ndarray]]:
    g = np.random.default_rng(104)
    named = [
        ("uniform router: balance loss 1", np.zeros((4, 4)) + np.eye(4) * 1e-9),
        ("every token to expert 0", np.tile([5.0, 0.0, 0.0], (6, 1))),
        ("8 tokens, 4 experts", g.standard_normal((8, 4))),
        ("logits of 1e3 (z-loss must not overflow)", g.standard_normal((5, 3)) * 1e3),
    ]
    fg = fresh_rng("10.4")
    return named + [
        (fresh(f"random case {i}"), fg.standard_normal((int(fg.integers(1, 60)), 5)) * 4)
        for i in range(3)
    ]


_AUX_BLOCKS = (
    f"{_R}:load_balancing_loss",
    f"{_R}:router_z_loss",
    f"{_R}:router_probs",
    "minitorch.model.moe:balance_loss_tensor",
    "minitorch.model.moe:z_loss_tensor",
    f"{__name__}:torch_aux_losses",  # the grader's own ground truth
)


@grader("10.4", blocks=_AUX_BLOCKS, hand="parts")
def check_aux_losses(aux_losses: Callable[..., object]) -> str:
    """Exercise 10.4: (load-balancing loss, z-loss) of a router's logits."""
    cases = _loss_cases()
    for case, logits in cases:
        got = _plain(call(aux_losses, logits.copy()), what="(balance, z)", case=case)
        assert_true(isinstance(got, tuple) and len(got) == 2, f"[{case}] return (balance, z).")
        balance = number(got[0], case=case, message=f"[{case}] the balance loss is a number.")
        z = number(got[1], case=case, message=f"[{case}] the z-loss is a number.")
        want_b, want_z = torch_aux_losses(logits)
        assert_true(
            bool(np.isfinite(balance) and np.isfinite(z)),
            f"[{case}] your losses are ({balance}, {z}): exp overflows for logits this large; "
            "shift by the max of each row before exp (softmax and logsumexp are unchanged).",
        )
        p = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
        hint = "L_aux = E * sum_i f_i P_i: f_i counts argmax choices, P_i averages probabilities."
        n_tok = logits.shape[0]
        if n_tok > 1 and np.isclose(balance, want_b * n_tok) and not np.isclose(want_b, balance):
            hint = "f_i is the FRACTION of tokens whose argmax is i (divide the counts by N)."
        elif np.isclose(balance, want_b / logits.shape[1]) and not np.isclose(want_b, balance):
            hint = "Multiply by E, so that a uniform router scores 1 for any number of experts."
        elif np.isclose(balance, logits.shape[1] * (p.mean(0) ** 2).sum()):
            hint = "f_i is the fraction of tokens whose *argmax* is i (an argmax), not P_i."
        assert_close(balance, want_b, case=case, rtol=1e-9, what="balance loss", hint=hint)
        lse = torch.logsumexp(torch.from_numpy(logits), dim=-1).numpy()
        hint = "z-loss = mean over tokens of logsumexp(logits)^2; shift by the max to stay finite."
        if np.isclose(z, lse.mean()):
            hint = "Square the logsumexp of each token before averaging."
        assert_close(z, want_z, case=case, rtol=1e-9, what="z-loss", hint=hint)
    return f"{len(cases)} routers: both losses equal torch's formulas (logits up to 1e3)"
