"""Torch twins of the course's models: the same weights in torch, to get ground truth from.

* :func:`torch_mlp`: a float64 ``torch.nn.Sequential`` copy of a ``minitorch.nn`` stack of
  Linear / ReLU / Tanh layers (lab 04's MLP).
* :class:`ScalarMLPTwin`: lab 02's scalar ``MLP`` (lists of ``Value`` neurons) as float64
  weight matrices, with its forward pass and its parameters in the model's order.
* :func:`torch_named_parameters`: a ``minitorch.nn.Module`` tree mirrored as a
  ``torch.nn.Module`` tree (same names, order and sharing), asked for ``named_parameters()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from minitorch.nn import Linear, Module, Parameter, ReLU, Sequential, Tanh

__all__ = ["ScalarMLPTwin", "torch_mlp", "torch_named_parameters"]


def torch_mlp(model: Sequential) -> torch.nn.Sequential:
    """A float64 torch copy of a minitorch Linear/ReLU/Tanh stack with the same weights."""
    layers: list[torch.nn.Module] = []
    for m in model:  # a Sequential iterates its modules
        if isinstance(m, Linear):
            t = torch.nn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
            with torch.no_grad():
                t.weight.copy_(torch.from_numpy(m.weight.data.astype(np.float64)))
                if m.bias is not None:
                    t.bias.copy_(torch.from_numpy(m.bias.data.astype(np.float64)))
            layers.append(t.double())
        elif isinstance(m, (ReLU, Tanh)):
            layers.append(torch.nn.ReLU() if isinstance(m, ReLU) else torch.nn.Tanh())
        else:
            raise TypeError(f"no torch twin for {type(m).__name__}")
    return torch.nn.Sequential(*layers)


@dataclass(slots=True)
class ScalarMLPTwin:
    """Lab 02's scalar MLP as float64 leaves: (W: (n_out, n_in), b: (n_out,)) per layer."""

    layers: list[tuple[torch.Tensor, torch.Tensor]]

    @classmethod
    def of(cls, model: Any) -> ScalarMLPTwin:
        """Copy the weights of a ``minitorch.autograd.scalar_nn.MLP`` (tanh hidden layers)."""
        layers = []
        for layer in model.layers:
            w = [[wi.data for wi in n.w] for n in layer.neurons]
            b = [n.b.data for n in layer.neurons]
            leaf = lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True)  # noqa: E731
            layers.append((leaf(w), leaf(b)))
        return cls(layers)

    def parameters(self) -> list[torch.Tensor]:
        return [t for pair in self.layers for t in pair]

    def scores(self, x: np.ndarray) -> torch.Tensor:
        """x: (n, n_in) -> (n,) the single output unit's score."""
        h = torch.as_tensor(x, dtype=torch.float64)
        for k, (w, b) in enumerate(self.layers):
            h = h @ w.T + b  # (n, n_out)
            if k < len(self.layers) - 1:
                h = torch.tanh(h)
        return h[:, 0]

    def flat(self) -> np.ndarray:
        """Every weight, in ``model.parameters()`` order (each neuron's w, then its b)."""
        rows = [torch.cat([w, b[:, None]], 1).detach().numpy().ravel() for w, b in self.layers]
        return np.concatenate(rows)


def torch_named_parameters(model: Module) -> list[tuple[str, Parameter]]:
    """Mirror the tree in torch and ask torch for the names; map back to our Parameters."""
    modules: dict[int, torch.nn.Module] = {}
    params: dict[int, torch.nn.Parameter] = {}
    ours: dict[int, Parameter] = {}

    def mirror(m: Module) -> torch.nn.Module:
        if id(m) in modules:  # a shared sub-module is one torch module
            return modules[id(m)]
        t = modules[id(m)] = torch.nn.Module()
        for name, p in m._parameters.items():
            if id(p) not in params:  # a tied weight is one torch Parameter
                params[id(p)] = torch.nn.Parameter(torch.zeros(1))
                ours[id(params[id(p)])] = p
            t.register_parameter(name, params[id(p)])
        for name, child in m._modules.items():
            t.add_module(name, mirror(child))
        return t

    return [(name, ours[id(tp)]) for name, tp in mirror(model).named_parameters()]
