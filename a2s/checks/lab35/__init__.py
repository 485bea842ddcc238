"""Graders of lab 35 (the RL loop as a systems problem).

Ground truth is in ``_truth``: GRPO's advantages and loss (with its gradient derived by hand)
as plain loops, log softmax at the sampled tokens one row at a time, and the step time of the
three placements in closed form. The engine of 35.4 (its arrays, version and byte count)
lives in the grader's process, and so do the mailboxes, the transport, the rollout actor and
the policy versions of 35.6. The reference (``minitorch.rl``) is blocked while the learner's
code runs; the model of 35.3 runs in the grader's process, counted.
"""

from a2s.checks.lab35.actors import check_trainer_actor
from a2s.checks.lab35.advantages import check_group_advantages
from a2s.checks.lab35.logprobs import check_recompute_logprobs
from a2s.checks.lab35.loss import check_grpo_loss
from a2s.checks.lab35.placement import check_step_time
from a2s.checks.lab35.weights import check_weight_sync

__all__ = [
    "check_group_advantages",
    "check_grpo_loss",
    "check_recompute_logprobs",
    "check_step_time",
    "check_trainer_actor",
    "check_weight_sync",
]
