"""Distributed data parallel (DDP): gradient buckets, one all-reduce per bucket, ``no_sync``.

Every rank holds the whole model and a shard of the batch. After backward, the ranks
average their gradients, so each takes the same optimizer step as one process on the whole
batch would (with a mean loss and equal shards). The gradients are packed into *buckets*
of about ``bucket_bytes`` bytes, filled in **reverse** parameter order, because backward
produces the last layer's gradients first; a bucket's all-reduce is launched as soon as
every gradient in it is ready, so communication overlaps the rest of backward (PyTorch's
default bucket is 25 MiB).

DDP registers a post-accumulate-grad hook on every parameter (PyTorch's reducer hooks each
gradient accumulator): inside :meth:`DDP.backward`, the course autograd calls it the moment a
parameter's gradient is complete, and the hook that completes a bucket launches that bucket's
all-reduce right there, while backward goes on with the earlier layers (``launches``
records when).
:func:`ready_order` predicts the same order from the graph alone: backward runs the ops in
reverse topological order and a leaf's gradient is complete once the last op that consumes
it has run. ``no_sync()`` accumulates gradients locally (gradient accumulation) and the next
synchronised backward averages the accumulated sum.

    ddp = DDP(comm, model.parameters(), bucket_bytes=1 << 20)
    ddp.backward(loss)          # local backward + bucketed all-reduce, grads averaged
    opt.step()

Lab: 23_data_parallel_zero
Paper: S. Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel
Training", VLDB 2020 (gradient bucketing, overlap, no_sync).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from minitorch.autograd import Tensor, toposort
from minitorch.comm.collectives import all_reduce, broadcast
from minitorch.comm.protocol import Communicator
from minitorch.runtime.overlap import make_buckets

__all__ = ["DDP", "assign_buckets", "ddp_sync", "ready_order"]

DEFAULT_BUCKET_BYTES = 25 * 2**20  # PyTorch's bucket_cap_mb = 25


def assign_buckets(nbytes: Sequence[int], bucket_bytes: int) -> list[list[int]]:
    """Group parameter indices into buckets, walking from the LAST parameter to the first.

    A parameter joins the open bucket; the bucket closes as soon as its bytes reach
    ``bucket_bytes`` (the parameter that crosses the cap stays in it). ``nbytes[i]`` is the
    size of parameter ``i`` in forward (registration) order.
    """
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be positive, got {bucket_bytes}")
    order = list(reversed(range(len(nbytes))))  # gradients become ready last layer first
    packed = make_buckets([int(nbytes[i]) for i in order], bucket_bytes)  # lab 16's packing
    return [[order[j] for j in bucket] for bucket in packed]


def ready_order(loss: Tensor, params: Sequence[Tensor]) -> list[int]:
    """Indices of ``params`` in the order backward from ``loss`` completes their gradients.

    Backward runs the ops in reverse topological order; a parameter's gradient is complete
    once the LAST op that consumes it has run. Ties (one op, several parameters) go in the
    op's input order, as the hooks fire; parameters ``loss`` does not depend on come last,
    last parameter first (zero gradient).
    """
    index = {id(p): i for i, p in enumerate(params)}
    done: dict[int, tuple[int, int]] = {}
    for step, t in enumerate(reversed(toposort(loss))):
        for k, parent in enumerate(t.node.parents if t.node is not None else ()):
            if id(parent) in index:
                done[index[id(parent)]] = (step, k)
    order = sorted(done, key=lambda i: done[i])
    return order + [i for i in range(len(params) - 1, -1, -1) if i not in done]


def ddp_sync(
    comm: Communicator, grads: Sequence[np.ndarray], buckets: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """Average ``grads`` over the ranks: one flat all-reduce per bucket, in bucket order."""
    out: list[np.ndarray] = [np.asarray(g) for g in grads]
    for bucket in buckets:
        flat = np.concatenate([out[i].ravel() for i in bucket])
        total = all_reduce(comm, flat) / comm.world_size
        start = 0
        for i in bucket:
            stop = start + out[i].size
            out[i] = total[start:stop].reshape(out[i].shape).astype(out[i].dtype)
            start = stop
    return out


class DDP:
    """Data-parallel wrapper of a parameter list: same initial weights, averaged gradients."""

    def __init__(
        self,
        comm: Communicator,
        params: Iterable[Tensor],
        bucket_bytes: int = DEFAULT_BUCKET_BYTES,
        broadcast_params: bool = True,
    ) -> None:
        self.comm, self.params = comm, list(params)
        self.buckets = assign_buckets([p.data.nbytes for p in self.params], bucket_bytes)
        self._bucket_of = {i: b for b, bucket in enumerate(self.buckets) for i in bucket}
        self.sync = True
        self.launches: list[tuple[int, int]] = []  # (bucket, gradients ready at launch)
        self._armed = False  # hooks act only inside a synchronised DDP.backward
        self._ready: set[int] = set()
        self._missing: list[int] = []
        self._handles = [
            p.register_post_accumulate_grad_hook(functools.partial(self._on_ready, i))
            for i, p in enumerate(self.params)
            if p.requires_grad
        ]
        if broadcast_params and comm.world_size > 1:  # every rank starts from rank 0's weights
            for p in self.params:
                p.data[...] = broadcast(comm, p.data if comm.rank == 0 else None, root=0)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside: backward accumulates local gradients and communicates nothing."""
        before, self.sync = self.sync, False
        try:
            yield
        finally:
            self.sync = before

    def backward(self, loss: Tensor) -> None:
        """Local backward; unless in ``no_sync``, each bucket's all-reduce launched from the
        hook of its last gradient, during backward."""
        if not self.sync:
            loss.backward()
            return
        self.launches, self._ready = [], set()
        self._missing = [len(b) for b in self.buckets]
        self._armed = True
        try:
            loss.backward()
        finally:
            self._armed = False
        for i in range(len(self.params) - 1, -1, -1):  # not reached by backward: zero grads
            if i not in self._ready:
                self._mark_ready(i)

    def remove_hooks(self) -> None:
        """Unregister the gradient hooks (the parameters outlive this wrapper)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _on_ready(self, i: int, param: Tensor) -> None:
        if self._armed and i not in self._ready:
            self._mark_ready(i)

    def _mark_ready(self, i: int) -> None:
        self._ready.add(i)
        b = self._bucket_of[i]
        self._missing[b] -= 1
        if self._missing[b] == 0:  # every gradient of bucket b is ready: launch its all-reduce
            self.launches.append((b, len(self._ready)))
            self._all_reduce_bucket(b)

    def _all_reduce_bucket(self, b: int) -> None:
        grads = [self._grad(i) for i in self.buckets[b]]
        synced = ddp_sync(self.comm, grads, [list(range(len(grads)))])
        for i, g in zip(self.buckets[b], synced, strict=True):
            self.params[i].grad = g

    def _grad(self, i: int) -> np.ndarray:
        p = self.params[i]
        return p.grad if p.grad is not None else np.zeros_like(p.data)
