"""Graders of lab 06 (matmul tiling): an LRU cache, loop-order traces, their predicted misses,
a blocked trace under a miss budget, and a tiled numpy matmul built from micro-kernel calls.

Ground truth is a plain-loop LRU simulator and a plain triple loop written in the graders, a
closed form for the misses, and torch for the matmul values; the reference simulator
(``minitorch.hardware.cache``) and the kernels (``minitorch.kernels``) are blocked.
"""

from a2s.checks.lab06.lru import check_lru_hits
from a2s.checks.lab06.tiled import check_matmul_tiled
from a2s.checks.lab06.traces import (
    check_blocked_trace,
    check_loop_trace,
    check_predicted_misses,
)

__all__ = [
    "check_blocked_trace",
    "check_loop_trace",
    "check_lru_hits",
    "check_matmul_tiled",
    "check_predicted_misses",
]
