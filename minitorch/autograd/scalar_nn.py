"""A multilayer perceptron made of scalar :class:`~minitorch.autograd.scalar.Value` s.

    model = MLP(2, [8, 8, 1], seed=0)      # 2 inputs, two tanh layers of 8, one linear output
    score = model([0.5, -1.0])             # a Value; score.backward() fills every p.grad
    for p in model.parameters(): ...       # weights then bias, neuron by neuron, layer by layer

Each neuron computes ``act(b + sum_i w_i x_i)``; hidden layers use tanh, the last layer is
linear (a score, or logit). Weights and biases start uniform in +-1/sqrt(fan_in), the
distribution of ``torch.nn.Linear``'s default init, drawn from a seeded numpy generator.
One scalar multiply-add is two graph nodes, so this is for 2-D toy problems only: an
(n_in, n_out) layer costs about 2 n_in n_out nodes per example.

Lab: 02_autograd_scalar
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from minitorch.autograd.scalar import Value

__all__ = ["MLP", "Layer", "Neuron"]


class Neuron:
    """``act(b + w . x)``: ``nin`` weights and one bias, all :class:`Value` leaves."""

    def __init__(self, nin: int, nonlin: bool, rng: np.random.Generator) -> None:
        bound = 1.0 / np.sqrt(nin)
        self.w = [Value(float(v)) for v in rng.uniform(-bound, bound, nin)]
        self.b = Value(float(rng.uniform(-bound, bound)))
        self.nonlin = nonlin

    def __call__(self, x: Sequence[Value | float]) -> Value:
        act = self.b
        for wi, xi in zip(self.w, x, strict=True):
            act = act + wi * xi
        return act.tanh() if self.nonlin else act

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]


class Layer:
    """``nout`` neurons reading the same ``nin`` inputs."""

    def __init__(self, nin: int, nout: int, nonlin: bool, rng: np.random.Generator) -> None:
        self.neurons = [Neuron(nin, nonlin, rng) for _ in range(nout)]

    def __call__(self, x: Sequence[Value | float]) -> list[Value]:
        return [n(x) for n in self.neurons]

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    """Layers of sizes ``nouts`` on ``nin`` inputs: tanh between layers, a linear last layer."""

    def __init__(self, nin: int, nouts: Sequence[int], seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        sizes = [nin, *nouts]
        last = len(nouts) - 1
        self.layers = [
            Layer(sizes[i], sizes[i + 1], nonlin=i != last, rng=rng) for i in range(len(nouts))
        ]

    def __call__(self, x: Sequence[Value | float]) -> Value | list[Value]:
        """Forward one example; a single output comes back as a Value, not a list."""
        out: Sequence[Value | float] = x
        for layer in self.layers:
            out = layer(out)
        values = cast("list[Value]", list(out))  # every layer returns Values
        return values[0] if len(values) == 1 else values

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        sizes = [len(self.layers[0].neurons[0].w)] + [len(layer.neurons) for layer in self.layers]
        return f"MLP({' -> '.join(map(str, sizes))}, {len(self.parameters())} parameters)"
