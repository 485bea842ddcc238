"""Grader of exercise 03.7: fused log-softmax + NLL (cross-entropy), forward and backward.

Ground truth: ``F.cross_entropy`` (mean over the batch) and its autograd in float64, on
named cases that break the naive formula -- logits of 1e4 (exp overflows), a target whose
logit is 1e4 below the row's maximum (softmax underflows to 0, log(0) = -inf), a single
class -- then seeded random batches with logit scales from 1e-2 to 1e4.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, rng
from a2s.checks.vjp import ENGINE

__all__ = ["check_cross_entropy"]

_L = "minitorch.autograd.ops_loss"
_OVERFLOW = (
    "exp overflowed or underflowed (exp(710) is inf, exp(-746) is 0 in float64): subtract "
    "each row's maximum before exp; softmax and log-softmax do not change, and the largest "
    "exponent becomes exp(0) = 1."
)
_LOG0 = (
    "log(softmax) underflowed: a probability of exp(-1e4) is 0 in floating point and "
    "log(0) = -inf. Compute log-softmax directly: (x - max) - log(sum(exp(x - max)))."
)
_MEAN = "The loss is the *mean* over the batch, so the gradient is (softmax - onehot) / N."
_GRAD = "dL/dlogits = (softmax(logits) - onehot(target)) / N: one row per sample, rows sum to 0."


def _named(gen: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    big = gen.standard_normal((4, 5)) * 1e4
    hopeless = np.array([[1e4, 0.0, -1e4], [0.0, 5e3, 1e4]])
    return [
        ("3 classes, 2 rows", gen.standard_normal((2, 3)), np.array([0, 2]), _GRAD),
        ("logits of size 1e4", big, gen.integers(0, 5, 4), _OVERFLOW),
        ("target logit 1e4 below the max", hopeless, np.array([2, 0]), _LOG0),
        ("all logits equal: loss = log C", np.full((3, 4), 7.0), np.array([0, 1, 3]), _GRAD),
        ("one class: loss 0, gradient 0", gen.standard_normal((3, 1)), np.zeros(3, int), _GRAD),
        ("one row", gen.standard_normal((1, 6)), np.array([4]), _GRAD),
        ("very negative logits", gen.standard_normal((3, 4)) - 1e4, np.array([1, 2, 3]), _OVERFLOW),
    ]


def _random(
    gen: np.random.Generator, n: int, mark: Callable[[str], str] = str
) -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    cases = []
    for i in range(n):
        rows, c = int(gen.integers(1, 65)), int(gen.integers(2, 21))
        scale = 10.0 ** gen.uniform(-2, 4)
        logits = gen.standard_normal((rows, c)) * scale
        cases.append(
            (
                mark(f"random case {i}: ({rows}, {c}) x {scale:.3g}"),
                logits,
                gen.integers(0, c, rows),
                _GRAD,
            )
        )
    return cases


def _one(
    student: Callable[..., object], logits: np.ndarray, target: np.ndarray, case: str, hint: str
) -> float:
    t = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(t, torch.from_numpy(target.astype(np.int64)))
    loss.backward()
    want_loss, want_grad = loss.item(), t.grad.numpy()
    with np.errstate(all="ignore"):  # a naive answer overflows: report it, do not warn
        got = call_pure(student, logits, target, case=case)
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailure(f"[{case}] return the pair (loss, dlogits).")
    got_loss, grad = np.asarray(got[0], dtype=np.float64), np.asarray(got[1])
    assert_true(
        got_loss.size == 1,
        f"[{case}] the loss is one number (the batch mean), got shape {got_loss.shape}.",
    )
    if not (np.isfinite(got_loss).all() and np.isfinite(grad).all()):  # name the blow-up
        hint = _LOG0 if np.isinf(got_loss).any() and not np.isnan(grad).any() else _OVERFLOW
    err = close(got_loss.reshape(()), np.asarray(want_loss), case=case, what="loss", hint=hint)
    mean_hint = _MEAN if looks_like(grad, want_grad * len(target)) and len(target) > 1 else hint
    err = max(
        err, close(grad, want_grad, case=case, what=f"dlogits {logits.shape}", hint=mean_hint)
    )
    assert_true(
        bool(np.all(np.abs(grad.sum(axis=1)) <= 1e-12 * max(1, logits.shape[1]))),
        f"[{case}] each gradient row must sum to 0 (softmax sums to 1, the one-hot to 1).",
    )
    return err


@grader(
    "03.7",
    blocks=(
        f"{_L}:cross_entropy",
        f"{_L}:cross_entropy_backward",
        f"{_L}:log_softmax",
        f"{_L}:log_softmax_backward",
        f"{_L}:softmax",
        f"{_L}:softmax_backward",
        f"{_L}:_log_softmax",
        *ENGINE,
    ),
    hand="parts",
)
def check_cross_entropy(cross_entropy: Callable[..., object]) -> str:
    """Exercise 03.7: (logits, target) -> (mean NLL of log-softmax, dL/dlogits), stable."""
    gen, worst = rng(307), 0.0
    cases = _named(gen) + _random(gen, 30) + _random(fresh_rng("03.7"), 5, fresh)
    for case, logits, target, hint in cases:
        worst = max(worst, _one(cross_entropy, logits, target, case, hint))
    return (
        f"{len(cases)} batches (5 fresh) match F.cross_entropy, logits up to 1e4 "
        f"(max error {worst:.1e})"
    )
