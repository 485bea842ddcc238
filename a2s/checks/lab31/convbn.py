"""Grader of exercise 31.3: fold a BatchNorm into the convolution before it.

``fold_conv_bn(w, b, mean, var, gamma, beta, eps) -> (w2, b2)`` for a convolution ``w``
(K, C, R, S), ``b`` (K,) followed by inference BatchNorm with frozen statistics. Truth is the
closed form of ``_truth.fold``: with $s = \\gamma / \\sqrt{\\sigma^2 + \\epsilon}$ per output
channel, $W' = s W$ and $b' = (b - \\mu) s + \\beta$. Then a small CNN (two conv-BN pairs,
padding 1) run with the learner's folded weights by torch's CPU convolution, in the grader,
must equal the unfolded network within 1e-5 of its largest activation. Torch and every
``minitorch`` module are forbidden inside the fold (it is numpy arithmetic on the weights);
the reference fold pass is blocked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader, plain, rng
from a2s.checks.lab31._truth import conv_bn, conv_of, fold
from a2s.checks.table import Table

__all__ = ["check_fold_conv_bn"]

_F = np.float32


def _params(g: np.random.Generator, k: int, c: int, r: int = 3, eps: float = 1e-5) -> tuple:
    return (
        g.standard_normal((k, c, r, r)).astype(_F),
        g.standard_normal(k).astype(_F),
        g.standard_normal(k).astype(_F),
        g.uniform(0.05, 2.0, k).astype(_F),
        g.uniform(0.5, 1.5, k).astype(_F),
        g.standard_normal(k).astype(_F),
        eps,
    )


def _read(got: Any, label: str) -> tuple[np.ndarray, np.ndarray]:
    got = plain(got, case=label, what="fold_conv_bn")
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(f"[{label}] fold_conv_bn returns two arrays: (w2, b2).")
    return np.asarray(got[0], np.float64), np.asarray(got[1], np.float64)


def _same(got: Any, want: Any) -> bool:
    return all(
        a.shape == w.shape and np.allclose(a, w, rtol=1e-5, atol=1e-6)
        for a, w in zip(got, want, strict=True)
    )


def _scale(var: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    return gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)


_MISTAKES = (
    Mistake(
        "eps goes inside the square root: s = gamma / sqrt(var + eps), as BatchNorm computes.",
        answer=lambda w, b, mu, var, ga, be, eps: fold(w, b, mu, var, ga, be, 0.0),
    ),
    Mistake(
        "Divide by the standard deviation sqrt(var + eps), not by the variance.",
        answer=lambda w, b, mu, var, ga, be, eps: fold(
            w, b, mu, (var + eps) ** 2 - eps, ga, be, eps
        ),
    ),
    Mistake(
        "Subtract the running mean from the bias before scaling: b' = (b - mu) s + beta.",
        answer=lambda w, b, mu, var, ga, be, eps: (
            fold(w, b, mu, var, ga, be, eps)[0],
            b * _scale(var, ga, eps) + be,
        ),
    ),
    Mistake(
        "The scale is per OUTPUT channel (axis 0 of w, shape K), not per input channel.",
        answer=lambda w, b, mu, var, ga, be, eps: (
            w * _scale(var, ga, eps).reshape(1, -1, 1, 1),
            fold(w, b, mu, var, ga, be, eps)[1],
        ),
    ),
    Mistake(
        "Scale the bias too: b' = (b - mu) s + beta, not b - mu + beta.",
        answer=lambda w, b, mu, var, ga, be, eps: (
            fold(w, b, mu, var, ga, be, eps)[0],
            b - mu + be,
        ),
    ),
)


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    k, c = int(g.integers(2, 7)), int(g.integers(1, 5))
    return f"K={k}, C={c}, 3x3", _params(g, k, c)


def _named() -> list[tuple[str, tuple]]:
    g = rng(3105)
    square = _params(g, 4, 4)  # C == K: a per-input-channel scale has the right shape
    big_eps = _params(g, 3, 2, eps=0.5)
    zero_b = _params(g, 3, 2)
    zero_b = (zero_b[0], np.zeros(3, _F), *zero_b[2:])
    return [
        ("K=C=4 (the scale's axis matters)", square),
        ("eps 0.5 (where eps goes shows)", big_eps),
        ("a conv without bias (b = 0)", zero_b),
        ("1x1 conv, K=5, C=3", _params(g, 5, 3, r=1)),
    ]


FOLD = Table(
    "31.3",
    truth=fold,
    named=_named(),
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    hint="With s = gamma / sqrt(var + eps) per output channel: w2 = w * s[:, None, None, None], "
    "b2 = (b - mean) * s + beta.",
    read=_read,
    same=_same,
    what="fold_conv_bn",
    message="[{label}] fold_conv_bn differs from the closed form.{hint}",
)


@grader("31.3", blocks=("minitorch.compiler.convbn",), forbid=("torch", "minitorch"))
def check_fold_conv_bn(fold_conv_bn: Callable[..., Any]) -> str:
    """Exercise 31.3: the folded (w2, b2) of a conv-BatchNorm pair; a small CNN equal."""
    n = FOLD.grade(fold_conv_bn)
    g = rng(3106)
    x = g.standard_normal((2, 3, 8, 8)).astype(_F)
    layers = [_params(g, 8, 3), _params(g, 4, 8)]
    want, got = x, x
    for p in layers:
        want = np.maximum(conv_bn(want, p, 1), 0)
        w2, b2 = (np.asarray(a, _F) for a in _read(fold_conv_bn(*p), "small CNN"))
        got = np.maximum(conv_of(got, w2, b2, 1), 0)
    rel = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    if rel > 1e-5:
        raise CheckFailure(
            f"[small CNN] the folded network differs by {rel:.2e} of its largest activation "
            "(more than 1e-5)."
        )
    return (
        f"{n} folds match the closed form; a 2-layer CNN folded: 4 kernels -> 2, "
        f"within {rel:.1e} of its largest activation"
    )
