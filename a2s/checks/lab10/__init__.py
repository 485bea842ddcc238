"""Graders of lab 10 (mixture of experts).

Routing is checked against torch's softmax ranked by plain loops, capacity and dropped
assignments against GShard's priority as a loop (no expert may keep more than its slots, and
the drop count is exact), the auxiliary losses against torch's formulas, and dispatch/combine
against a plain loop: a send buffer of exactly the kept rows, and combine inverting dispatch.
The reference router, dispatch and MoE layer of ``minitorch.model`` are blocked.
"""

from a2s.checks.lab10.dispatch import check_dispatch_combine
from a2s.checks.lab10.gating import check_assign_slots, check_top_k_gating
from a2s.checks.lab10.losses import check_aux_losses, check_predicted_drops

__all__ = [
    "check_assign_slots",
    "check_aux_losses",
    "check_dispatch_combine",
    "check_predicted_drops",
    "check_top_k_gating",
]
