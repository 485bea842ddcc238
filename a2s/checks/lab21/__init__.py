"""Graders of lab 21 (ring all-reduce): ring, halving-doubling, the tree/ring crossover,
hierarchical all-reduce on a two-level topology, and the ring on real gloo processes.

Exercises 21.1-21.4 run the learner's rank program on SimWorld (bytes, messages, links and the
clock enforced); 21.5 ships the learner's source to 3 spawned gloo ranks (one launch), with
only point-to-point calls reachable and every torch.distributed collective refused.
"""

from a2s.checks.lab21.crossover import check_crossover
from a2s.checks.lab21.gloo import check_ring_on_gloo
from a2s.checks.lab21.hierarchy import check_hierarchical
from a2s.checks.lab21.ring import check_halving_doubling, check_ring_all_reduce

__all__ = [
    "check_crossover",
    "check_halving_doubling",
    "check_hierarchical",
    "check_ring_all_reduce",
    "check_ring_on_gloo",
]
