"""Rank programs of the lab 23 checks (importable, so spawned gloo ranks can run them).

:func:`ddp_train` trains a float64 tanh MLP on the course autograd on one rank's shard of
the batch, averaging gradients with the learner's ``sync(comm, grads, buckets)``; the same
function runs on the simulated world and on real gloo ranks (:func:`ddp_gloo`, where the
learner's function arrives as source text).

The learner's function gets :func:`protocol_only` of the communicator (rank, world_size,
send/recv/isend/irecv, barrier: no counters, no simulated world, no torch handles), and on a
gloo rank :func:`seal_torch_distributed` makes torch.distributed's own collectives and
point-to-point calls raise before its source is defined, so every byte goes through the
counted protocol.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.comm import collectives
from minitorch.comm.protocol import Communicator

__all__ = [
    "CountingComm",
    "ddp_gloo",
    "ddp_train",
    "mlp_data",
    "plain_buckets",
    "protocol_only",
    "seal_torch_distributed",
]

REFERENCE = ("minitorch.parallel.data:ddp_sync", "minitorch.parallel.data:DDP")


class CountingComm:
    """A Communicator that forwards to ``inner`` and counts messages and bytes sent."""

    def __init__(self, inner: Communicator) -> None:
        self.inner, self.messages, self.bytes = inner, 0, 0

    @property
    def rank(self) -> int:
        return self.inner.rank

    @property
    def world_size(self) -> int:
        return self.inner.world_size

    def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
        self.messages += 1
        self.bytes += np.asarray(x).nbytes
        self.inner.send(x, dst, tag)

    def recv(self, src: int, tag: int = 0) -> np.ndarray:
        return self.inner.recv(src, tag)

    def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> Any:
        self.messages += 1
        self.bytes += np.asarray(x).nbytes
        return self.inner.isend(x, dst, tag)

    def irecv(self, src: int, tag: int = 0) -> Any:
        return self.inner.irecv(src, tag)

    def barrier(self) -> None:
        self.inner.barrier()


def protocol_only(comm: Communicator) -> Any:
    """What the learner's function gets: rank, world_size, send/recv/isend/irecv, barrier.

    Nothing else of ``comm`` (its counters, the simulated world, the gloo comm's torch
    handles) is an attribute of the object handed over, so the check's byte counts and the
    other ranks' data stay out of reach.
    """

    class Comm:
        __slots__ = ()
        rank = property(lambda self: comm.rank)
        world_size = property(lambda self: comm.world_size)

        def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
            comm.send(x, dst, tag)

        def recv(self, src: int, tag: int = 0) -> np.ndarray:
            return comm.recv(src, tag)

        def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> Any:
            return comm.isend(x, dst, tag)

        def irecv(self, src: int, tag: int = 0) -> Any:
            return comm.irecv(src, tag)

        def barrier(self) -> None:
            comm.barrier()

        def __repr__(self) -> str:
            return f"<Communicator rank {comm.rank} of {comm.world_size}>"

    return Comm()


_TORCH_CALLS = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "broadcast", "broadcast_object_list", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "gather_object", "scatter", "scatter_object_list",
    "send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list",
    "recv_object_list", "monitored_barrier", "new_group", "new_subgroups",
)  # fmt: skip
_PG_METHODS = (
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "_allgather_base", "alltoall", "alltoall_base",
    "broadcast", "reduce", "reduce_scatter", "reduce_scatter_tensor_coalesced",
    "_reduce_scatter_base", "gather", "scatter", "send", "recv", "recv_anysource",
)  # fmt: skip


def seal_torch_distributed(comm: Any) -> None:
    """On a gloo rank, before the learner's code runs: torch.distributed's own collectives
    and point-to-point calls raise; ``comm`` keeps private handles to the ones it needs."""
    import types

    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    pg = c10d._get_default_group()
    send, recv, barrier = type(pg).send, type(pg).recv, type(pg).barrier  # before the patch
    comm._dist = types.SimpleNamespace(
        isend=lambda t, dst, tag=0: send(pg, [t], dst, tag),
        recv=lambda t, src, tag=0: recv(pg, [t], src, tag).wait(),
        barrier=lambda: barrier(pg).wait(),
    )

    def stub(name: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(
                f"torch.distributed's {name} is not allowed here: move data only with the "
                "communicator's send/recv/isend/irecv (and lab 20's collectives built on them)"
            )

        return refuse

    for name in _TORCH_CALLS:
        for module in (dist, c10d):
            if hasattr(module, name):
                setattr(module, name, stub(f"{name}()"))
    for cls in (dist.ProcessGroup, getattr(dist, "Backend", None)):
        for name in _PG_METHODS:
            if cls is not None and name in vars(cls):
                try:
                    setattr(cls, name, stub(f"{cls.__name__}.{name}()"))
                except (AttributeError, TypeError):  # a class that cannot be patched
                    pass


def plain_buckets(nbytes: Sequence[int], cap: int) -> list[list[int]]:
    """Reverse-order buckets closed once they reach ``cap`` bytes (the grader's own loop)."""
    out: list[list[int]] = [[]]
    size = 0
    for i in range(len(nbytes) - 1, -1, -1):
        out[-1].append(i)
        size += nbytes[i]
        if size >= cap and i > 0:
            out.append([])
            size = 0
    return [b for b in out if b]


def mlp_data(case: dict[str, Any]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Initial weights ``[W0, b0, W1, b1, ...]``, inputs and targets of a case (float64)."""
    gen = np.random.default_rng(case["seed"])
    widths = case["widths"]
    params: list[np.ndarray] = []
    for a, b in itertools.pairwise(widths):
        params += [gen.standard_normal((a, b)) / np.sqrt(a), 0.1 * gen.standard_normal(b)]
    x = gen.standard_normal((case["batch"], widths[0]))
    y = gen.standard_normal((case["batch"], widths[-1]))
    return params, x, y


def ddp_train(comm: Communicator, sync: Callable[..., Any], case: dict[str, Any]) -> dict:
    """Train ``case["steps"]`` SGD steps on this rank's shard; return weights and counts."""
    counting = CountingComm(comm)
    params, x, y = mlp_data(case)
    rows = np.array_split(np.arange(case["batch"]), comm.world_size)[comm.rank]
    xs, ys = x[rows], y[rows]
    buckets = plain_buckets([p.nbytes for p in params], case["bucket_bytes"])
    for _ in range(case["steps"]):
        ts = [Tensor(p.copy(), requires_grad=True) for p in params]
        h = Tensor(xs)
        for k in range(0, len(ts), 2):
            h = h @ ts[k] + ts[k + 1]
            if k + 2 < len(ts):
                h = h.tanh()
        loss = ((h - Tensor(ys)) ** 2).mean()
        loss.backward()
        grads = [np.array(t.grad) for t in ts]
        got = sync(protocol_only(counting), grads, [list(b) for b in buckets])
        params = [
            p - case["lr"] * np.asarray(g, np.float64) for p, g in zip(params, got, strict=True)
        ]
    return {"params": params, "messages": counting.messages, "bytes": counting.bytes}


def ddp_gloo(comm: Communicator, source: str, name: str, cases: list[dict[str, Any]]) -> list:
    """On a gloo rank: define the learner's ``name`` from ``source``, run every case guarded."""
    from minitorch.checks.core import guarded

    namespace: dict[str, Any] = {"np": np, "numpy": np, "__name__": "__a2s_rank__"}
    for n in ("all_reduce", "broadcast", "reduce", "reduce_scatter", "all_gather"):
        namespace[n] = getattr(collectives, n)
    seal_torch_distributed(comm)
    exec(compile(source, f"<{name} on rank {comm.rank}>", "exec"), namespace)
    fn = guarded(namespace[name], "23.2", REFERENCE, forbid=())
    return [ddp_train(comm, fn, case) for case in cases]
