"""Costs of the collectives: bytes sent per rank and alpha-beta time, in closed form.

Alpha-beta model: a message of ``n`` bytes costs ``alpha + beta * n`` seconds (latency
``alpha``, inverse bandwidth ``beta``). The flat algorithms of
:mod:`minitorch.comm.collectives` serialise on the root's port, so broadcast and reduce cost
``(p - 1)(alpha + beta n)`` and the naive all-reduce twice that. Bus bandwidth normalises an
algorithm's bandwidth (``n / time``) by the data each rank must move at best, so that it is
comparable across world sizes: factor ``2 (p-1)/p`` for all-reduce, ``(p-1)/p`` for
reduce-scatter and all-gather, 1 for broadcast and reduce.

Lab: 20_collectives
Paper: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 19 (2005); bus bandwidth: NCCL tests, doc/PERFORMANCE.md.
"""

from __future__ import annotations

__all__ = ["BUS_FACTOR", "bus_bandwidth", "bytes_sent", "chunk_bytes", "time_naive"]

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
