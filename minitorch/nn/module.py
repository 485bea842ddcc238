"""``Module`` and ``Parameter``: a tree of layers that knows its own weights.

Assigning a :class:`Parameter` or a :class:`Module` to an attribute registers it, so
``parameters()`` and ``state_dict()`` find every weight by walking the tree, with dotted
names like torch's (``"layers.0.weight"``). Buffers (running statistics) are arrays that
belong in the state dict but get no gradient.

    class Affine(Module):
        def __init__(self, n):
            super().__init__()
            self.scale = Parameter(np.ones(n, np.float32))
        def forward(self, x):
            return x * self.scale

Lab: 04_training_loop
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from minitorch.autograd import Tensor

__all__ = ["Module", "Parameter"]


class Parameter(Tensor):
    """A leaf tensor that is a trainable weight (``requires_grad=True``)."""

    __slots__ = ()

    def __init__(self, data: Any) -> None:
        super().__init__(data, requires_grad=True)

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype})"


class Module:
    """Base class of layers: registers parameters, sub-modules and buffers on assignment."""

    training: bool
    _parameters: dict[str, Parameter]
    _modules: dict[str, Module]
    _buffers: dict[str, np.ndarray]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"call super().__init__() in {type(self).__name__}.__init__")
        was_buffer = self._buffers.pop(name, None) is not None
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif was_buffer and isinstance(value, np.ndarray):
            self._buffers[name] = value  # reassigning a buffer keeps it a buffer
        object.__setattr__(self, name, value)

    def register_buffer(self, name: str, value: np.ndarray) -> None:
        """Keep ``value`` in the state dict without training it (e.g. running mean)."""
        self.__setattr__(name, value)  # drops any parameter or module of that name
        self._buffers[name] = value

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ the tree
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first, with dotted names."""
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}{name}.")

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for prefix, m in self.named_modules():
            for name, p in m._parameters.items():
                if id(p) not in seen:  # a shared (tied) weight is listed once
                    seen.add(id(p))
                    yield prefix + name, p

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def named_buffers(self) -> Iterator[tuple[str, np.ndarray]]:
        for prefix, m in self.named_modules():
            for name in m._buffers:
                yield prefix + name, getattr(m, name)

    def children(self) -> list[Module]:
        return list(self._modules.values())

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every parameter and buffer, keyed by dotted name."""
        state = {name: p.data.copy() for name, p in self.named_parameters()}
        state.update({name: np.array(b, copy=True) for name, b in self.named_buffers()})
        return state

    def load_state_dict(self, state: dict[str, np.ndarray], strict: bool = True) -> None:
        """Copy arrays into the existing parameters and buffers, in place (shapes must match)."""
        targets = {name: p.data for name, p in self.named_parameters()}
        targets.update(dict(self.named_buffers()))
        missing, unexpected = targets.keys() - state.keys(), state.keys() - targets.keys()
        if strict and (missing or unexpected):
            raise KeyError(f"missing keys {sorted(missing)}, unexpected keys {sorted(unexpected)}")
        for name in targets.keys() & state.keys():
            value = np.asarray(state[name])
            if value.shape != targets[name].shape:
                raise ValueError(f"{name}: shape {value.shape} != {targets[name].shape}")
            targets[name][...] = value

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and all descendants (dropout, batch norm)."""
        for _, m in self.named_modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def __repr__(self) -> str:
        lines = [
            f"  ({name}): {child!r}".replace("\n", "\n  ") for name, child in self._modules.items()
        ]
        return f"{type(self).__name__}(" + ("\n" + "\n".join(lines) + "\n" if lines else "") + ")"
