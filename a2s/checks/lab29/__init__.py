"""Graders of lab 29 (driver and command submission): the command ring, DMA chains and copy
costs, completions, graph replay, contexts and time slicing.

Ground truth is written in ``_truth`` (an element walk, closed forms, kernels replayed by hand,
a page walk, a round-robin loop), never taken from ``minitorch.driver``, whose modules are
blocked while the learner's code runs. The devices the learner's code drives (29.1, 29.4,
29.5) live in the grader's process; the learner's function runs in a forked child holding
proxies whose every call is a request, so the doorbells, bytes and faults counted are out of
its reach.
"""

from a2s.checks.lab29.completion import check_completions
from a2s.checks.lab29.context import check_contexts
from a2s.checks.lab29.dma import check_dma
from a2s.checks.lab29.launch import check_graph_replay
from a2s.checks.lab29.ring import check_ring

__all__ = ["check_completions", "check_contexts", "check_dma", "check_graph_replay", "check_ring"]
