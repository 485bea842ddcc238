"""Layers with weights: Linear, Conv2d, Embedding.

Initialization follows torch's defaults, so a model here starts from the same
distribution as its torch twin: Linear and Conv2d draw weights and biases from
U(-1/sqrt(fan_in), 1/sqrt(fan_in)); Embedding draws N(0, 1). Each layer takes an
``rng`` (a numpy Generator) so a seeded model is reproducible without global state.

Inside :func:`~minitorch.nn.autocast.autocast`, Linear and Conv2d compute in BF16/FP16.

Lab: 04_training_loop
"""

from __future__ import annotations

import math

import numpy as np

from minitorch.autograd import Tensor, conv2d, linear
from minitorch.nn.autocast import cast, compute_format
from minitorch.nn.module import Module, Parameter

__all__ = ["Conv2d", "Embedding", "Linear"]


def _uniform(
    rng: np.random.Generator, bound: float, shape: tuple[int, ...], dtype: type
) -> Parameter:
    return Parameter(rng.uniform(-bound, bound, shape).astype(dtype))


def _lowp(
    fmt: str | None, x: Tensor, w: Tensor, b: Tensor | None
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Input, weight and bias rounded to the autocast format (unchanged outside autocast)."""
    if fmt is None:
        return x, w, b
    return cast(x, fmt), cast(w, fmt), None if b is None else cast(b, fmt)


class Linear(Module):
    """y = x W^T + b; x: (..., in_features) -> y: (..., out_features), W: (out, in)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        rng: np.random.Generator | None = None,
        dtype: type = np.float32,
    ) -> None:
        super().__init__()
        rng = rng if rng is not None else np.random.default_rng()
        bound = 1.0 / math.sqrt(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = _uniform(rng, bound, (out_features, in_features), dtype)
        self.bias = _uniform(rng, bound, (out_features,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        fmt = compute_format()
        if fmt is None:
            return linear(x, self.weight, self.bias)
        return cast(linear(*_lowp(fmt, x, self.weight, self.bias)), fmt)

    def __repr__(self) -> str:
        return f"Linear({self.in_features}, {self.out_features}, bias={self.bias is not None})"


class Conv2d(Module):
    """2-D convolution: x: (N, C, H, W) -> (N, O, Ho, Wo), W: (O, C, k, k)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        bias: bool = True,
        *,
        rng: np.random.Generator | None = None,
        dtype: type = np.float32,
    ) -> None:
        super().__init__()
        rng = rng if rng is not None else np.random.default_rng()
        bound = 1.0 / math.sqrt(in_channels * kernel_size * kernel_size)
        shape = (out_channels, in_channels, kernel_size, kernel_size)
        self.stride, self.padding = stride, padding
        self.weight = _uniform(rng, bound, shape, dtype)
        self.bias = _uniform(rng, bound, (out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        fmt = compute_format()
        x, w, b = _lowp(fmt, x, self.weight, self.bias)
        y = conv2d(x, w, b, stride=self.stride, padding=self.padding)
        return y if fmt is None else cast(y, fmt)

    def __repr__(self) -> str:
        o, c, k, _ = self.weight.shape
        return f"Conv2d({c}, {o}, kernel_size={k}, stride={self.stride}, padding={self.padding})"


class Embedding(Module):
    """A lookup table: integer ids (...) -> rows of W, (..., embedding_dim).

    Backward scatter-adds into the rows that were used (``np.add.at``: ids may repeat).
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        *,
        rng: np.random.Generator | None = None,
        dtype: type = np.float32,
    ) -> None:
        super().__init__()
        rng = rng if rng is not None else np.random.default_rng()
        self.weight = Parameter(rng.standard_normal((num_embeddings, embedding_dim)).astype(dtype))

    def forward(self, ids: np.ndarray | Tensor) -> Tensor:
        ids = ids.data if isinstance(ids, Tensor) else np.asarray(ids)
        return self.weight[ids]

    def __repr__(self) -> str:
        return f"Embedding({self.weight.shape[0]}, {self.weight.shape[1]})"
