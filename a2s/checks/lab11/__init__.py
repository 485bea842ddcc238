"""Graders of lab 11 (quantization): quantizer, INT4 packing, GPTQ, AWQ, SmoothQuant.

Ground truth is a plain loop in the grader (the quantizer's grid, row by row and group by
group) or a closed form; GPTQ and AWQ must beat the grader's own round-to-nearest on layer
output error, not just run, and SmoothQuant must make W8A8 accurate where naive W8A8 is not.
The reference functions of ``minitorch.model.quant*`` are blocked while the student's run.
"""

from a2s.checks.lab11.awq import check_awq_scales
from a2s.checks.lab11.gptq import check_gptq
from a2s.checks.lab11.quantizer import check_pack_int4, check_quantize
from a2s.checks.lab11.smooth import check_smooth_scales

__all__ = [
    "check_awq_scales",
    "check_gptq",
    "check_pack_int4",
    "check_quantize",
    "check_smooth_scales",
]
