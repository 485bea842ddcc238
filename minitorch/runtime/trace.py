"""An allocation trace of a training step of the tiny GPT, and its live-bytes lower bound.

A trace is a list of events ``(op, id, nbytes)`` with ``op`` "alloc" or "free": what a
framework's tensors ask of the allocator, in order. It is derived from one real forward pass of
:class:`minitorch.model.gpt.GPT` (the byte sizes are those of the tensors the course autograd
builds) by the lifetimes an eager framework gives them:

* the weights are allocated first and live throughout;
* forward: each op's output is allocated in graph order (views allocate nothing); an output
  that no backward rule saved is freed right after its last consumer ran;
* backward, in reverse graph order: processing a tensor allocates the gradient of each parent
  that has none yet, then frees its own gradient and, if it was saved for backward, its data;
* parameter gradients live until the next step's ``zero_grad`` (set to none); the optimizer's
  two Adam moments per parameter are allocated at the first step and live throughout.

The trace repeats this for ``steps`` training steps; the shape of the graph, hence the trace,
is the same every step. ``lower_bound`` is the peak of the bytes live at once: no allocator can
reserve less.

Lab: 17_caching_allocator
Paper: Paszke et al., "PyTorch: An Imperative Style, High-Performance Deep Learning Library",
NeurIPS 2019 (eager lifetimes, the caching allocator); Kingma and Ba 2015 (Adam's two moments)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from minitorch.autograd.engine import toposort
from minitorch.autograd.tensor import Tensor
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT

__all__ = [
    "TRACE_CONFIG",
    "Allocator",
    "Event",
    "live_bytes",
    "lower_bound",
    "replay",
    "training_step_trace",
]

Event = tuple[str, int, int]  # ("alloc" | "free", id, nbytes)

TRACE_CONFIG = GPTConfig(
    vocab_size=16, block_size=64, n_layer=2, n_head=4, n_kv_head=4, d_model=128
)


class Allocator(Protocol):
    """What :func:`replay` drives: the allocators of :mod:`minitorch.runtime.allocator`."""

    def malloc(self, nbytes: int) -> int: ...
    def free(self, addr: int) -> None: ...
    def stats(self) -> dict[str, float]: ...


class _Recorder:
    """Hands out ids and writes the events."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.count = 0

    def alloc(self, nbytes: int) -> int:
        self.count += 1
        self.events.append(("alloc", self.count, int(nbytes)))
        return self.count

    def free(self, ident: int, nbytes: int) -> None:
        self.events.append(("free", ident, int(nbytes)))


def _owns(t: Tensor) -> bool:
    return t.data.base is None and t.data.nbytes > 0


def _step(rec: _Recorder, graph: list[Tensor], params: Sequence[Tensor]) -> dict[int, int]:
    """One forward and backward; returns the parameter gradients' ids (still live)."""
    pos = {id(t): k for k, t in enumerate(graph)}
    saved = {
        id(a.base if a.base is not None else a)
        for t in graph
        if t.node is not None
        for a in t.node.saved
        if isinstance(a, np.ndarray)
    }
    last_use = {id(t): pos[id(t)] for t in graph}
    for t in graph:
        for p in t.node.parents if t.node is not None else ():
            if id(p) in last_use:
                last_use[id(p)] = max(last_use[id(p)], pos[id(t)])
    data: dict[int, int] = {}
    keep = {id(p) for p in params}
    for k, t in enumerate(graph):  # forward
        if t.node is None or not _owns(t):
            continue
        data[id(t)] = rec.alloc(t.data.nbytes)
        done = [
            u
            for u in graph[:k]
            if id(u) in data and id(u) not in saved and id(u) not in keep and last_use[id(u)] == k
        ]
        for u in done:
            rec.free(data.pop(id(u)), u.data.nbytes)
    grads: dict[int, int] = {id(graph[-1]): rec.alloc(graph[-1].data.nbytes)}
    for t in reversed(graph):  # backward
        for p in t.node.parents if t.node is not None else ():
            if id(p) in pos and id(p) not in grads:
                grads[id(p)] = rec.alloc(p.data.nbytes)
        if id(t) not in keep:
            rec.free(grads.pop(id(t)), t.data.nbytes)
            if id(t) in data:
                rec.free(data.pop(id(t)), t.data.nbytes)
    return {id(p): grads[id(p)] for p in params if id(p) in grads}


def training_step_trace(
    steps: int = 2, batch: int = 8, config: GPTConfig = TRACE_CONFIG, seed: int = 0
) -> list[Event]:
    """The allocation trace of ``steps`` Adam steps of a tiny GPT on a ``batch`` of sequences."""
    model = GPT(config, seed=seed)
    params = list(model.parameters())
    g = np.random.default_rng(seed)
    ids = g.integers(0, config.vocab_size, (batch, config.block_size))
    graph = toposort(model.loss(ids, np.roll(ids, -1, axis=1)))
    rec = _Recorder()
    weights = [rec.alloc(p.data.nbytes) for p in params]
    moments: list[int] = []
    grads: dict[int, int] = {}
    for _ in range(steps):
        for p in params:  # zero_grad(set_to_none=True)
            if id(p) in grads:
                rec.free(grads.pop(id(p)), p.data.nbytes)
        grads = _step(rec, graph, params)
        if not moments:
            moments = [rec.alloc(p.data.nbytes) for p in params for _ in range(2)]
    for p in params:
        if id(p) in grads:
            rec.free(grads.pop(id(p)), p.data.nbytes)
    sizes = [p.data.nbytes for p in params]
    rec.events += [("free", m, sizes[k // 2]) for k, m in enumerate(moments)]
    rec.events += [("free", w, s) for w, s in zip(weights, sizes, strict=True)]
    return rec.events


def live_bytes(trace: list[Event]) -> np.ndarray:
    """Bytes live after each event (requested sizes, not rounded)."""
    return np.cumsum([n if op == "alloc" else -n for op, _, n in trace])


def lower_bound(trace: list[Event]) -> int:
    """The most bytes live at once: a lower bound on any allocator's reserved peak."""
    return int(live_bytes(trace).max(initial=0))


def replay(trace: list[Event], allocator: Allocator) -> dict[str, np.ndarray]:
    """Run ``trace`` on ``allocator``: allocated, reserved, device allocations after each event."""
    addr: dict[int, int] = {}
    cols: dict[str, list[float]] = {"allocated": [], "reserved": [], "device_allocs": []}
    for op, ident, nbytes in trace:
        if op == "alloc":
            addr[ident] = allocator.malloc(nbytes)
        else:
            allocator.free(addr.pop(ident))
        stats = allocator.stats()
        for key, col in cols.items():
            col.append(stats[key])
    return {k: np.asarray(v) for k, v in cols.items()} | {"live": live_bytes(trace)}
