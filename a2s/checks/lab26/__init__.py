"""Graders of lab 26 (context and expert parallelism, a 3-D planner): ring attention on the
simulated world and two gloo processes, DeepSpeed-Ulysses, expert-parallel MoE with lab 10's
drops, and a planner judged on the published setups of Narayanan et al. 2021.

Rank programs that spawned processes import live in :mod:`a2s.checks.lab26.workers`.
"""

from a2s.checks.lab26.expert import check_expert_parallel
from a2s.checks.lab26.planner import check_plan
from a2s.checks.lab26.ring import check_ring_attention
from a2s.checks.lab26.ulysses import check_ulysses

__all__ = ["check_expert_parallel", "check_plan", "check_ring_attention", "check_ulysses"]
