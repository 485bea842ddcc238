"""Graders of lab 05 (roofline): op costs, the roofline bound, prediction, Amdahl/Gustafson.

Check cells call ``lab05.check_op_costs(gemv_cost, softmax_cost, layernorm_cost,
attention_cost)`` and so on. Ground truth is plain-loop counters and closed forms, never the
reference in ``minitorch.hardware``, whose matching functions are blocked while the student's
code runs. Nothing here times anything: measurements are shown by the notebook, not graded.
"""

from a2s.checks.lab05.intensity import check_op_costs
from a2s.checks.lab05.roofline import PREDICT_OPS, check_prediction, check_roofline
from a2s.checks.lab05.scaling import check_serial_fraction, check_speedups

__all__ = [
    "PREDICT_OPS",
    "check_op_costs",
    "check_prediction",
    "check_roofline",
    "check_serial_fraction",
    "check_speedups",
]
