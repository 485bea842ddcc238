"""Graders of lab 36 (CPU pipelines and an ISA): the encoder, pipeline cycles, branch
predictors, the critical path, and lock-step debugging against a golden trace.

Ground truth is written in ``_truth``: immediate bits placed by a table of fields, a small
parser and interpreter for the lab's programs, a timeline of ID cycles for the pipeline,
plain loops for the predictors, the dependence chain and the log comparison. The reference
(``minitorch.cpu``) is blocked while the learner's code runs.
"""

from a2s.checks.lab36.chains import check_critical_path
from a2s.checks.lab36.divergence import check_first_divergence
from a2s.checks.lab36.encoder import check_encode
from a2s.checks.lab36.hazards import check_pipeline_cycles
from a2s.checks.lab36.predictors import check_mispredictions

__all__ = [
    "check_critical_path",
    "check_encode",
    "check_first_divergence",
    "check_mispredictions",
    "check_pipeline_cycles",
]
