"""Graders of lab 28 (the capstone): the served quantized model, the throughput proxy, the KV
memory within the paging bound, and the report's figures produced by code.

Ground truth is written here: a direct INT8 generation one token at a time with lab 11's
contiguous INT8 KV cache (``_truth``), token-by-token work counts, the block tables read
directly, and for the report the reference pipeline run on the same seed. The
``minitorch.runtime.quant_serving`` entry point each exercise asks for is blocked and torch is
forbidden in student code.
"""

from a2s.checks.lab28.kv import check_kv_usage
from a2s.checks.lab28.report import check_report
from a2s.checks.lab28.server import check_server
from a2s.checks.lab28.work import check_work_counts

__all__ = ["check_kv_usage", "check_report", "check_server", "check_work_counts"]
