"""Graders of lab 17 (caching allocator): size classes, best fit with splitting, coalescing,
the allocator replayed on a training trace under budgets, fragmentation.

Ground truth is the graders' own plain model (:mod:`a2s.checks.lab17._truth`, lists and
loops); the point is enforced in bytes and device calls: reserved bytes, device allocations
per training step, the reserved peak within 1.25x the trace's live-bytes lower bound.
"""

from a2s.checks.lab17.blocks import check_alloc_block, check_free_block
from a2s.checks.lab17.frag import check_fragmentation
from a2s.checks.lab17.replay import check_caching_allocator
from a2s.checks.lab17.sizes import check_size_class

__all__ = [
    "check_alloc_block",
    "check_caching_allocator",
    "check_fragmentation",
    "check_free_block",
    "check_size_class",
]
