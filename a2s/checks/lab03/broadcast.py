"""Graders of exercises 03.1 (unbroadcast) and 03.2 (matmul backward), against torch autograd.

Ground truth: ``x.expand(shape).backward(g)`` (the adjoint of broadcasting, computed by torch)
and ``torch.matmul(a, b).backward(g)`` in float64, on named edge cases (scalars, size-1 and
missing leading axes, zero-size axes, k = 0) and then seeded random shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import assert_true, fresh_rng, grader, rng
from a2s.checks.vjp import ENGINE, torch_vjp

__all__ = ["check_matmul_backward", "check_unbroadcast"]

_A = "minitorch.autograd"
_KEEPDIMS = (
    "Size-1 axes of `shape` that grad stretched must be summed *with keepdims=True* (or "
    "reshaped back): the gradient must have exactly the input's shape."
)
_LEADING_ONLY = (
    "You summed the extra leading axes but not the size-1 axes: an input of shape (1, 4) "
    "broadcast to (3, 4) was read 3 times, so its gradient is the sum over axis 0."
)
_ALIGN = (
    "Broadcasting aligns shapes on the *right*: the axes grad has in excess are the leading "
    "ones, and shape[i] lines up with grad.shape[i + grad.ndim - len(shape)]."
)
_UNBROADCAST_NAMED: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = [
    ("no broadcasting", (2, 3), (2, 3)),
    ("size-1 axis (a row vector)", (3, 4), (1, 4)),
    ("size-1 trailing axis (a column)", (3, 4), (3, 1)),
    ("missing leading axis (a bias)", (5, 3, 4), (4,)),
    ("missing leading axis, square", (3, 3), (3,)),
    ("missing and size-1 axes", (2, 3, 4), (3, 1)),
    ("size-1 axis that stays size 1", (2, 1, 4), (1, 1, 4)),
    ("scalar", (2, 3), ()),
    ("scalar to scalar", (), ()),
    ("zero-size batch, missing axis", (0, 3), (3,)),
    ("zero-size batch against size 1", (0, 3), (1, 3)),
    ("zero-size axis kept", (2, 0, 3), (1, 0, 1)),
]


def _unbroadcast_hint(got: np.ndarray, gshape: tuple[int, ...], shape: tuple[int, ...]) -> str:
    if got.shape == gshape[len(gshape) - len(shape) :] and got.shape != shape:
        return _LEADING_ONLY
    if got.ndim != len(shape):
        return _KEEPDIMS
    return _ALIGN


def _expect_unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    _, (want,) = torch_vjp(lambda x: x.expand(g.shape), [np.zeros(shape)], g)
    return want


def _random_unbroadcast(gen: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ndim = int(gen.integers(0, 5))
    gshape = tuple(
        int(gen.choice([0, 1, 2, 3, 4, 5], p=[0.04, 0.16, 0.2, 0.2, 0.2, 0.2])) for _ in range(ndim)
    )
    keep = int(gen.integers(0, ndim + 1))
    shape = tuple(1 if gen.random() < 0.4 else n for n in gshape[ndim - keep :])
    return gshape, shape


def _one_unbroadcast(
    student: Callable[..., object], g: np.ndarray, shape: tuple[int, ...], case: str
) -> float:
    got = np.asarray(call_pure(student, g, shape, case=case))
    want = _expect_unbroadcast(g, shape)
    hint = _unbroadcast_hint(got, g.shape, shape) if got.shape != shape else _ALIGN
    what, rtol = f"unbroadcast(grad {g.shape}, {shape})", 1e-8 if g.dtype == np.float64 else 1e-5
    err = close(got, want, case=case, what=what, hint=hint, rtol=rtol)
    assert_true(
        got.dtype == g.dtype,
        f"[{case}] returned dtype {got.dtype} for a {g.dtype} gradient; keep grad's dtype "
        "(np.zeros(shape) is float64: pass dtype=grad.dtype, or just use grad.sum).",
    )
    return err


@grader("03.1", blocks=(f"{_A}.engine:unbroadcast", *ENGINE), hand="parts")
def check_unbroadcast(unbroadcast: Callable[..., object]) -> str:
    """Exercise 03.1: sum a broadcast gradient back to the input's shape, as torch does."""
    gen, worst, n = rng(301), 0.0, 0
    for label, gshape, shape in _UNBROADCAST_NAMED:
        g = gen.standard_normal(gshape)
        worst = max(worst, _one_unbroadcast(unbroadcast, g, shape, label))
        n += 1
    g32 = gen.standard_normal((4, 3)).astype(np.float32)
    _one_unbroadcast(unbroadcast, g32, (1, 3), "float32 gradient")
    for g_, count, mark in ((gen, 300, str), (fresh_rng("03.1"), 20, fresh)):
        for i in range(count):
            gshape, shape = _random_unbroadcast(g_)
            g = g_.standard_normal(gshape)
            case = mark(f"random case {i}: grad {gshape} -> {shape}")
            worst = max(worst, _one_unbroadcast(unbroadcast, g, shape, case))
            n += 1
    return (
        f"{n + 1} shapes (scalars, size-1, missing and zero-size axes; 20 fresh) match torch, "
        f"max error {worst:.1e}"
    )


# --------------------------------------------------------------------------- 03.2 matmul
_MATMUL_NAMED: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = [
    ("square: the transpose matters", (3, 3), (3, 3)),
    ("rectangular", (2, 3), (3, 4)),
    ("batched, same batch", (5, 2, 3), (5, 3, 4)),
    ("shared weight: b has no batch axis", (4, 2, 3), (3, 5)),
    ("shared input: a has no batch axis", (2, 3), (4, 3, 5)),
    ("size-1 batch axes on both sides", (2, 1, 2, 3), (1, 4, 3, 2)),
    ("batch of one against many", (1, 2, 3), (6, 3, 2)),
    ("one row times one column", (1, 5), (5, 1)),
    ("empty batch", (0, 2, 3), (3, 4)),
    ("inner dimension k = 0", (2, 0), (0, 3)),
]
_TRANSPOSE = (
    "Missing transpose: dL/dA = g @ B^T and dL/dB = A^T @ g, swapping the *last two* axes "
    "(np.swapaxes(b, -1, -2); .T would reverse every axis of a batched array)."
)
_BATCH_SUM = (
    "Gradient not summed over the broadcast batch axes: an operand shared across the batch "
    "gets the sum of every batch element's gradient, in its own shape (unbroadcast)."
)


def _sum_to(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum the leading batch axes of x away until it has ``shape`` (hint candidates only)."""
    x = x.sum(axis=tuple(range(x.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1)
    return x.sum(axis=axes, keepdims=True) if x.shape != shape else x


def _matmul_hint(got: np.ndarray, shape: tuple[int, ...], untransposed: np.ndarray | None) -> str:
    if got.shape != shape and got.shape[-2:] == shape[-2:]:
        return _BATCH_SUM
    if untransposed is not None and untransposed.shape[-2:] == shape[-2:]:
        if looks_like(got, _sum_to(untransposed, shape)):
            return _TRANSPOSE
    return _TRANSPOSE + " " + _BATCH_SUM


def _one_matmul(
    student: Callable[..., object], a: np.ndarray, b: np.ndarray, g: np.ndarray, case: str
) -> float:
    _, (want_a, want_b) = torch_vjp(torch.matmul, [a, b], g)
    got = call_pure(student, a, b, g, case=case)
    assert_true(
        isinstance(got, (tuple, list)) and len(got) == 2,
        f"[{case}] return the pair (grad_a, grad_b).",
    )
    ga, gb = np.asarray(got[0]), np.asarray(got[1])
    no_t_a = g @ b if g.shape[-1] == b.shape[-2] else None  # forgot b^T: (.., n, m) @ (.., k, m)
    no_t_b = a @ g if a.shape[-1] == g.shape[-2] else None  # forgot a^T
    hint_a, hint_b = _matmul_hint(ga, a.shape, no_t_a), _matmul_hint(gb, b.shape, no_t_b)
    err = close(ga, want_a, case=case, what=f"grad_a {a.shape}", hint=hint_a)
    return max(err, close(gb, want_b, case=case, what=f"grad_b {b.shape}", hint=hint_b))


def _random_matmul(gen: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n, k, m = (int(v) for v in gen.integers(1, 6, 3))
    batch = [int(v) for v in gen.integers(1, 4, int(gen.integers(0, 3)))]

    def operand_batch() -> tuple[int, ...]:  # a suffix of the batch, some axes set to 1
        tail = batch[int(gen.integers(0, len(batch) + 1)) :]
        return tuple(1 if gen.random() < 0.3 else d for d in tail)

    return (*operand_batch(), n, k), (*operand_batch(), k, m)


@grader(
    "03.2",
    blocks=(
        f"{_A}.ops_matmul:matmul_backward",
        f"{_A}.ops_matmul:linear_backward",
        f"{_A}.ops_matmul:matmul",
        f"{_A}.ops_matmul:linear",
        *ENGINE,
    ),
    uses=(("03.1", "unbroadcast", f"{_A}.engine:unbroadcast"),),
    hand="parts",
)
def check_matmul_backward(matmul_backward: Callable[..., object]) -> str:
    """Exercise 03.2: (a, b, g) -> (dL/da, dL/db) of a batched, broadcasting matmul."""
    gen, worst, flops = rng(302), 0.0, 0
    new = fresh_rng("03.2")
    cases = [(label, sa, sb, gen) for label, sa, sb in _MATMUL_NAMED]
    cases += [
        (f"random case {i}: {sa} @ {sb}", sa, sb, gen)
        for i, (sa, sb) in enumerate(_random_matmul(gen) for _ in range(60))
    ]
    cases += [
        (fresh(f"random case {i}: {sa} @ {sb}"), sa, sb, new)
        for i, (sa, sb) in enumerate(_random_matmul(new) for _ in range(8))
    ]
    for case, sa, sb, src in cases:
        a, b = src.standard_normal(sa), src.standard_normal(sb)
        bshape = np.broadcast_shapes(sa[:-2], sb[:-2])
        g = src.standard_normal((*bshape, sa[-2], sb[-1]))  # (..., n, m)
        worst = max(worst, _one_matmul(matmul_backward, a, b, g, case))
        batch = int(np.prod(bshape, dtype=np.int64))
        flops += 2 * 2 * batch * sa[-2] * sa[-1] * sb[-1]  # two matmuls, 2 FLOPs per MAC
    return (
        f"{len(cases)} shapes (8 fresh) incl. broadcast batches, empty batch and k = 0 match torch "
        f"(max error {worst:.1e}); backward costs 2x the forward's FLOPs ({flops:,} here)"
    )
