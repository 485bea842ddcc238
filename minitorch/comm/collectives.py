"""Collectives built from point-to-point messages: the simplest (flat, direct) algorithms.

Every function is one rank's part: call it on every rank of the world with that rank's data.
Lengths need not divide by the world size: :func:`chunk_bounds` splits ``n`` elements into
``p`` contiguous chunks whose sizes differ by at most one (the first ``n % p`` are longer),
as ``numpy.array_split`` does. Reductions add in rank order, so results are reproducible.

Bytes sent per rank (``n`` = bytes of the full buffer, ``c_r`` = bytes of chunk r); see
:mod:`minitorch.comm.cost`:

* broadcast (flat tree): root ``(p-1) n``, others 0;
* reduce (flat tree): root 0, others ``n``;
* all-reduce, naive (reduce to 0, then broadcast from 0): rank 0 ``(p-1) n``, others ``n``;
* reduce-scatter (direct): rank r sends ``n - c_r``; all-gather (direct): ``(p-1) c_r``;
* all-to-all: rank r sends every block but its own.

Lab: 20_collectives
Paper: E. Chan, M. Heimlich, A. Purkayastha, R. van de Geijn, "Collective communication:
theory, practice, and experience", Concurrency Computat.: Pract. Exper. 19 (2007).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.comm.protocol import Communicator

__all__ = [
    "all_gather",
    "all_reduce",
    "all_to_all",
    "broadcast",
    "chunk_bounds",
    "reduce",
    "reduce_scatter",
]


def chunk_bounds(n: int, p: int) -> list[tuple[int, int]]:
    """``p`` contiguous ``(start, stop)`` ranges covering ``range(n)``, sizes within one."""
    base, extra = divmod(n, p)
    bounds, start = [], 0
    for r in range(p):
        stop = start + base + (1 if r < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def broadcast(comm: Communicator, x: np.ndarray | None, root: int = 0) -> np.ndarray:
    """Every rank returns ``root``'s ``x`` (other ranks' ``x`` is ignored)."""
    if comm.rank == root:
        assert x is not None
        for dst in range(comm.world_size):
            if dst != root:
                comm.send(x, dst)
        return np.array(x)
    return comm.recv(root)


def reduce(comm: Communicator, x: np.ndarray, root: int = 0) -> np.ndarray | None:
    """``root`` returns the sum of every rank's ``x`` (in rank order); others return None."""
    if comm.rank != root:
        comm.send(x, root)
        return None
    total: np.ndarray | None = None
    for src in range(comm.world_size):
        part = np.asarray(x) if src == root else comm.recv(src)
        total = np.array(part) if total is None else total + part
    return total


def all_reduce(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Every rank returns the sum of every rank's ``x``: reduce to rank 0, then broadcast."""
    return broadcast(comm, reduce(comm, x, root=0), root=0)


def reduce_scatter(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Rank r returns chunk r (:func:`chunk_bounds`) of the sum of every rank's ``x``."""
    x = np.asarray(x)
    p, r = comm.world_size, comm.rank
    bounds = chunk_bounds(len(x), p)
    for k in range(1, p):  # a shifted schedule: each step every rank sends to a different peer
        dst = (r + k) % p
        comm.send(x[slice(*bounds[dst])], dst)
    total: np.ndarray | None = None
    for src in range(p):
        part = x[slice(*bounds[r])] if src == r else comm.recv(src)
        total = np.array(part) if total is None else total + part
    assert total is not None
    return total


def all_gather(comm: Communicator, chunk: np.ndarray) -> np.ndarray:
    """Every rank returns the concatenation of every rank's ``chunk`` in rank order."""
    p, r = comm.world_size, comm.rank
    for k in range(1, p):
        comm.send(chunk, (r + k) % p)
    return np.concatenate([np.asarray(chunk) if src == r else comm.recv(src) for src in range(p)])


def all_to_all(comm: Communicator, blocks: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Rank r sends ``blocks[j]`` to rank j; returns ``[block r of rank 0, ..., of rank p-1]``."""
    p, r = comm.world_size, comm.rank
    if len(blocks) != p:
        raise ValueError(f"all_to_all needs one block per rank ({p}), got {len(blocks)}")
    for k in range(1, p):
        dst = (r + k) % p
        comm.send(blocks[dst], dst)
    return [np.array(blocks[r]) if src == r else comm.recv(src) for src in range(p)]
