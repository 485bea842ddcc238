"""Activation recomputation (gradient checkpointing) and the bytes a tape holds.

Backward needs what forward saved, so a plain tape keeps O(n) activations for n layers.
A checkpointed segment runs forward without recording, keeps only its inputs, and on
backward runs the segment again *with* recording, then backpropagates through that fresh
local graph. Splitting n layers into sqrt(n) segments keeps O(sqrt(n)) activations for
the price of one extra forward.

    checkpoint(f, x):   forward  y = f(x) under no_grad, save (f, x)
                        backward y' = f(x) recorded; y'.backward(g); return dL/dx

Parameters used inside ``f`` are leaves of the recomputed graph, so their ``.grad`` fills
during the inner backward. ``f`` must be deterministic: give dropout an explicit seed,
and note that batch norm in training mode updates its running statistics twice.

Lab: 04_training_loop
Paper: Chen, Xu, Zhang & Guestrin 2016, "Training Deep Nets with Sublinear Memory Cost"
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextvars import ContextVar

import numpy as np

from minitorch.autograd.engine import (
    Node,
    backward_rule,
    enable_grad,
    is_grad_enabled,
    no_grad,
    toposort,
)
from minitorch.autograd.tensor import Tensor

__all__ = ["backward_peak_bytes", "checkpoint", "checkpoint_sequential", "tape_bytes"]

Grads = tuple[np.ndarray | None, ...]
# [bytes of the recomputed segments alive now, the most ever alive]; set by backward_peak_bytes
_RECOMPUTED: ContextVar[list[int] | None] = ContextVar("minitorch_recomputed", default=None)


def checkpoint(fn: Callable[..., Tensor], *inputs: Tensor) -> Tensor:
    """``fn(*inputs)`` whose inner activations are dropped now and recomputed in backward."""
    with no_grad():
        out = fn(*inputs)
    if not is_grad_enabled():
        return out
    # a node even when no input wants a grad: parameters inside fn may
    result = Tensor(out.data, requires_grad=True)
    result.node = Node("checkpoint", tuple(inputs), (fn,))
    return result


@backward_rule("checkpoint")
def checkpoint_backward(node: Node, g: np.ndarray) -> Grads:
    (fn,) = node.saved
    fresh = [Tensor(p.data, requires_grad=p.requires_grad) for p in node.parents]
    with enable_grad():
        out = fn(*fresh)  # the recomputation: the segment's graph exists only from here...
    live = _RECOMPUTED.get()
    extra = tape_bytes(out) if live is not None else 0
    if live is not None:
        live[0] += extra
        live[1] = max(live[1], live[0])
    if out.requires_grad:
        out.backward(g)  # ...to here, and is freed when ``out`` goes
    if live is not None:
        live[0] -= extra
    return tuple(t.grad for t in fresh)


def _run_all(fns: Sequence[Callable[[Tensor], Tensor]], x: Tensor) -> Tensor:
    for f in fns:
        x = f(x)
    return x


def checkpoint_sequential(
    fns: Sequence[Callable[[Tensor], Tensor]], segments: int, x: Tensor
) -> Tensor:
    """Run ``fns`` in order, checkpointing all but the last of ``segments`` equal chunks.

    The last chunk runs normally, as in torch: its activations are needed right away.
    """
    fns = list(fns)
    size = -(-len(fns) // segments)  # ceil
    chunks = [fns[i : i + size] for i in range(0, len(fns), size)]
    for chunk in chunks[:-1]:
        x = checkpoint(functools.partial(_run_all, chunk), x)
    return _run_all(chunks[-1], x)


def _owner(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory (views share their base's bytes)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def tape_bytes(out: Tensor) -> int:
    """Bytes the graph behind ``out`` keeps alive: non-leaf outputs and saved arrays.

    Leaves (parameters, inputs) are excluded: they exist with or without a tape. Views
    are counted once, by the buffer that owns their memory.
    """
    graph = toposort(out)
    leaves = {id(_owner(t.data)) for t in graph if t.node is None}
    buffers: dict[int, int] = {}
    for t in graph:
        if t.node is None:
            continue
        for a in (t.data, *(s for s in t.node.saved if isinstance(s, np.ndarray))):
            owner = _owner(a)
            if id(owner) not in leaves:
                buffers[id(owner)] = owner.nbytes
    return sum(buffers.values())


def backward_peak_bytes(loss: Tensor) -> int:
    """Run ``loss.backward()``; return the most activation bytes alive at any point of it.

    That is the tape kept by forward (:func:`tape_bytes`) plus the largest set of segments
    being recomputed at once (one, unless checkpoints are nested). Gradients are not counted.
    Checkpointing everything as one segment keeps a tiny tape but rebuilds all of it here.
    """
    held = tape_bytes(loss)
    live = [0, 0]
    token = _RECOMPUTED.set(live)
    try:
        loss.backward()
    finally:
        _RECOMPUTED.reset(token)
    return held + live[1]
