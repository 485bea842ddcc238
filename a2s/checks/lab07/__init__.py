"""Graders of lab 07 (GPU programming model): kernels held to transaction and conflict budgets.

The check cells pass a kernel, ``lab07.check_matmul_tiled(matmul_tiled)``; the grader launches
it on :func:`minitorch.kernels.simt.launch` with the lab's configuration, compares the values
with numpy (float64) and then enforces the budgets: global segments at most the closed-form
minimum, zero bank conflicts, shared transactions of a tree without divergence. A kernel with
the right values and the wrong traffic fails. The reference kernels
(``minitorch.kernels.simt_kernels``) are blocked while the student's kernel runs.
"""

from a2s.checks.lab07.coalescing import check_vector_add, check_warp_transactions
from a2s.checks.lab07.matmul import check_matmul_tiled
from a2s.checks.lab07.reduction import check_block_sum
from a2s.checks.lab07.transpose import check_transpose

__all__ = [
    "check_block_sum",
    "check_matmul_tiled",
    "check_transpose",
    "check_vector_add",
    "check_warp_transactions",
]
