"""Grader of exercise 31.1: ATen kernels for the chip, written in numpy.

The learner writes six kernels with ATen's own signatures: ``mm``, ``addmm``, ``_softmax``,
``_softmax_backward_data``, ``native_layer_norm`` (three outputs: y, mean, rstd) and
``embedding``. Each runs with torch forbidden (a kernel that hands the work back to torch's
CPU kernels is a CPU backend, not a chip one) and every ``minitorch`` module forbidden by
file (the reference op table's kernels are lambdas, which ``blocks=`` cannot name; other
labs' softmax and layer norm are references too). Ground truth is CPU torch's ATen kernel
on the same operands, called by the grader; results must be float32 like torch's, within
float32 rounding. Fixed cases hold the edges a plausible kernel misses: logits of 1,000 (a
softmax without the max shift overflows), a row with masked ``-inf`` entries,
``beta``/``alpha`` of addmm not 1, a layer norm without weight and bias, repeated embedding
indices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import call
from a2s.checks.core import CheckFailure, case_label, fresh_rng, grader, plain, rng
from a2s.checks.lab31._truth import torch_kernel

__all__ = ["check_kernels"]

_F = np.float32
_NAMES = ("mm", "addmm", "softmax", "softmax_backward", "layer_norm", "embedding")
_HINTS = {
    "softmax": " Subtract the row's max before exp (exp(1000) is inf in float32), and keep "
    "masked -inf entries at exactly 0.",
    "softmax_backward": " The Jacobian of softmax is diag(y) - y y^T: dx = y * (g - sum(g * y, "
    "dim)), not g * y * (1 - y) (that is only its diagonal).",
    "layer_norm": " Use the biased variance (divide by N, as torch does), eps inside the square "
    "root, and return mean and rstd = 1/sqrt(var + eps) with keepdims, shape (..., 1).",
    "addmm": " addmm is beta * self + alpha * (mat1 @ mat2), and self (the bias) broadcasts.",
    "embedding": " Gather rows: weight[indices], any shape of indices.",
    "mm": " mm is a plain matrix product of two 2-D matrices.",
}


def _cases(g: np.random.Generator, label: str) -> list[tuple[str, str, tuple[Any, ...]]]:
    def r(*shape: int) -> np.ndarray:
        return g.standard_normal(shape).astype(_F)

    m, k, n = (int(v) for v in g.integers(2, 7, size=3))
    y_in = r(3, 5)
    y = np.exp(y_in - y_in.max(-1, keepdims=True))
    y = (y / y.sum(-1, keepdims=True)).astype(_F)
    return [
        ("mm", f"{label} mm ({m}x{k} @ {k}x{n})", (r(m, k), r(k, n))),
        ("addmm", f"{label} addmm, bias row", (r(n), r(m, k), r(k, n), 1, 1)),
        ("addmm", f"{label} addmm, beta 0.5 alpha 2", (r(m, n), r(m, k), r(k, n), 0.5, 2.0)),
        ("softmax", f"{label} softmax dim -1", (r(2, 3, 6), -1, False)),
        ("softmax", f"{label} softmax dim 0", (r(4, 3), 0, False)),
        ("softmax_backward", f"{label} softmax backward", (r(3, 5), y, -1)),
        ("layer_norm", f"{label} layer norm", (r(m, 8), [8], r(8), r(8), 1e-5)),
        ("embedding", f"{label} embedding", (r(10, 4), g.integers(0, 10, size=(2, 3)))),
    ]


def _named() -> list[tuple[str, str, tuple[Any, ...]]]:
    g = rng(3101)
    big = (g.standard_normal((2, 5)) * 3 + 1000).astype(_F)
    masked = g.standard_normal((4, 4)).astype(_F)
    masked[np.triu_indices(4, 1)] = -np.inf  # a causal mask
    x3 = g.standard_normal((2, 3, 8)).astype(_F) * 4 + 2
    return [
        ("mm", "mm 1x1", (np.array([[3.0]], _F), np.array([[-2.0]], _F))),
        ("softmax", "softmax of logits near 1000", (big, -1, False)),
        ("softmax", "softmax with a causal mask (-inf)", (masked, -1, False)),
        ("layer_norm", "layer norm, no weight, no bias", (x3, [8], None, None, 1e-5)),
        ("layer_norm", "layer norm over the last two dims", (x3, [3, 8], None, None, 1e-2)),
        (
            "embedding",
            "embedding, repeated ids",
            (g.standard_normal((5, 3)).astype(_F), np.array([[1, 1, 4], [0, 4, 4]])),
        ),
    ]


def _compare(name: str, label: str, got: Any, want: Any) -> None:
    wants = want if isinstance(want, tuple) else (want,)
    gots = plain(got, case=label, what=name) if isinstance(want, tuple) else (got,)
    if not isinstance(gots, (tuple, list)) or len(gots) != len(wants):
        raise CheckFailure(f"[{label}] {name} returns {len(wants)} arrays (y, mean, rstd).")
    for i, (a, w) in enumerate(zip(gots, wants, strict=True)):
        a = plain(a, case=label, what=name)
        part = f"{name} output {i}" if len(wants) > 1 else name
        if not isinstance(a, np.ndarray) or a.shape != w.shape:
            shape = getattr(a, "shape", type(a).__name__)
            raise CheckFailure(
                f"[{label}] {part}: expected an array of shape {w.shape}, got {shape}."
            )
        if a.dtype != w.dtype:
            raise CheckFailure(
                f"[{label}] {part} is {a.dtype}; torch keeps {w.dtype} (cast the result back)."
            )
        zero = (w == 0) & (a != 0) if name == "softmax" else np.zeros(w.shape, bool)
        if zero.any() or not np.allclose(a, w, rtol=1e-4, atol=1e-5, equal_nan=False):
            bad = np.abs(a.astype(np.float64) - w)
            worst = float(np.nanmax(bad)) if np.isfinite(bad).any() else float("inf")
            raise CheckFailure(
                f"[{label}] {part} differs from CPU torch (max abs diff "
                f"{worst if np.isfinite(a).all() else 'nan/inf'}).{_HINTS[name]}"
            )


@grader(
    "31.1",
    blocks=("minitorch.chip.tensor", "minitorch.chip.fallback:run_on_cpu"),
    forbid=("torch", "minitorch"),  # every reference (the op table's lambdas too), by file
    hand="parts",
)
def check_kernels(
    mm: Callable[..., Any],
    addmm: Callable[..., Any],
    softmax: Callable[..., Any],
    softmax_backward: Callable[..., Any],
    layer_norm: Callable[..., Any],
    embedding: Callable[..., Any],
) -> str:
    """Exercise 31.1: six ATen kernels in numpy, equal to CPU torch, torch forbidden inside."""
    kernels = dict(
        zip(_NAMES, (mm, addmm, softmax, softmax_backward, layer_norm, embedding), strict=True)
    )
    cases = _named() + _cases(rng(3102), "seeded") + _cases(fresh_rng("31.1"), fresh("drawn"))
    for name, label, args in cases:
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        with case_label(label):
            got = call(kernels[name], *copies)
        _compare(name, label, got, torch_kernel(name, *args))  # after: no frame holds it
    return f"{len(cases)} calls of 6 ATen overloads equal CPU torch (float32), torch never called"
