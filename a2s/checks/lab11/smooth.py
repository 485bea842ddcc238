"""Grader of exercise 11.5: SmoothQuant's migration scales make W8A8 accurate.

Closed form ``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)`` on named cases, then the point:
the grader runs W8A8 itself (INT8 activations per tensor, INT8 weights per output channel,
int32 accumulation, in plain numpy) on ``x / s`` and ``W * s`` for a layer whose activations
have outlier channels 100x the rest. The smoothed error must be at most a tenth of naive W8A8's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake, fresh
from a2s.checks.core import assert_close, assert_true, fresh_rng, grader, plain, rng
from a2s.checks.lab11._truth import outlier_inputs
from a2s.checks.table import Table

__all__ = ["check_smooth_scales"]

_BLOCKS = (
    "minitorch.model.quant_smooth:smooth_scales",
    "minitorch.model.quant_smooth:smoothquant_matmul",
    f"{__name__}:_w8a8",
)
_FORM = (
    "s_j = max|X_j|^alpha / max|W_j|^(1 - alpha): alpha on the activations' range, 1 - alpha "
    "on the weights'; the layer then runs on x / s and W * s."
)
_SWAPPED = "The exponents are swapped: alpha goes on the activations, 1 - alpha on the weights."
_ROLES = (
    "X and W are swapped: the activations' range max|X_j|^alpha is the numerator, the "
    "weights' max|W_j|^(1 - alpha) the denominator."
)
_SAME = "The weights' range takes the exponent 1 - alpha, not alpha: max|W_j|^(1 - alpha)."
_INVERTED = "Inverted: s must grow with the activation range (x is divided by s)."


def _w8a8(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    sx = np.abs(x).max() / 127.0
    qx = np.clip(np.round(x / sx), -127, 127).astype(np.int32)
    sw = np.abs(w).max(axis=1) / 127.0
    qw = np.clip(np.round(w / sw[:, None]), -127, 127).astype(np.int32)
    return (qx @ qw.T) * sx * sw


def _err(y: np.ndarray, got: np.ndarray) -> float:
    return float(np.sum((y - got) ** 2) / np.sum(y**2))


def _message(case: Case, got: np.ndarray, want: np.ndarray, hint: str) -> str:
    assert_close(got, want, case=case.label, rtol=1e-9, what="s", hint=hint)
    return f"[{case.label}] s differs from the closed form. {hint}"  # assert_close raised


_XA, _WA = np.array([1.0, 100.0, 4.0, 0.5]), np.array([0.5, 0.2, 2.0, 1.0])
CLOSED_FORM = Table(
    "11.5",
    truth=lambda x, w, alpha: x**alpha / w ** (1 - alpha),
    named=[(f"alpha = {alpha}", (_XA, _WA, alpha)) for alpha in (0.8, 0.5, 0.25)],
    mistakes=(
        Mistake(_SWAPPED, lambda x, w, alpha: x ** (1 - alpha) / w**alpha),
        Mistake(_ROLES, lambda x, w, alpha: w**alpha / x ** (1 - alpha)),
        Mistake(_SAME, lambda x, w, alpha: (x / w) ** alpha),
        Mistake(_INVERTED, lambda x, w, alpha: w ** (1 - alpha) / x**alpha),
    ),
    hint=_FORM,
    read=lambda got, label: np.asarray(got, float),
    same=lambda g, w: g.shape == w.shape and bool(np.allclose(g, w, rtol=1e-9, atol=1e-8)),
    message=_message,
)


@grader("11.5", blocks=_BLOCKS, hand="parts")
def check_smooth_scales(smooth_scales: Callable[..., Any]) -> str:
    """Exercise 11.5: ``smooth_scales(x_absmax, w_absmax, alpha) -> s``."""
    CLOSED_FORM.grade(smooth_scales)
    a = rng(1105)
    f = fresh_rng("11.5")
    gains = []
    for label, g in (("outlier channels x100", a), (fresh("outlier channels x100"), f)):
        w = g.standard_normal((64, 128)) * 0.1
        x, _ = outlier_inputs(g, 256, 128, 4, 100.0)
        s = np.asarray(
            plain(smooth_scales(np.abs(x).max(axis=0), np.abs(w).max(axis=0), 0.5), case=label),
            float,
        )
        assert_true(
            s.shape == (128,) and bool(np.all(s > 0)),
            f"[{label}] return 128 positive scales, got shape {s.shape}.",
        )
        y = x @ w.T
        naive, smooth = _err(y, _w8a8(x, w)), _err(y, _w8a8(x / s, w * s))
        assert_true(
            smooth <= 0.1 * naive,
            f"[{label}] W8A8 error after smoothing {smooth:.2e} vs naive {naive:.2e}: "
            "need 10x lower. " + _FORM,
        )
        gains.append(naive / smooth)
    return (
        f"closed form on 3 alphas; W8A8 error {min(gains):.0f}-{max(gains):.0f}x lower than "
        f"naive W8A8 on layers with 100x outlier channels"
    )
