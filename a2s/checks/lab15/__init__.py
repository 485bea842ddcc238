"""Graders of lab 15 (loop optimization and autotuning): a hand-written matmul schedule under a
miss budget, the distance vectors of a stencil, the legality of interchange and tiling, and a
tuner that must come within 10% of the grid's best after measuring at most a quarter of it.

Ground truth is written in the graders: the iteration order of a nest evaluated from its loops,
a brute-force search for dependent iteration pairs, a run-order check of permuted and tiled
nests, and the full grid of a cost table. The lab's reference (``minitorch.compiler.loops``'
``tile``, ``minitorch.compiler.dependence``, the searches of ``minitorch.compiler.autotune``)
is blocked.
"""

from a2s.checks.lab15.legality import check_distance_vectors, check_legality
from a2s.checks.lab15.schedule import check_schedule_matmul
from a2s.checks.lab15.tuner import check_tune

__all__ = ["check_distance_vectors", "check_legality", "check_schedule_matmul", "check_tune"]
