"""Grader of exercise 13.2: shape inference for every op of the IR, against torch.

Ground truth: the op run by torch on empty tensors of the input shapes (``torch.empty``), and
a torch error where the op is illegal, where the student must raise ``ValueError``. The
student may not call numpy's broadcasting helpers nor make arrays to run the op on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, StudentError, assert_true, fresh_rng, grader, plain

__all__ = ["check_infer_shape"]

_FORBID = (
    "torch",
    "numpy:broadcast_shapes",
    "numpy:broadcast",
    "numpy:broadcast_to",
    "numpy:broadcast_arrays",
    "numpy:empty",
    "numpy:zeros",
    "numpy:ones",
    "numpy:full",
    "numpy:empty_like",
    "numpy:zeros_like",
    "numpy:ones_like",
    "numpy:full_like",
    "numpy.lib.stride_tricks:as_strided",
)
_LEFT = (
    "Broadcasting aligns shapes on the *right*: pad the shorter shape with 1s on the left, then "
    "each pair of sizes must be equal or one of them 1 (the result takes the other)."
)
_ONE = (
    "A size 1 stretches to the other size; two different sizes neither of which is 1 is an error."
)
_MATMUL = "matmul: (..., n, k) @ (..., k, m) -> (..., n, m), the batch axes broadcast."
_REDUCE = "A reduction drops the axes in attrs['axes'], or keeps them as size 1 when keepdims."


_HUGE = (
    "These shapes hold about 2**52 elements, far too many to allocate: compute the shape from "
    "the rule (plain integers), never by making arrays and running the op on them."
)


def _torch(op: str, shapes: list[tuple[int, ...]], attrs: dict[str, Any]) -> tuple[int, ...] | None:
    t = [torch.empty(s) for s in shapes]
    try:
        if op in ("add", "sub", "mul", "div", "pow"):
            out = t[0] + t[1]
        elif op == "matmul":
            if min(len(s) for s in shapes) < 2:
                return None
            out = t[0] @ t[1]
        elif op in ("sum", "mean", "max"):
            out = t[0].sum(dim=attrs["axes"], keepdim=attrs["keepdims"])
        elif op == "reshape":
            if any(n < 0 for n in attrs["shape"]):
                return None
            out = t[0].reshape(attrs["shape"])
        elif op == "transpose":
            out = t[0].transpose(attrs["dim0"], attrs["dim1"])
        elif op == "permute":
            out = t[0].permute(attrs["dims"])
        else:
            out = torch.relu(t[0])
    except RuntimeError:
        return None
    return tuple(out.shape)


_NAMED: list[tuple[str, str, list[tuple[int, ...]], dict[str, Any], str]] = [
    ("same shapes", "add", [(2, 3), (2, 3)], {}, _LEFT),
    ("a bias row", "add", [(4, 3), (3,)], {}, _LEFT),
    ("a column against a row", "mul", [(4, 1), (1, 3)], {}, _ONE),
    ("missing leading axes", "sub", [(2, 1, 3), (5, 1)], {}, _LEFT),
    ("a scalar", "div", [(2, 3), ()], {}, _LEFT),
    ("(2, 3) + (2,): right-aligned, illegal", "add", [(2, 3), (2,)], {}, _LEFT),
    ("(3, 2) * (3,): illegal", "mul", [(3, 2), (3,)], {}, _LEFT),
    ("unary", "exp", [(2, 5)], {}, ""),
    ("matmul", "matmul", [(2, 3), (3, 4)], {}, _MATMUL),
    ("batched matmul, shared weight", "matmul", [(5, 2, 3), (3, 4)], {}, _MATMUL),
    ("batch axes broadcast", "matmul", [(2, 1, 2, 3), (4, 3, 5)], {}, _MATMUL),
    ("inner sizes differ", "matmul", [(2, 3), (4, 5)], {}, _MATMUL),
    ("sum over the last axis", "sum", [(2, 3, 4)], {"axes": (2,), "keepdims": False}, _REDUCE),
    ("max keepdims", "max", [(2, 3, 4)], {"axes": (1, 2), "keepdims": True}, _REDUCE),
    ("mean over everything", "mean", [(2, 3)], {"axes": (0, 1), "keepdims": False}, _REDUCE),
    ("reshape", "reshape", [(2, 3, 4)], {"shape": (6, 4)}, "The element count must not change."),
    (
        "reshape, wrong count",
        "reshape",
        [(2, 3)],
        {"shape": (4, 2)},
        "The element count must not change.",
    ),
    ("transpose", "transpose", [(2, 3, 4)], {"dim0": 0, "dim1": 2}, "Swap the two axes."),
    (
        "permute",
        "permute",
        [(2, 3, 4)],
        {"dims": (2, 0, 1)},
        "Output axis i is input axis dims[i].",
    ),
]


def _random(gen: np.random.Generator) -> tuple[str, list[tuple[int, ...]], dict[str, Any]]:
    base = tuple(int(v) for v in gen.integers(1, 5, int(gen.integers(1, 5))))
    kind = int(gen.integers(0, 3))
    if kind == 0:
        other = tuple(
            1 if gen.random() < 0.3 else (n if gen.random() < 0.8 else n + 1) for n in base
        )
        return "add", [base, other[int(gen.integers(0, len(other) + 1)) :]], {}
    if kind == 1:
        k = int(gen.integers(1, 5))
        return (
            "matmul",
            [(*base[:-1], k) if len(base) > 1 else (2, k), (k, int(gen.integers(1, 5)))],
            {},
        )
    axes = tuple(sorted({int(a) for a in gen.integers(0, len(base), 2)}))
    return "sum", [base], {"axes": axes, "keepdims": bool(gen.random() < 0.5)}


def _huge(gen: np.random.Generator) -> tuple[str, list[tuple[int, ...]], dict[str, Any], int]:
    """A random case of ``_random`` and one factor for every size above 1, chosen so the
    largest operand has about 2**52 elements. The rule commutes with the scaling (equal sizes
    stay equal, unequal ones unequal, 1s stay 1, every output size is an input size), so
    torch's answer on the small shapes, scaled, is the answer on the large ones."""
    op, shapes, attrs = _random(gen)
    if not any(n > 1 for s in shapes for n in s):  # all ones: make one axis large
        shapes = [(2, *shapes[0][1:]), *shapes[1:]]
    most = max(int(np.prod([n for n in s if n > 1], dtype=np.int64)) for s in shapes)
    count = max(sum(n > 1 for n in s) for s in shapes)
    return op, shapes, attrs, max(2, int((2.0**52 / most) ** (1 / count)))


def _scaled(shape: tuple[int, ...], scale: int) -> tuple[int, ...]:
    return tuple(n * scale if n > 1 else 1 for n in shape)


def _one(
    student: Callable[..., Any],
    op: str,
    shapes: list,
    attrs: dict,
    case: str,
    hint: str,
    scale: int = 1,
) -> bool:
    want = _torch(op, shapes, attrs)
    if scale > 1:
        want = None if want is None else _scaled(want, scale)
        shapes = [_scaled(s, scale) for s in shapes]
    try:
        got = plain(
            student(op, [tuple(s) for s in shapes], dict(attrs)), what="the shape", case=case
        )
    except StudentError as exc:
        if isinstance(exc.__cause__, MemoryError):
            raise CheckFailure(f"[{case}] {op}{tuple(shapes)}: MemoryError. {hint}") from None
        if not isinstance(exc.__cause__, ValueError):
            raise StudentError(f"[{case}] {exc}") from exc.__cause__
        if want is None:
            return False
        msg = (
            f"[{case}] {op}{tuple(shapes)} is legal (torch gives {want}) but you raised ValueError"
        )
        raise CheckFailure(f"{msg}: {exc.__cause__}. {hint}") from None
    if want is None:
        assert_true(
            False,
            f"[{case}] {op} of {shapes} is illegal (torch refuses it) but you returned {got}: "
            f"raise ValueError. {hint}",
        )
    got = tuple(got) if isinstance(got, (tuple, list)) else got
    assert_true(
        got == want,
        f"[{case}] {op}{tuple(shapes)} {attrs or ''}: got {got}, expected {want}. {hint}",
    )
    return True


@grader(
    "13.2",
    blocks=("minitorch.compiler.ir:infer_shape", "minitorch.compiler.ir:broadcast_shape"),
    forbid=_FORBID,
    hand="parts",
)
def check_infer_shape(infer_shape: Callable[..., Any]) -> str:
    """Exercise 13.2: ``infer_shape(op, shapes, attrs)``, a ``ValueError`` for an illegal op."""
    legal = illegal = 0
    for label, op, shapes, attrs, hint in _NAMED:
        ok = _one(infer_shape, op, shapes, attrs, label, hint)
        legal, illegal = legal + ok, illegal + (not ok)
    gen = fresh_rng("13.2")
    for i in range(30):
        op, shapes, attrs = _random(gen)
        ok = _one(
            infer_shape, op, shapes, attrs, fresh(f"random case {i}"), _LEFT if op == "add" else ""
        )
        legal, illegal = legal + ok, illegal + (not ok)
    for i in range(6):
        op, shapes, attrs, scale = _huge(gen)
        ok = _one(infer_shape, op, shapes, attrs, fresh(f"large case {i}"), _HUGE, scale)
        legal, illegal = legal + ok, illegal + (not ok)
    return (
        f"{legal} legal ops give torch's shape, {illegal} illegal ones raise ValueError "
        "(36 fresh cases, 6 of them too large to allocate)"
    )
