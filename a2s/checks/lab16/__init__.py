"""Graders of lab 16 (streams and overlap): stream semantics, DDP buckets, FSDP prefetch.

Ground truth is the plain loops of ``_truth`` (never ``minitorch.runtime``, whose simulator
and schedules are blocked while the student's code runs). 16.4 and 16.5 enforce budgets:
the step time of the chosen bucket cap, and at most 2 layers' parameters held at once.
"""

from a2s.checks.lab16.buckets import (
    check_bucket_schedule,
    check_choose_bucket,
    check_predict_exposed,
)
from a2s.checks.lab16.prefetch import check_prefetch
from a2s.checks.lab16.streams import check_simulate

__all__ = [
    "check_bucket_schedule",
    "check_choose_bucket",
    "check_predict_exposed",
    "check_prefetch",
    "check_simulate",
]
