"""Normalization layers: BatchNorm (train/eval) and LayerNorm.

BatchNorm normalizes each channel over the batch (and spatial) axes while training and
keeps exponential moving averages of the batch mean and unbiased variance; ``eval()``
switches it to those running statistics, so a sample's output no longer depends on its
batch. LayerNorm normalizes each sample over its trailing feature axes, the same in train
and eval. The math and the backward live in :mod:`minitorch.autograd.ops_norm`.

Lab: 04_training_loop
Paper: Ioffe & Szegedy 2015, "Batch Normalization: Accelerating Deep Network Training by
Reducing Internal Covariate Shift"; Ba, Kiros & Hinton 2016, "Layer Normalization"
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.autograd import Tensor, batch_norm, layer_norm
from minitorch.nn.module import Module, Parameter

__all__ = ["BatchNorm", "BatchNorm1d", "BatchNorm2d", "LayerNorm"]


class BatchNorm(Module):
    """Batch norm over channel axis 1 of x: (N, C) or (N, C, H, W)."""

    running_mean: np.ndarray  # buffers, set by register_buffer
    running_var: np.ndarray

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        dtype: type = np.float32,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = Parameter(np.ones(num_features, dtype)) if affine else None
        self.bias = Parameter(np.zeros(num_features, dtype)) if affine else None
        self.register_buffer("running_mean", np.zeros(num_features, dtype))
        self.register_buffer("running_var", np.ones(num_features, dtype))

    def forward(self, x: Tensor) -> Tensor:
        return batch_norm(
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            self.training,
            self.momentum,
            self.eps,
        )

    def __repr__(self) -> str:
        return f"BatchNorm({self.num_features}, eps={self.eps}, momentum={self.momentum})"


BatchNorm1d = BatchNorm  # torch's names: same layer, the input rank tells them apart
BatchNorm2d = BatchNorm


class LayerNorm(Module):
    """Layer norm over the trailing ``normalized_shape`` axes of x: (..., *normalized_shape)."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        dtype: type = np.float32,
    ) -> None:
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(np.ones(shape, dtype)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, dtype)) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def __repr__(self) -> str:
        return f"LayerNorm({self.normalized_shape}, eps={self.eps})"
