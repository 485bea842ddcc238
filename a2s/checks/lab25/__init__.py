"""Graders of lab 25 (pipeline parallel): GPipe, 1F1B and interleaved schedules (validated,
bubble exact in simulated time, stashed activations within budget), the bubble predicted and
timed, and the tiny GPT trained in 2 pipeline stages on SimWorld and on 2 gloo processes.

Rank programs that spawned processes import live in :mod:`a2s.checks.lab25.workers`.
"""

from a2s.checks.lab25.schedules import check_gpipe, check_interleaved, check_one_f_one_b
from a2s.checks.lab25.timing import check_simulate
from a2s.checks.lab25.training import check_pipeline_train

__all__ = [
    "check_gpipe",
    "check_interleaved",
    "check_one_f_one_b",
    "check_pipeline_train",
    "check_simulate",
]
