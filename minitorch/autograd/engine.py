"""The graph and the reverse-mode engine behind :class:`~minitorch.autograd.tensor.Tensor`.

Contract:

1. A differentiable op returns a tensor whose ``node`` records the op name, the parent
   tensors and whatever its backward rule needs (``saved``: arrays, axes, flags).
2. Backward rules live in one table, ``BACKWARD_RULES``, keyed by op name. A rule maps
   ``(node, dL/dout)`` to one gradient per parent (``None`` where a parent needs none).
3. A rule may return a gradient in the *broadcast* shape; the engine sums it back to the
   parent's shape with :func:`unbroadcast`, the adjoint of numpy broadcasting.
4. :func:`backward` orders the graph with an iterative depth-first search (no recursion
   limit) and walks it once in reverse, adding up each tensor's gradient before using it.
5. Nodes hold parents and saved arrays, never their own output nor a closure over it, so a
   graph has no reference cycles: reference counting frees it as soon as the last output
   dies, and the cyclic garbage collector never has to walk it.
6. A leaf may carry *post-accumulate hooks* (``Tensor.register_post_accumulate_grad_hook``,
   as in torch): the engine counts each hooked leaf's consumers in the graph and calls its
   hooks with the leaf as soon as the last one has added its gradient, once per backward,
   with ``.grad`` final. Without hooks nothing changes (DDP launches all-reduces this way).

A lab replaces one rule with :func:`override_rule` (``with override_rule("tanh", mine):``);
rules are looked up when backward runs, so graphs built earlier use the replacement too.

Lab: 03_autograd_tensor
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from minitorch.autograd.tensor import Tensor

__all__ = [
    "BACKWARD_RULES",
    "BackwardRule",
    "Node",
    "RemovableHandle",
    "backward",
    "backward_rule",
    "enable_grad",
    "is_grad_enabled",
    "no_grad",
    "override_rule",
    "toposort",
    "unbroadcast",
]

Grads = tuple["np.ndarray | None", ...]
BackwardRule = Callable[["Node", np.ndarray], Grads]
BACKWARD_RULES: dict[str, BackwardRule] = {}  # op name -> rule; filled when ops modules import

_HOOK_KEYS = itertools.count()  # one key per registered hook, so a handle removes only its own
_GRAD_ENABLED: ContextVar[bool] = ContextVar("minitorch_grad_enabled", default=True)


class Node:
    """How a tensor was made: ``op`` applied to ``parents``, plus what backward needs."""

    __slots__ = ("op", "parents", "saved")

    def __init__(self, op: str, parents: tuple[Tensor, ...], saved: tuple[Any, ...]) -> None:
        self.op = op
        self.parents = parents
        self.saved = saved

    def __repr__(self) -> str:
        return f"Node({self.op}, {len(self.parents)} parents)"


def backward_rule(op: str) -> Callable[[BackwardRule], BackwardRule]:
    """Register ``fn`` as the backward rule of ``op`` in :data:`BACKWARD_RULES`."""

    def register(fn: BackwardRule) -> BackwardRule:
        BACKWARD_RULES[op] = fn
        return fn

    return register


@contextmanager
def override_rule(op: str, rule: BackwardRule) -> Iterator[None]:
    """Use ``rule`` as the backward of ``op`` inside the block (a lab's exercise hook)."""
    old = BACKWARD_RULES[op]
    BACKWARD_RULES[op] = rule
    try:
        yield
    finally:
        BACKWARD_RULES[op] = old


def is_grad_enabled() -> bool:
    """Whether new ops record a graph (False inside :func:`no_grad`)."""
    return _GRAD_ENABLED.get()


@contextmanager
def _grad_mode(enabled: bool) -> Iterator[None]:
    token = _GRAD_ENABLED.set(enabled)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


def no_grad() -> AbstractContextManager[None]:
    """Context manager: ops inside it build no graph (inference, optimizer updates)."""
    return _grad_mode(False)


def enable_grad() -> AbstractContextManager[None]:
    """Context manager: record a graph again, e.g. to recompute a checkpointed segment."""
    return _grad_mode(True)


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` down to ``shape``: the adjoint of broadcasting ``shape`` up to grad's.

    Broadcasting copies x along new leading axes and along its size-1 axes, so
    dL/dx = sum of dL/dy over exactly those axes (keeping the size-1 ones).
    """
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))  # drop the leading axes x did not have
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)  # size-1 axes that were stretched
    if grad.shape != shape:
        raise ValueError(f"gradient of shape {grad.shape} does not reduce to {shape}")
    return np.asarray(grad)


def toposort(root: Tensor) -> list[Tensor]:
    """Return the tensors ``root`` depends on (that want grads), parents before children.

    Iterative post-order depth-first search: a tensor is emitted once all its parents have
    been, so a 100,000-op chain needs no Python recursion.
    """
    order: list[Tensor] = []
    visited: set[int] = set()
    stack: list[tuple[Tensor, bool]] = [(root, False)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in visited:
            continue
        visited.add(id(t))
        stack.append((t, True))
        if t.node is not None:
            for p in t.node.parents:
                if p.requires_grad and id(p) not in visited:
                    stack.append((p, False))
    return order


def backward(root: Tensor, grad: np.ndarray) -> None:
    """Accumulate d(root)/d(leaf), seeded with ``grad``, into every leaf's ``.grad``.

    Reverse topological order guarantees a tensor's gradient is complete (all its
    consumers have contributed) before its own rule pushes it to its parents.
    """
    order = toposort(root)
    pending = _hooked_leaves(order)  # hooked leaf -> consumers still to run; usually empty
    grads: dict[int, np.ndarray] = {id(root): grad}
    for t in reversed(order):
        g = grads.pop(id(t), None)
        node = t.node
        if g is None:
            if pending and node is not None:  # skipped, but its parents lose a consumer
                _release(node.parents, pending, grads)
            continue
        if node is None or t.retains_grad:
            _accumulate(t, g)
            if node is None and id(t) in pending:  # the root itself is a hooked leaf
                _run_hooks(t)
        if node is None:
            continue
        for p, pg in zip(node.parents, BACKWARD_RULES[node.op](node, g), strict=True):
            if pg is None or not p.requires_grad:
                continue
            if pg.shape != p.data.shape:
                pg = unbroadcast(pg, p.data.shape)
            prev = grads.get(id(p))
            grads[id(p)] = pg if prev is None else prev + pg
        if pending:
            _release(node.parents, pending, grads)


def _accumulate(t: Tensor, g: np.ndarray) -> None:
    # a fresh array in the tensor's dtype: a rule may hand the same array to two parents
    dtype = t.data.dtype
    t.grad = np.array(g, dtype=dtype) if t.grad is None else (t.grad + g).astype(dtype, copy=False)


# ---------------------------------------------------------------- post-accumulate grad hooks
def _hooked_leaves(order: list[Tensor]) -> dict[int, int]:
    """{id(leaf): number of op inputs that are this leaf} for the leaves with hooks."""
    pending = {id(t): 0 for t in order if t.node is None and t._post_hooks}
    if pending:
        for t in order:
            for p in t.node.parents if t.node is not None else ():
                if id(p) in pending:
                    pending[id(p)] += 1
    return pending


def _release(parents: tuple[Tensor, ...], pending: dict[int, int], grads: dict) -> None:
    """One consumer of each hooked parent has run; the last one completes its gradient."""
    for p in parents:
        left = pending.get(id(p))
        if left is None:
            continue
        pending[id(p)] = left - 1
        if left == 1:
            g = grads.pop(id(p), None)
            if g is not None:  # no gradient at all reached it: no hook, as in torch
                _accumulate(p, g)
                _run_hooks(p)


def _run_hooks(t: Tensor) -> None:
    for hook in list((t._post_hooks or {}).values()):
        hook(t)


class RemovableHandle:
    """What ``register_post_accumulate_grad_hook`` returns: ``.remove()`` unregisters."""

    __slots__ = ("_hooks", "key")

    def __init__(self, hooks: dict[int, Callable[[Tensor], None]]) -> None:
        self._hooks: dict[int, Callable[[Tensor], None]] | None = hooks
        self.key = next(_HOOK_KEYS)

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        if self._hooks is not None:
            self._hooks.pop(self.key, None)
            self._hooks = None
