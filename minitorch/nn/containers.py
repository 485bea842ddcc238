"""Containers and parameter-free layers: Sequential, MLP, activations, Dropout, Flatten.

``MLP([784, 512, 512, 10])`` is Linear-ReLU-Linear-ReLU-Linear: the model of the training
benchmark of lab 04. Dropout draws a fresh seed from its own generator for every call, so
two forward passes get different masks while a seeded model stays reproducible.

Lab: 04_training_loop
Paper: Srivastava et al. 2014, "Dropout: A Simple Way to Prevent Neural Networks from
Overfitting"
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from minitorch.autograd import Tensor, dropout, flatten, gelu
from minitorch.nn.layers import Linear
from minitorch.nn.module import Module

__all__ = ["GELU", "MLP", "Dropout", "Flatten", "ReLU", "Sequential", "Sigmoid", "Tanh"]


class Sequential(Module):
    """Apply modules in order; they are registered as "0", "1", ..."""

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def forward(self, x: Tensor) -> Tensor:
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.relu()


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sigmoid()


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return gelu(x, self.approximate)


class Flatten(Module):
    """(N, C, H, W) -> (N, C*H*W) for the default start_dim=1."""

    def __init__(self, start_dim: int = 1) -> None:
        super().__init__()
        self.start_dim = start_dim

    def forward(self, x: Tensor) -> Tensor:
        return flatten(x, self.start_dim)


class Dropout(Module):
    """Inverted dropout with probability ``p`` while training; identity in eval."""

    def __init__(self, p: float = 0.5, *, rng: np.random.Generator | None = None) -> None:
        super().__init__()
        self.p = p
        self.rng = rng if rng is not None else np.random.default_rng()

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        return dropout(x, self.p, seed=int(self.rng.integers(2**63 - 1)))


_ACTIVATIONS = {"relu": ReLU, "tanh": Tanh, "gelu": GELU, "sigmoid": Sigmoid}


class MLP(Sequential):
    """Linear layers of ``sizes`` (e.g. [784, 512, 512, 10]) with an activation between."""

    def __init__(
        self,
        sizes: Sequence[int],
        activation: str = "relu",
        *,
        rng: np.random.Generator | None = None,
        dtype: type = np.float32,
    ) -> None:
        rng = rng if rng is not None else np.random.default_rng()
        layers: list[Module] = []
        for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
            layers.append(Linear(n_in, n_out, rng=rng, dtype=dtype))
            if i < len(sizes) - 2:
                layers.append(_ACTIVATIONS[activation]())
        super().__init__(*layers)
