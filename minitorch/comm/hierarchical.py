"""Hierarchical all-reduce on a two-level topology (nodes of ``g`` ranks on fast links).

Three phases: a reduce-scatter inside each node (rank with local index ``l`` gets chunk ``l``
of its node's sum), an all-reduce of that chunk between the ranks with the same local index
on every node (a ring over ``q = p / g`` nodes), and an all-gather inside each node. Only the
middle phase crosses the slow links, and it moves ``1/g`` of the buffer per rank: in all
``2 (q-1) n`` bytes between nodes, spread over every rank (not funnelled through one leader).
:class:`Group` gives the sub-communicators.

Lab: 21_ring_allreduce
Paper: NCCL documentation (tree and ring over NVLink and the network); Horovod's hierarchical
all-reduce (Sergeev & Del Balso 2018); Thakur, Rabenseifner & Gropp 2005.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.comm.allreduce import ring_all_reduce
from minitorch.comm.collectives import all_gather, reduce_scatter
from minitorch.comm.protocol import Communicator, Handle

__all__ = ["Group", "hierarchical_all_reduce"]


class Group:
    """A sub-communicator: the ranks ``ranks`` of ``comm``, renumbered ``0 .. len - 1``."""

    def __init__(self, comm: Communicator, ranks: Sequence[int]) -> None:
        self._comm, self._ranks = comm, list(ranks)
        if comm.rank not in self._ranks:
            raise ValueError(f"rank {comm.rank} is not in the group {self._ranks}")

    @property
    def rank(self) -> int:
        return self._ranks.index(self._comm.rank)

    @property
    def world_size(self) -> int:
        return len(self._ranks)

    def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
        self._comm.send(x, self._ranks[dst], tag)

    def recv(self, src: int, tag: int = 0) -> np.ndarray:
        return self._comm.recv(self._ranks[src], tag)

    def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> Handle:
        return self._comm.isend(x, self._ranks[dst], tag)

    def irecv(self, src: int, tag: int = 0) -> Handle:
        return self._comm.irecv(self._ranks[src], tag)

    def barrier(self) -> None:
        raise NotImplementedError("a group has no barrier of its own; use the world's")


def hierarchical_all_reduce(comm: Communicator, x: np.ndarray, ranks_per_node: int) -> np.ndarray:
    """Intra-node reduce-scatter, inter-node ring all-reduce, intra-node all-gather."""
    g, p = int(ranks_per_node), comm.world_size
    node, local = divmod(comm.rank, g)
    intra = Group(comm, range(node * g, node * g + g))
    inter = Group(comm, range(local, p, g))
    mine = reduce_scatter(intra, np.asarray(x))
    mine = ring_all_reduce(inter, mine)
    return all_gather(intra, mine)
