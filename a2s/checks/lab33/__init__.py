"""Graders of lab 33 (sparsity, distillation and QAT).

Ground truth is in ``_truth``: the 2:4 mask and compressed format group by group, the sparse
product weight by weight and its closed-form budget, the savings of removed heads counted
over the rows and columns that vanish, the distillation loss and gradient row by row, and
fake quantization element by element. The references (``minitorch.model.sparse24``,
``pruning_structured``, ``distill``, ``qat``, lab 11's ``quant``) are blocked while the
learner's code runs; the counted HBM and multiplier of 33.2 live in the grader's process.
"""

from a2s.checks.lab33.compress import check_compress_24
from a2s.checks.lab33.distill import check_distill_loss
from a2s.checks.lab33.fakequant import check_fake_quant
from a2s.checks.lab33.heads import check_head_savings
from a2s.checks.lab33.spmm import check_sparse24_matmul

__all__ = [
    "check_compress_24",
    "check_distill_loss",
    "check_fake_quant",
    "check_head_savings",
    "check_sparse24_matmul",
]
