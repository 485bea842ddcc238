"""Mixed-precision compute, emulated: BF16/FP16 rounding around the matrix multiplies.

Inside ``autocast("bf16")`` the layers that do matrix multiplies (Linear, Conv2d) round
their inputs and weights to BF16 (or FP16), multiply with FP32 accumulation, and round the
result, like a tensor core. Everything else (norms, softmax, losses, the optimizer) stays
FP32, and the parameters themselves stay FP32: they are the *master weights*; each step
uses a rounded copy. Rounding uses lab 01's bit-exact round-to-nearest-even.

The ``cast`` op's backward rounds the incoming gradient too: the gradient of a BF16 tensor
is a BF16 tensor. In FP16 that is where small gradients underflow to 0 and large ones
overflow to inf, which is why FP16 training needs loss scaling (``optim.GradScaler``).

    forward   y = round(x)                 backward   dL/dx = round(dL/dy)

Lab: 04_training_loop
Paper: Micikevicius et al., ICLR 2018 (arXiv 2017), "Mixed Precision Training"
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from minitorch.autograd import Node, Tensor, backward_rule, make

__all__ = ["autocast", "cast", "compute_format", "round_to"]

FORMATS = ("bf16", "fp16")
_FORMAT: ContextVar[str | None] = ContextVar("minitorch_autocast", default=None)


def round_to(x: np.ndarray, fmt: str) -> np.ndarray:
    """Round an array to ``fmt`` ("bf16" or "fp16"); the values come back as float32."""
    from minitorch.numerics.bfloat16 import round_to_bf16, round_to_fp16

    if fmt == "bf16":
        return round_to_bf16(np.asarray(x, dtype=np.float32))
    if fmt == "fp16":
        return round_to_fp16(np.asarray(x, dtype=np.float32))
    raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")


def cast(x: Tensor, fmt: str) -> Tensor:
    """``x`` rounded to ``fmt``; its gradient is rounded to ``fmt`` on the way back."""
    return make("cast", round_to(x.data, fmt), (x,), fmt)


@backward_rule("cast")
def cast_backward(node: Node, g: np.ndarray) -> tuple[np.ndarray]:
    (fmt,) = node.saved
    return (round_to(g, fmt).astype(node.parents[0].dtype, copy=False),)


@contextmanager
def autocast(fmt: str | None = "bf16") -> Iterator[None]:
    """Run matrix-multiplying layers in ``fmt`` inside the block (None: plain FP32)."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS} or None, not {fmt!r}")
    token = _FORMAT.set(fmt)
    try:
        yield
    finally:
        _FORMAT.reset(token)


def compute_format() -> str | None:
    """The format of the enclosing :func:`autocast` block, or None outside one."""
    return _FORMAT.get()
