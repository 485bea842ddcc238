"""Layers and models on top of the tensor autograd: Module/Parameter and the usual layers.

    from minitorch.nn import MLP
    model = MLP([784, 512, 512, 10], rng=np.random.default_rng(0))
    loss = cross_entropy(model(Tensor(x)), y)

Lab: 04_training_loop
"""

from minitorch.nn.autocast import autocast, cast, compute_format, round_to
from minitorch.nn.containers import (
    GELU,
    MLP,
    Dropout,
    Flatten,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from minitorch.nn.layers import Conv2d, Embedding, Linear
from minitorch.nn.module import Module, Parameter
from minitorch.nn.norm import BatchNorm, BatchNorm1d, BatchNorm2d, LayerNorm

__all__ = [
    "GELU",
    "MLP",
    "BatchNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "LayerNorm",
    "Linear",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "autocast",
    "cast",
    "compute_format",
    "round_to",
]
