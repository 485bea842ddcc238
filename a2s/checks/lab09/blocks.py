"""Graders of exercises 09.5 (RMSNorm) and 09.6 (SwiGLU).

Ground truth: ``torch.nn.functional.rms_norm`` and ``F.silu(x W1^T) * (x W3^T) W2^T`` in
float64."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from a2s.checks.cases import Mistake
from a2s.checks.core import grader, rng
from a2s.checks.lab09._truth import array_table
from a2s.checks.truths import gelu_tanh, rms_norm_torch

__all__ = ["check_rms_norm", "check_swiglu"]

_B = "minitorch.model.blocks"


_RMS_MISTAKES = (
    Mistake(
        "RMSNorm does not subtract the mean: divide by sqrt(mean(x^2) + eps) only.",
        lambda x, w, e: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + e) * w,
    ),
    Mistake(
        "eps goes inside the square root: x / sqrt(mean(x^2) + eps).",
        lambda x, w, e: x / (np.sqrt((x * x).mean(-1, keepdims=True)) + e) * w,
    ),
    Mistake(
        "Average x^2 over the last axis (the features), not the whole tensor.",
        lambda x, w, e: x / np.sqrt((x * x).mean() + e) * w,
    ),
    Mistake(
        "Take the mean of x^2 over the last axis (divide the sum by C), not the sum.",
        lambda x, w, e: x / np.sqrt((x * x).sum(-1, keepdims=True) + e) * w,
    ),
    Mistake(
        "Multiply by the weight (one gain per feature) after normalizing.",
        lambda x, w, e: x / np.sqrt((x * x).mean(-1, keepdims=True) + e),
    ),
)


_RMS_HINT = "rms_norm = x / sqrt(mean(x^2 over the last axis) + eps) * weight (no centering)."


def _rms(g: np.random.Generator, shape: tuple, eps: float, shift: float = 0, scale: float = 1):
    return g.standard_normal(shape) * scale + shift, g.uniform(0.5, 2, shape[-1]), eps


def _random_rms(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    c = int(g.integers(2, 65))
    return "random case", _rms(g, (2, int(g.integers(1, 9)), c), 1e-6, scale=3)


_R = rng(95)
RMS = array_table(
    "09.5",
    "normalized x",
    truth=rms_norm_torch,
    named=[
        ("one row of 4", _rms(_R, (1, 4), 1e-5)),
        ("rows with a mean far from 0", _rms(_R, (3, 8), 1e-5, shift=5)),
        ("tiny values, eps = 0.1", _rms(_R, (2, 3, 6), 0.1, scale=1e-2)),
    ],
    draw=_random_rms,
    fresh=1,
    mistakes=_RMS_MISTAKES,
    hint=_RMS_HINT,
)


@grader("09.5", blocks=(f"{_B}:rms_norm", f"{_B}:RMSNorm", "minitorch.kernels.fusion:rmsnorm"))
def check_rms_norm(rms_norm: Callable[..., object]) -> str:
    """Exercise 09.5: rms_norm(x, weight, eps) over the last axis."""
    n = RMS.grade(rms_norm)
    return f"{n} cases equal torch rms_norm: one reduction per row, no mean, no bias"


def _swiglu(x: np.ndarray, w1: np.ndarray, w3: np.ndarray, w2: np.ndarray) -> np.ndarray:
    t = [torch.from_numpy(a) for a in (x, w1, w3, w2)]
    return (F.silu(t[0] @ t[1].T) * (t[0] @ t[2].T) @ t[3].T).numpy()


def _sig(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


_SWIGLU_MISTAKES = (
    Mistake(
        "silu goes on the gate branch x W1^T; the up branch x W3^T stays linear.",
        lambda x, w1, w3, w2: ((x @ w1.T) * ((x @ w3.T) * _sig(x @ w3.T))) @ w2.T,
    ),
    Mistake(
        "silu(z) = z * sigmoid(z), not sigmoid(z) alone (that is the original GLU).",
        lambda x, w1, w3, w2: (_sig(x @ w1.T) * (x @ w3.T)) @ w2.T,
    ),
    Mistake(
        "That is GELU on the gate (GeGLU): SwiGLU's gate is silu(z) = z * sigmoid(z).",
        lambda x, w1, w3, w2: (gelu_tanh(x @ w1.T) * (x @ w3.T)) @ w2.T,
    ),
    Mistake(
        "Gate W1 and up W3 are swapped: silu goes on x W1^T.",
        lambda x, w1, w3, w2: ((x @ w3.T) * _sig(x @ w3.T) * (x @ w1.T)) @ w2.T,
    ),
)


_LAYOUT = (
    "swiglu = (silu(x W1^T) * x W3^T) W2^T, silu(z) = z * sigmoid(z); the weights are (out, "
    "in) like nn.Linear: x @ W.T, gate W1, up W3, down W2."
)


def _mlp(g: np.random.Generator, n: int, c: int, h: int) -> tuple:
    return (
        g.standard_normal((n, c)),
        g.standard_normal((h, c)) / np.sqrt(c),
        g.standard_normal((h, c)) / np.sqrt(c),
        g.standard_normal((c, h)) / np.sqrt(h),
    )


def _random_mlp(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    n, c, h = int(g.integers(1, 9)), int(g.integers(2, 20)), int(g.integers(2, 40))
    return "random case", _mlp(g, n, c, h)


_R6 = rng(96)
SWIGLU = array_table(
    "09.6",
    "MLP output",
    truth=_swiglu,
    named=[
        ("4 tokens, 8 -> 16 -> 8", _mlp(_R6, 4, 8, 16)),
        ("1 token, 3 -> 5 -> 3", _mlp(_R6, 1, 3, 5)),
    ],
    draw=_random_mlp,
    fresh=1,
    mistakes=_SWIGLU_MISTAKES,
    hint=_LAYOUT,
)


@grader(
    "09.6", blocks=(f"{_B}:MLP", f"{_B}:silu", f"{__name__}:_sig", "a2s.checks.truths:gelu_tanh")
)
def check_swiglu(swiglu: Callable[..., object]) -> str:
    """Exercise 09.6: swiglu(x, w1, w3, w2) = (silu(x W1^T) * x W3^T) W2^T."""
    n = SWIGLU.grade(swiglu)
    return f"{n} cases equal torch: 3 weight matrices, 3 matmuls per token (GELU MLP: 2)"
