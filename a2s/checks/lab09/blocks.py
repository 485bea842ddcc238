"""Graders of exercises 09.5 (RMSNorm) and 09.6 (SwiGLU).

Ground truth: ``torch.nn.functional.rms_norm`` and ``F.silu(x W1^T) * (x W3^T) W2^T`` in
float64."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from a2s.checks.cases import Case, Mistake, fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.lab09._truth import run_array_cases
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


@grader(
    "09.5",
    blocks=(f"{_B}:rms_norm", f"{_B}:RMSNorm", "minitorch.kernels.fusion:rmsnorm"),
    hand="array cases through lab 09's own runner (run_array_cases), to become tables",
)
def check_rms_norm(rms_norm: Callable[..., object]) -> str:
    """Exercise 09.5: rms_norm(x, weight, eps) over the last axis."""
    r, f = rng(95), fresh_rng("09.5")
    cases = [
        Case(
            "one row of 4",
            (r.standard_normal((1, 4)), r.uniform(0.5, 2, 4), 1e-5),
            rms_norm_torch,
            _RMS_MISTAKES,
            _RMS_HINT,
        ),
        Case(
            "rows with a mean far from 0",
            (r.standard_normal((3, 8)) + 5, r.uniform(0.5, 2, 8), 1e-5),
            rms_norm_torch,
            _RMS_MISTAKES,
            _RMS_HINT,
        ),
        Case(
            "tiny values, eps = 0.1",
            (r.standard_normal((2, 3, 6)) * 1e-2, r.uniform(0.5, 2, 6), 0.1),
            rms_norm_torch,
            _RMS_MISTAKES,
            _RMS_HINT,
        ),
    ]
    c = int(f.integers(2, 65))
    cases.append(
        Case(
            fresh("random case"),
            (f.standard_normal((2, int(f.integers(1, 9)), c)) * 3, f.uniform(0.5, 2, c), 1e-6),
            rms_norm_torch,
            _RMS_MISTAKES,
            _RMS_HINT,
        )
    )
    n = run_array_cases(rms_norm, cases, "normalized x")
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


@grader(
    "09.6",
    blocks=(f"{_B}:MLP", f"{_B}:silu", f"{__name__}:_sig", "a2s.checks.truths:gelu_tanh"),
    hand="array cases through lab 09's own runner (run_array_cases), to become tables",
)
def check_swiglu(swiglu: Callable[..., object]) -> str:
    """Exercise 09.6: swiglu(x, w1, w3, w2) = (silu(x W1^T) * x W3^T) W2^T."""
    r, f = rng(96), fresh_rng("09.6")

    def case(label: str, g: np.random.Generator, n: int, c: int, h: int) -> Case:
        args = (
            g.standard_normal((n, c)),
            g.standard_normal((h, c)) / np.sqrt(c),
            g.standard_normal((h, c)) / np.sqrt(c),
            g.standard_normal((c, h)) / np.sqrt(h),
        )
        return Case(label, args, _swiglu, _SWIGLU_MISTAKES, _LAYOUT)

    cases = [
        case("4 tokens, 8 -> 16 -> 8", r, 4, 8, 16),
        case("1 token, 3 -> 5 -> 3", r, 1, 3, 5),
        case(
            fresh("random case"),
            f,
            int(f.integers(1, 9)),
            int(f.integers(2, 20)),
            int(f.integers(2, 40)),
        ),
    ]
    n = run_array_cases(swiglu, cases, "MLP output")
    return f"{n} cases equal torch: 3 weight matrices, 3 matmuls per token (GELU MLP: 2)"
