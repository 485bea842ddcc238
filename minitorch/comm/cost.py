"""Costs of the collectives: bytes sent per rank and alpha-beta time, in closed form.

Alpha-beta model: a message of ``n`` bytes costs ``alpha + beta * n`` seconds (latency
``alpha``, inverse bandwidth ``beta``). The flat algorithms of
:mod:`minitorch.comm.collectives` serialise on the root's port, so broadcast and reduce cost
``(p - 1)(alpha + beta n)`` and the naive all-reduce twice that. Bus bandwidth normalises an
algorithm's bandwidth (``n / time``) by the data each rank must move at best, so that it is
comparable across world sizes: factor ``2 (p-1)/p`` for all-reduce, ``(p-1)/p`` for
reduce-scatter and all-gather, 1 for broadcast and reduce.

Lab 21 adds the all-reduce algorithms of :mod:`minitorch.comm.allreduce` as
``T = a alpha + b beta`` (:func:`all_reduce_terms` gives ``(a, b)``): ring
``(2(p-1), 2(p-1)/p n)``; recursive halving-doubling ``(2 log2 p, 2(p-1)/p n)`` for ``p`` a
power of two; binomial tree ``(2 ceil(log2 p), 2 ceil(log2 p) n)``; and the latency-bound tree
against the bandwidth-bound ring cross at :func:`crossover_bytes`. These are exact on
SimWorld's clock for ``p`` a power of two dividing ``n``.

Lab: 20_collectives, 21_ring_allreduce
Paper: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 19 (2005); bus bandwidth: NCCL tests, doc/PERFORMANCE.md.
"""

from __future__ import annotations

import math

__all__ = [
    "BUS_FACTOR",
    "all_reduce_terms",
    "bus_bandwidth",
    "bytes_sent",
    "chunk_bytes",
    "crossover_bytes",
    "time_all_reduce",
    "time_hierarchical",
    "time_naive",
]

BUS_FACTOR = {
    "all_reduce": lambda p: 2 * (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "all_gather": lambda p: (p - 1) / p,
    "all_to_all": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}


def chunk_bytes(n_elems: int, p: int, r: int, itemsize: int) -> int:
    """Bytes of chunk ``r`` when ``n_elems`` elements are split into ``p`` near-equal chunks."""
    base, extra = divmod(n_elems, p)
    return (base + (1 if r < extra else 0)) * itemsize


def bytes_sent(
    collective: str, n_elems: int, p: int, rank: int, itemsize: int = 8, root: int = 0
) -> int:
    """Bytes rank ``rank`` sends in ``collective`` on a buffer of ``n_elems`` elements.

    For all_gather ``n_elems`` is the length of the gathered result (rank r holds chunk r);
    for all_to_all it is the length of each rank's whole send buffer, split like the chunks.
    """
    n = n_elems * itemsize
    mine = chunk_bytes(n_elems, p, rank, itemsize)
    if collective == "broadcast":
        return (p - 1) * n if rank == root else 0
    if collective == "reduce":
        return 0 if rank == root else n
    if collective == "all_reduce":
        return (p - 1) * n if rank == 0 else n
    if collective in ("reduce_scatter", "all_to_all"):
        return n - mine
    if collective == "all_gather":
        return (p - 1) * mine
    raise ValueError(f"unknown collective {collective!r}")


def time_naive(collective: str, n_bytes: int, p: int, alpha: float, beta: float) -> float:
    """Alpha-beta time of the flat broadcast/reduce and the naive all-reduce."""
    one = (p - 1) * (alpha + beta * n_bytes)
    if collective in ("broadcast", "reduce"):
        return one
    if collective == "all_reduce":
        return 2 * one
    raise ValueError(f"no closed-form time for {collective!r}")


def bus_bandwidth(collective: str, n_bytes: int, p: int, seconds: float) -> float:
    """Bus bandwidth in bytes/s: ``n_bytes / seconds`` times the collective's factor."""
    return n_bytes / seconds * BUS_FACTOR[collective](p)


def all_reduce_terms(algorithm: str, n_bytes: int, p: int) -> tuple[float, float]:
    """``(a, b)`` with ``T = a alpha + b beta`` for an all-reduce of ``n_bytes`` on ``p`` ranks."""
    if p == 1:
        return 0.0, 0.0
    log = math.ceil(math.log2(p))
    if algorithm == "ring":
        return 2.0 * (p - 1), 2.0 * (p - 1) / p * n_bytes
    if algorithm == "halving_doubling":  # p a power of two; otherwise plus the fold (2 msgs)
        fold = 0 if p & (p - 1) == 0 else 2
        q = 1 << (p.bit_length() - 1)
        return 2.0 * math.log2(q) + fold, 2.0 * (q - 1) / q * n_bytes + fold * n_bytes
    if algorithm == "tree":
        return 2.0 * log, 2.0 * log * n_bytes
    if algorithm == "naive":
        return 2.0 * (p - 1), 2.0 * (p - 1) * n_bytes
    raise ValueError(f"no all-reduce model for {algorithm!r}")


def time_all_reduce(algorithm: str, n_bytes: int, p: int, alpha: float, beta: float) -> float:
    """Alpha-beta time of an all-reduce (see :func:`all_reduce_terms`)."""
    a, b = all_reduce_terms(algorithm, n_bytes, p)
    return a * alpha + b * beta


def crossover_bytes(p: int, alpha: float, beta: float) -> float:
    """Message size where the binomial tree and the ring take equal time (0: ring always wins).

    ``2L(alpha + n beta) = 2(p-1) alpha + 2(p-1)/p n beta`` with ``L = ceil(log2 p)``.
    """
    if p <= 2:
        return 0.0
    log = math.ceil(math.log2(p))
    return (p - 1 - log) * alpha / ((log - (p - 1) / p) * beta)


def time_hierarchical(
    n_bytes: int, p: int, g: int, fast: tuple[float, float], slow: tuple[float, float]
) -> float:
    """Hierarchical all-reduce: direct reduce-scatter and all-gather inside nodes of ``g``
    ranks on ``fast = (alpha, beta)`` links, a ring over ``p / g`` nodes on ``slow`` links."""
    q = p // g
    inside = 2 * (g - 1) * (fast[0] + fast[1] * n_bytes / g)
    between = 2 * (q - 1) * (slow[0] + slow[1] * n_bytes / (g * q))
    return inside + between
