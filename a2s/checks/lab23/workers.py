"""Rank programs of the lab 23 checks (importable, so spawned gloo ranks can run them).

:func:`ddp_train` trains a float64 tanh MLP on the course autograd on one rank's shard of
the batch, averaging gradients with the learner's ``sync(comm, grads, buckets)``; the same
function runs on the simulated world and on real gloo ranks (:func:`ddp_gloo`, where the
learner's function arrives as source text).

On the simulated world each rank is its own forked process (``harness.run_ranks``: the
router counts); on a gloo rank each call of the learner's function runs in a sealed forked
child of the rank (:func:`~a2s.checks.ranks.on_gloo_rank`, lab 21's seal: torch is a
forbidden call with the kernel's message, frames, gc, sockets and files are refused), and
the rank's process counts its messages.
"""

from __future__ import annotations

import itertools
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.ranks import LEARNER, on_gloo_rank
from minitorch.autograd import Tensor
from minitorch.comm import collectives
from minitorch.comm.protocol import Communicator
from minitorch.comm.torchdist import TorchDistComm

__all__ = [
    "ddp_gloo",
    "ddp_train",
    "mlp_data",
    "plain_buckets",
]

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
    """Train ``case["steps"]`` SGD steps on this rank's shard with the learner's ``sync``
    (on the simulated world: this rank's own forked process, the router counts)."""
    return _train(case, comm.rank, comm.world_size, lambda g, b: sync(comm, g, b))


def _train(case: dict[str, Any], rank: int, p: int, step: Callable[..., Any]) -> dict:
    """The training loop: ``step(grads, buckets)`` averages the gradients; return weights."""
    params, x, y = mlp_data(case)
    rows = np.array_split(np.arange(case["batch"]), p)[rank]
    xs, ys = x[rows], y[rows]
    buckets = plain_buckets([q.nbytes for q in params], case["bucket_bytes"])
    for _ in range(case["steps"]):
        ts = [Tensor(q.copy(), requires_grad=True) for q in params]
        h = Tensor(xs)
        for k in range(0, len(ts), 2):
            h = h @ ts[k] + ts[k + 1]
            if k + 2 < len(ts):
                h = h.tanh()
        loss = ((h - Tensor(ys)) ** 2).mean()
        loss.backward()
        grads = [np.array(t.grad) for t in ts]
        got = step(grads, [list(b) for b in buckets])
        params = [
            q - case["lr"] * np.asarray(g, np.float64) for q, g in zip(params, got, strict=True)
        ]
    return {"params": params}


def _maker(source: str, name: str) -> Callable[[], Callable[..., Any]]:
    """Like :func:`~a2s.checks.ranks.learner_source`, with the setup cell's names (np,
    lab 20's collectives): compiled here as the learner's, run only in the sealed child."""
    code = compile(source, f"{LEARNER}{name}>", "exec")

    def make() -> Callable[..., Any]:
        module = types.ModuleType("__a2s_rank__")
        module.__dict__.update(np=np, numpy=np)
        for n in ("all_reduce", "broadcast", "reduce", "reduce_scatter", "all_gather"):
            module.__dict__[n] = getattr(collectives, n)
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)
        return module.__dict__[name]  # type: ignore[no-any-return]

    return make


def ddp_gloo(comm: TorchDistComm, source: str, name: str, cases: list[dict[str, Any]]) -> list:
    """On a gloo rank: every case's training, each call of the learner's ``name`` in a sealed
    forked child of this rank (:func:`~a2s.checks.ranks.on_gloo_rank`: torch is a
    forbidden call there); the messages are this rank's own count."""
    make = _maker(source, name)
    out = []
    for case in cases:
        sent = [0]

        def step(grads: list, buckets: list, sent: list = sent) -> Any:
            got, log = on_gloo_rank(comm, make, grads, buckets, exercise="23.2", blocks=REFERENCE)
            comm.flush()
            sent[0] += log["messages"]
            return got

        comm.barrier()
        out.append(dict(_train(case, comm.rank, comm.world_size, step), messages=sent[0]))
    return out
