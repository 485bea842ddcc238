"""Graders of lab 02 (scalar autograd): local rules, topological sort, backward, numerical
gradients, cycle-free backward functions, and an SGD step of a scalar MLP.

One module per exercise; the check cells call them as ``lab02.check_topo_sort(topo_sort)``.
Ground truth is torch.autograd in float64, a topological order computed here by Kahn's
algorithm, and ``gc.collect()``; never ``Value.backward`` or ``Value.topo_order``, which are
blocked while the student's code runs.
"""

from a2s.checks.lab02.backward import check_backward
from a2s.checks.lab02.cycles import check_no_cycles
from a2s.checks.lab02.numgrad import check_numerical_grad
from a2s.checks.lab02.rules import check_local_rules
from a2s.checks.lab02.topo import check_topo_sort
from a2s.checks.lab02.train import check_train_step

__all__ = [
    "check_backward",
    "check_local_rules",
    "check_no_cycles",
    "check_numerical_grad",
    "check_topo_sort",
    "check_train_step",
]
