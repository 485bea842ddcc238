"""Graders of lab 23 (data parallel and ZeRO): gradient buckets, DDP on SimWorld and on two
gloo processes, exposed communication on an alpha-beta timeline, ZeRO memory per rank, and
ZeRO-3's gather-on-use forward under a peak-memory budget.

Rank programs that spawned processes import live in :mod:`a2s.checks.lab23.workers`.
"""

from a2s.checks.lab23.buckets import check_assign_buckets
from a2s.checks.lab23.ddp import check_ddp_sync
from a2s.checks.lab23.memory import check_zero3_forward, check_zero_bytes
from a2s.checks.lab23.overlap import check_exposed_comm

__all__ = [
    "check_assign_buckets",
    "check_ddp_sync",
    "check_exposed_comm",
    "check_zero3_forward",
    "check_zero_bytes",
]
