"""All-reduce algorithms on the Communicator protocol: ring, trees, recursive halving-doubling.

Every function is one rank's part (call it on every rank with that rank's ``x``); every rank
returns the element-wise sum. Lengths need not divide by ``p``: chunks follow
:func:`~minitorch.comm.collectives.chunk_bounds` (the first ``n % p`` one element longer).

* ring: a reduce-scatter then an all-gather, each ``p - 1`` steps to the right neighbour.
  Rank r ends the reduce-scatter owning chunk ``r + 1``; it sends ``2n - c_{r+1} - c_{r+2}``
  bytes, i.e. ``2 (p-1)/p`` of the buffer when ``p`` divides ``n`` (bandwidth-optimal), in
  ``2 (p-1)`` messages (latency grows with ``p``).
* recursive halving-doubling (Rabenseifner): ``log2 p`` exchanges with partner ``r XOR d``
  halving the owned range of chunks (reduce-scatter), then the same in reverse (all-gather):
  the ring's bytes (``2 (n - c_r)``) in only ``2 log2 p`` messages. A world that is not a
  power of two first folds its extra ranks into their partners.
* tree (binomial, as MPICH's reduce and broadcast): ``2 ceil(log2 p)`` rounds of the whole
  buffer: few messages, ``log p`` times the bytes.
* binary tree and double binary tree (NCCL 2.4): a heap-shaped tree reduces then broadcasts;
  the double tree runs half of the buffer on the tree and half on its mirror image, so every
  rank is a leaf in one tree and the two halves use different links.

Lab: 21_ring_allreduce
Paper: P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
workstations", JPDC 69 (2009) (ring); R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of
collective communication operations in MPICH", IJHPCA 19 (2005); P. Sanders, J. Speck,
J. L. Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan",
Parallel Computing 35 (2009).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.comm.collectives import chunk_bounds
from minitorch.comm.protocol import Communicator

__all__ = [
    "binary_tree_all_reduce",
    "double_binary_tree_all_reduce",
    "halving_doubling_all_reduce",
    "ring_all_reduce",
    "tree_all_reduce",
]


def ring_all_reduce(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Ring all-reduce: reduce-scatter then all-gather around ``r -> r + 1``."""
    p, r = comm.world_size, comm.rank
    buf = np.array(x, copy=True)
    if p == 1:
        return buf
    b = [slice(a, e) for a, e in chunk_bounds(len(buf), p)]
    right, left = (r + 1) % p, (r - 1) % p
    for s in range(p - 1):  # reduce-scatter: pass chunk r - s, add chunk r - s - 1
        comm.send(buf[b[(r - s) % p]], right)
        got = b[(r - s - 1) % p]
        buf[got] = buf[got] + comm.recv(left)
    for s in range(p - 1):  # all-gather: pass chunk r + 1 - s, store chunk r - s
        comm.send(buf[b[(r + 1 - s) % p]], right)
        buf[b[(r - s) % p]] = comm.recv(left)
    return buf


def halving_doubling_all_reduce(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Recursive halving (reduce-scatter) then recursive doubling (all-gather)."""
    p, r = comm.world_size, comm.rank
    buf = np.array(x, copy=True)
    q = 1 << (p.bit_length() - 1)  # the largest power of two <= p
    if r >= q:  # fold: an extra rank hands its buffer to r - q and gets the sum back
        comm.send(buf, r - q)
        return comm.recv(r - q)
    if r + q < p:
        buf = buf + comm.recv(r + q)
    bounds = chunk_bounds(len(buf), q)

    def span(lo: int, hi: int) -> slice:  # the elements of chunks lo .. hi - 1
        return slice(bounds[lo][0], bounds[hi - 1][1])

    lo, hi, d, steps = 0, q, q // 2, []
    while d >= 1:
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if r & d else ((lo, mid), (mid, hi))
        comm.send(buf[span(*give)], r ^ d)
        buf[span(*keep)] = buf[span(*keep)] + comm.recv(r ^ d)
        steps.append((r ^ d, keep, give))
        (lo, hi), d = keep, d // 2
    for partner, keep, give in reversed(steps):
        comm.send(buf[span(*keep)], partner)
        buf[span(*give)] = comm.recv(partner)
    if r + q < p:
        comm.send(buf, r + q)
    return buf


def tree_all_reduce(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Binomial-tree reduce to rank 0, then binomial-tree broadcast from rank 0."""
    p, r = comm.world_size, comm.rank
    buf = np.array(x, copy=True)
    mask = 1
    while mask < p:  # reduce: in round k, ranks with bit k set send to r - 2^k
        if r & mask:
            comm.send(buf, r - mask)
            buf = comm.recv(r - mask)  # the broadcast arrives from the same parent
            break
        if r + mask < p:
            buf = buf + comm.recv(r + mask)
        mask <<= 1
    mask >>= 1
    while mask > 0:  # broadcast down: to r + 2^k for every k below the bit we received on
        if r + mask < p:
            comm.send(buf, r + mask)
        mask >>= 1
    return buf


def _heap_tree(comm: Communicator, x: np.ndarray, order: Sequence[int], tag: int) -> np.ndarray:
    """Reduce up, then broadcast down, a binary tree whose node ``i`` is rank ``order[i]``."""
    p, i = len(order), list(order).index(comm.rank)
    kids = [order[k] for k in (2 * i + 1, 2 * i + 2) if k < p]
    buf = np.array(x, copy=True)
    for kid in kids:
        buf = buf + comm.recv(kid, tag)
    if i > 0:
        comm.send(buf, order[(i - 1) // 2], tag)
        buf = comm.recv(order[(i - 1) // 2], tag)
    for kid in kids:
        comm.send(buf, kid, tag)
    return buf


def binary_tree_all_reduce(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """All-reduce over one binary tree (node i has children 2i+1, 2i+2; rank i at node i)."""
    return _heap_tree(comm, np.asarray(x), range(comm.world_size), tag=0)


def double_binary_tree_all_reduce(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """First half on the binary tree, second half on its mirror (rank p-1-i at node i)."""
    x, p = np.asarray(x), comm.world_size
    half = len(x) // 2
    first = _heap_tree(comm, x[:half], range(p), tag=0)
    second = _heap_tree(comm, x[half:], range(p - 1, -1, -1), tag=1)
    return np.concatenate([first, second])
