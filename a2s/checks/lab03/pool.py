"""Grader of exercise 03.5: max-pool and average-pool backward, against torch autograd.

Max pooling routes each output's gradient to the one input that won its window; on ties
the *first* maximum in row-major window order wins (torch's CPU kernel and ``np.argmax``
agree), which matters after a ReLU, where whole windows are 0. Average pooling spreads
g / k^2 over the window, padded zeros included (torch's ``count_include_pad=True``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch.nn.functional as F

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.vjp import ENGINE, out_shape, torch_vjp

__all__ = ["check_pool_backward"]

_C = "minitorch.autograd.ops_conv"
# (label, x shape, kernel, stride, pad, values: "normal" | "relu" | "ties")
Case = tuple[str, tuple[int, int, int, int], int, int, int, str]
_NAMED: list[Case] = [
    ("2x2 windows, stride 2", (1, 1, 4, 4), 2, 2, 0, "normal"),
    ("overlapping 3x3 windows, stride 1: a pixel can win several", (1, 1, 5, 5), 3, 1, 0, "normal"),
    ("ties: a ReLU output full of zeros", (2, 2, 6, 6), 2, 2, 0, "relu"),
    ("ties in overlapping windows", (1, 2, 5, 5), 3, 1, 0, "ties"),
    ("padding 1", (1, 2, 5, 5), 3, 2, 1, "normal"),
    ("padding on a constant image", (1, 1, 4, 4), 3, 2, 1, "ties"),
    ("stride 2 leaves the last row unused", (1, 1, 5, 5), 2, 2, 0, "normal"),
    ("channels and batch", (3, 4, 6, 6), 2, 2, 0, "normal"),
    ("empty batch", (0, 2, 4, 4), 2, 2, 0, "normal"),
]
_TIE_ALL = (
    "Ties: you gave the gradient to *every* maximum of the window. The forward picked one "
    "input (torch: the first maximum in row-major window order, like np.argmax), so only "
    "that one receives g; otherwise the gradient is counted several times."
)
_TIE_SPLIT = (
    "Ties: you split g among the tied maxima. Torch routes all of g to the first maximum "
    "in row-major window order (np.argmax's choice); do the same."
)
_MAX = (
    "Each window's g goes to the position of its maximum (np.argmax over the flattened "
    "k*k window) and is *added* there: overlapping windows can share a winner. Padding is "
    "-inf, so it never wins; crop it off at the end."
)
_AVG = (
    "Every input in a window receives g / (k*k), added up over overlapping windows; padded "
    "zeros count in the k*k (count_include_pad=True), so the divisor is always k*k."
)


def _values(shape: tuple[int, ...], kind: str, gen: np.random.Generator) -> np.ndarray:
    if kind == "relu":
        return np.maximum(gen.standard_normal(shape), 0.0)
    if kind == "ties":
        return gen.integers(0, 2, shape).astype(np.float64)
    return gen.standard_normal(shape)


def _random_cases(gen: np.random.Generator, n: int, mark: Callable[[str], str] = str) -> list[Case]:
    cases = []
    for i in range(n):
        k = int(gen.integers(1, 4))
        s, p = int(gen.integers(1, k + 1)), int(gen.integers(0, k // 2 + 1))
        h, w = (int(v) for v in gen.integers(k, 9, 2))
        shape = (int(gen.integers(1, 3)), int(gen.integers(1, 3)), h, w)
        kind = str(gen.choice(["normal", "relu", "ties"]))
        cases.append(
            (mark(f"random case {i}: x {shape}, k {k}, s {s}, p {p}, {kind}"), shape, k, s, p, kind)
        )
    return cases


def _g(case: str, shape: tuple[int, ...], k: int, s: int, p: int) -> np.ndarray:
    n, c, h, w = shape
    return rng(len(case)).random((n, c, out_shape(h, k, s, p), out_shape(w, k, s, p))) + 0.5


def _route(x: np.ndarray, g: np.ndarray, k: int, s: int, p: int, mode: str) -> np.ndarray:
    """Max-pool backward with a *wrong* tie rule ("all", "split", "last"), to name mistakes."""
    (h, w), (ho, wo) = x.shape[2:], g.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    offsets = [(i, j) for i in range(k) for j in range(k)]
    win = np.stack([xp[:, :, i : i + s * ho : s, j : j + s * wo : s] for i, j in offsets], -1)
    share = (win == win.max(axis=-1, keepdims=True)).astype(np.float64)  # every tied max
    if mode == "split":
        share /= share.sum(axis=-1, keepdims=True)
    elif mode == "last":
        last = k * k - 1 - share[..., ::-1].argmax(axis=-1)
        share = (np.arange(k * k) == last[..., None]).astype(np.float64)
    gx = np.zeros(xp.shape)
    for idx, (i, j) in enumerate(offsets):
        gx[:, :, i : i + s * ho : s, j : j + s * wo : s] += g * share[..., idx]
    return gx[:, :, p : p + h, p : p + w]


_TIE_LAST = (
    "Ties: you routed g to the *last* maximum. Torch (and np.argmax) keep the first one in "
    "row-major window order: update the running max only on a strictly greater value."
)


def _max_hint(got: object, x: np.ndarray, g: np.ndarray, k: int, s: int, p: int) -> str:
    for mode, hint in (("all", _TIE_ALL), ("split", _TIE_SPLIT), ("last", _TIE_LAST)):
        if looks_like(got, _route(x, g, k, s, p, mode)):
            return hint
    return _MAX


@grader(
    "03.5",
    blocks=(
        f"{_C}:max_pool2d",
        f"{_C}:max_pool2d_backward",
        f"{_C}:avg_pool2d",
        f"{_C}:avg_pool2d_backward",
        f"{_C}:_scatter_windows",
        f"{_C}:_windows",
        f"{_C}:col2im",
        f"{_C}:im2col",
        *ENGINE,
    ),
    hand="parts",
)
def check_pool_backward(
    max_pool2d_backward: Callable[..., object], avg_pool2d_backward: Callable[..., object]
) -> str:
    """Exercise 03.5: pooling gradients, ties included, match torch autograd."""
    gen, worst, ties = rng(305), 0.0, 0
    cases = _NAMED + _random_cases(rng(315), 40) + _random_cases(fresh_rng("03.5"), 5, fresh)
    for case, shape, k, s, p, kind in cases:
        x, g = _values(shape, kind, gen), _g(case, shape, k, s, p)
        _, (want,) = torch_vjp(lambda t: F.max_pool2d(t, k, s, p), [x], g)  # noqa: B023
        got = call_pure(max_pool2d_backward, x, g, k, s, p, case=f"max pool, {case}")
        hint = _max_hint(got, x, g, k, s, p) if kind != "normal" else _MAX
        worst = max(worst, close(got, want, case=f"max pool, {case}", what="grad_x", hint=hint))
        ties += kind != "normal"
    for case, shape, k, s, p, kind in cases:
        x, g = _values(shape, kind, gen), _g(case, shape, k, s, p)
        _, (want,) = torch_vjp(lambda t: F.avg_pool2d(t, k, s, p), [x], g)  # noqa: B023
        got = call_pure(avg_pool2d_backward, x.shape, g, k, s, p, case=f"avg pool, {case}")
        worst = max(worst, close(got, want, case=f"avg pool, {case}", what="grad_x", hint=_AVG))
    return (
        f"{len(cases)} max-pool cases ({ties} with ties) and {len(cases)} avg-pool cases (5 "
        f"fresh each) match torch (max error {worst:.1e})"
    )
