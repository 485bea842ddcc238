"""Graders of lab 20 (collectives): broadcast, naive all-reduce, reduce-scatter, all-gather,
and the bytes-per-rank prediction.

Each exercise is one rank's program ``fn(comm, ...)``; the check runs it on every rank of a
:class:`~minitorch.comm.simworld.SimWorld` for world sizes 1-8 and uneven lengths. Ground
truth is a plain numpy loop over the ranks' inputs; the bytes each rank sends must equal the
algorithm's closed form (a right answer that sends more fails). The reference collectives
are blocked while the student's code runs; torch is forbidden.
"""

from a2s.checks.lab20.predict import check_predict_bytes
from a2s.checks.lab20.rooted import check_all_reduce, check_broadcast
from a2s.checks.lab20.scatter import check_all_gather, check_reduce_scatter

__all__ = [
    "check_all_gather",
    "check_all_reduce",
    "check_broadcast",
    "check_predict_bytes",
    "check_reduce_scatter",
]
