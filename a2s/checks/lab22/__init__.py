"""Graders of lab 22 (RDMA and transport): one-sided put, two-sided send/recv, alpha-beta fit.

The verbs exercises run the student's code on fresh simulated hosts and grade the *costs* the
simulation counts (CPU operations per side, CPU copies, wire bytes, drained completion queues)
as well as the bytes that arrive; the fit is graded on synthetic data against the closed-form
least squares, never on a timing.
"""

from a2s.checks.lab22.fit import check_fit_alpha_beta
from a2s.checks.lab22.verbs import check_rdma_put, check_send_recv

__all__ = ["check_fit_alpha_beta", "check_rdma_put", "check_send_recv"]
