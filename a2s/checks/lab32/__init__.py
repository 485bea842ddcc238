"""Graders of lab 32 (fault tolerance and elastic training): resume from the newest intact
checkpoint, a save that survives a crash at any call, Daly's checkpoint interval, failed ranks
from heartbeats, and stragglers.

Ground truth is written in :mod:`._truth`: folders written and damaged by the grader (and read
back by a loop of its own), a simulated disk that records every call and replays crashes,
Daly's closed form, a poll loop per rank and medians by sorting. ``minitorch.elastic``'s
modules are blocked while the learner's code runs.
"""

from a2s.checks.lab32.async_save import check_async_saver
from a2s.checks.lab32.checkpoint import LATEST, check_load_latest
from a2s.checks.lab32.detect import DETECT, check_failed_ranks
from a2s.checks.lab32.interval import INTERVAL, check_checkpoint_interval
from a2s.checks.lab32.reshard import RESHARD, check_reshard
from a2s.checks.lab32.save import check_save_checkpoint
from a2s.checks.lab32.stragglers import STRAGGLERS, check_find_stragglers

__all__ = [
    "DETECT",
    "INTERVAL",
    "LATEST",
    "RESHARD",
    "STRAGGLERS",
    "check_async_saver",
    "check_checkpoint_interval",
    "check_failed_ranks",
    "check_find_stragglers",
    "check_load_latest",
    "check_reshard",
    "check_save_checkpoint",
]
