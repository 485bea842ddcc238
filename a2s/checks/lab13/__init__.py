"""Graders of lab 13 (graph capture and IR): verifier, shape inference, tracer, interpreter, fx.

Every graph a student's function returns is read back field by field into plain values
(:func:`a2s.checks.lab13._truth.read_graph`). Ground truth: planted defects (13.1),
torch on empty tensors (13.2), expected graphs written out op by op and eager execution
(13.3, 13.4), and ``torch.fx.symbolic_trace`` of the torch twin of each model (13.5).
"""

from a2s.checks.lab13.fx import check_compare_fx
from a2s.checks.lab13.run import check_run
from a2s.checks.lab13.shapes import check_infer_shape
from a2s.checks.lab13.trace import check_trace
from a2s.checks.lab13.verify import check_verify

__all__ = ["check_compare_fx", "check_infer_shape", "check_run", "check_trace", "check_verify"]
