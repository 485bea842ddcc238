"""Graders of lab 14 (graph passes and memory planning): DCE, CSE, folding and simplification,
fused-kernel code generation, liveness and arena planning.

Passes are graded structurally (the result equals the expected graph up to renaming) and by
semantics (the interpreter gives the same outputs before and after on random inputs); fused
kernels bit for bit against the unfused graph; conv-BatchNorm folding by the fold count, the
folded graph up to renaming and the outputs within 1e-5 of the unfolded graph's; plans by the
grader's own overlap test and the budget peak / lower bound <= 1.10. No check times anything.
"""

from a2s.checks.lab14.convbn import check_fold_conv_bn
from a2s.checks.lab14.dce import check_cse, check_dce
from a2s.checks.lab14.fusion import check_kernel_source
from a2s.checks.lab14.memory import check_memory_plan
from a2s.checks.lab14.simplify import check_fold_and_simplify

__all__ = [
    "check_cse",
    "check_dce",
    "check_fold_and_simplify",
    "check_fold_conv_bn",
    "check_kernel_source",
    "check_memory_plan",
]
