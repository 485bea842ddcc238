"""Rank programs of the lab 23 checks (importable, so spawned gloo ranks can run them).

:func:`ddp_train` trains a float64 tanh MLP on the course autograd on one rank's shard of
the batch, averaging gradients with the learner's ``sync(comm, grads, buckets)``; the same
function runs on the simulated world and on real gloo ranks (:func:`ddp_gloo`, where the
learner's function arrives as source text).

The learner's function gets :func:`~minitorch.checks.ranks.protocol_only` of the counting
communicator (rank, world_size, send/recv/isend/irecv, barrier: no counters, no simulated
world, no torch handles), and on a gloo rank
:func:`~minitorch.checks.ranks.sealed_torch_distributed` makes torch.distributed's own
collectives and point-to-point calls raise while its source is defined and run, so every
byte goes through the counted protocol.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.checks.ranks import CountingComm, protocol_only, sealed_torch_distributed
from minitorch.comm import collectives
from minitorch.comm.protocol import Communicator

__all__ = [
    "ddp_gloo",
    "ddp_train",
    "mlp_data",
    "plain_buckets",
]

_HINT = " (and lab 20's collectives built on them)"
REFERENCE = ("minitorch.parallel.data:ddp_sync", "minitorch.parallel.data:DDP")


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
    with sealed_torch_distributed(comm, _HINT):
        exec(compile(source, f"<{name} on rank {comm.rank}>", "exec"), namespace)
        fn = guarded(namespace[name], "23.2", REFERENCE, forbid=())
        return [ddp_train(comm, fn, case) for case in cases]
