"""A numpy-backed tensor with reverse-mode autograd.

A :class:`Tensor` wraps one ``np.ndarray`` (``data``), an optional gradient (``grad``, an
array of the same shape, filled by :meth:`Tensor.backward`) and, if an op made it, a
:class:`~minitorch.autograd.engine.Node`. Every op is a plain function in one of the
``ops_*`` modules: forward in numpy, then :func:`make` records the node; its backward is
a rule in ``BACKWARD_RULES``. The methods here are one-line shortcuts to those functions.

    x = Tensor(np.ones((2, 3)), requires_grad=True)
    (x * x).sum().backward()          # x.grad == 2 * x.data

Gradients are plain arrays; treat them as values (replace, do not mutate in place).

Lab: 03_autograd_tensor
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitorch.autograd.engine import _GRAD_ENABLED, Node, RemovableHandle, backward

__all__ = ["Tensor", "as_tensor", "make"]

Axis = int | tuple[int, ...] | None


class Tensor:
    """An n-d array that remembers how it was computed."""

    __slots__ = (
        "__weakref__",
        "_post_hooks",
        "data",
        "grad",
        "node",
        "requires_grad",
        "retains_grad",
    )

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        if isinstance(data, Tensor):
            data = data.data
        elif not isinstance(data, np.ndarray):
            data = np.asarray(data)
            if dtype is None and data.dtype == np.float64:
                dtype = np.float32  # python floats become float32, as in torch
        self.data: np.ndarray = data if dtype is None else data.astype(dtype, copy=False)
        self.grad: np.ndarray | None = None
        self.requires_grad = requires_grad
        self.retains_grad = False
        self.node: Node | None = None
        self._post_hooks: dict[int, Callable[[Tensor], None]] | None = None

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def T(self) -> Tensor:
        return _shape.permute(self, tuple(reversed(range(self.ndim))))

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        grad = f", op={self.node.op}" if self.node else ""
        return f"Tensor({self.data!r}, requires_grad={self.requires_grad}{grad})"

    def item(self) -> float:
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return self.data

    def detach(self) -> Tensor:
        """The same data, cut from the graph."""
        return Tensor(self.data)

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward."""
        self.retains_grad = True

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(self)`` in each backward once this leaf's ``.grad`` is complete.

        As torch's: leaves only, once per backward however often the leaf is used, after
        its last contribution is added (DDP launches a bucket's all-reduce from here).
        """
        if self.node is not None:
            raise RuntimeError("post-accumulate grad hooks are for leaf tensors, not non-leaf ones")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_hooks is None:
            self._post_hooks = {}
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.key] = hook
        return handle

    def backward(self, grad: np.ndarray | Tensor | None = None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (seed 1 for a scalar)."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError("grad can be implicit only for a one-element output")
            grad = np.ones_like(self.data)
        grad = grad.data if isinstance(grad, Tensor) else grad
        backward(self, np.asarray(grad, dtype=self.data.dtype).reshape(self.data.shape))

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, o: Any) -> Tensor:
        return _ew.add(self, o)

    def __radd__(self, o: Any) -> Tensor:
        return _ew.add(o, self)

    def __sub__(self, o: Any) -> Tensor:
        return _ew.sub(self, o)

    def __rsub__(self, o: Any) -> Tensor:
        return _ew.sub(o, self)

    def __mul__(self, o: Any) -> Tensor:
        return _ew.mul(self, o)

    def __rmul__(self, o: Any) -> Tensor:
        return _ew.mul(o, self)

    def __truediv__(self, o: Any) -> Tensor:
        return _ew.div(self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        return _ew.div(o, self)

    def __neg__(self) -> Tensor:
        return _ew.neg(self)

    def __pow__(self, o: Any) -> Tensor:
        return _ew.pow(self, o)

    def __rpow__(self, o: Any) -> Tensor:
        return _ew.pow(o, self)

    def __matmul__(self, o: Tensor) -> Tensor:
        return _mm.matmul(self, o)

    def __getitem__(self, index: Any) -> Tensor:
        return _shape.getitem(self, index)

    def exp(self) -> Tensor:
        return _ew.exp(self)

    def log(self) -> Tensor:
        return _ew.log(self)

    def tanh(self) -> Tensor:
        return _ew.tanh(self)

    def sigmoid(self) -> Tensor:
        return _ew.sigmoid(self)

    def relu(self) -> Tensor:
        return _ew.relu(self)

    # ------------------------------------------------------------------ reductions, shape
    def sum(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red.sum(self, axis, keepdims)

    def mean(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red.mean(self, axis, keepdims)

    def max(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red.max(self, axis, keepdims)

    def reshape(self, *shape: Any) -> Tensor:
        return _shape.reshape(self, shape[0] if len(shape) == 1 else shape)

    def permute(self, *dims: Any) -> Tensor:
        return _shape.permute(self, dims[0] if len(dims) == 1 else dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        return _shape.transpose(self, dim0, dim1)

    def flatten(self, start_dim: int = 0) -> Tensor:
        return _shape.flatten(self, start_dim)


def make(op: str, data: np.ndarray, parents: tuple[Tensor, ...], *saved: Any) -> Tensor:
    """Wrap ``data`` as the output of ``op``; record a node if any parent wants a grad."""
    out = Tensor.__new__(Tensor)
    out.data = data
    out.grad = None
    out.retains_grad = False
    out.node = None
    out.requires_grad = False
    out._post_hooks = None
    if _GRAD_ENABLED.get():
        for p in parents:
            if p.requires_grad:
                out.node = Node(op, parents, saved)
                out.requires_grad = True
                break
    return out


def as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """``x`` if it is a Tensor, else a constant in ``like``'s dtype (no float64 upcasts)."""
    if isinstance(x, Tensor):
        return x
    return Tensor(np.asarray(x, dtype=like.data.dtype if like is not None else None))


# the ops modules import Tensor from here, so they are bound after the class exists
from minitorch.autograd import ops_elementwise as _ew  # noqa: E402
from minitorch.autograd import ops_matmul as _mm  # noqa: E402
from minitorch.autograd import ops_reduce as _red  # noqa: E402
from minitorch.autograd import ops_shape as _shape  # noqa: E402
