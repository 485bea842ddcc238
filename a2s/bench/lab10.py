"""Lab 10 experiments: grouped (dropless) dispatch against GShard's dense one-hot dispatch.

N = 1024 tokens, d = 128, E = 16 experts, top-2, capacity factor 1.25, float32, one thread.
GShard builds a one-hot ``(N*k, E, C)`` dispatch tensor and an einsum, sending ``E * C`` rows
padded with zeros; the grouped dispatch gathers only the kept rows in expert order. Reported:
the rows each sends (the all-to-all's bytes) and the time ratio of the two on this machine.

Lab: 10_moe
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.moe_dispatch import dispatch, dispatch_order
from minitorch.model.moe_router import assign_slots, expert_capacity, top_k_gating

N, D, E, K, CF = 1024, 128, 16, 2, 1.25


@register
def grouped_vs_dense_dispatch() -> list[Figure]:
    g = np.random.default_rng(0)
    x = g.standard_normal((N, D)).astype(np.float32)
    experts, _ = top_k_gating(g.standard_normal((N, E)) + np.linspace(0, 1, E), K)  # skewed
    cap = expert_capacity(N, E, CF, K)
    position, keep = assign_slots(experts, E, cap)

    def grouped() -> np.ndarray:
        order, _ = dispatch_order(experts, keep, E)
        return dispatch(x, order, K)

    def dense() -> np.ndarray:
        mask = np.zeros((N * K, E, cap), dtype=np.float32)  # GShard's dispatch tensor
        rows = np.flatnonzero(keep.reshape(-1))
        mask[rows, experts.reshape(-1)[rows], position.reshape(-1)[rows]] = 1.0
        return np.einsum("nec,nd->ecd", mask, np.repeat(x, K, axis=0))  # (E, C, d)

    with one_thread():
        t_grouped, t_dense = alternate(grouped, dense, repeats=3, warmup=1)
    sent, padded = int(keep.sum()), E * cap
    return [
        Figure("rows sent, grouped dispatch", sent, "rows", f"of {N * K} assignments"),
        Figure("rows sent, dense (padded) / grouped", padded / sent, "x", "grouped = 1.0"),
        Figure("dispatch time, dense einsum / grouped", t_dense / t_grouped, "x", "grouped = 1.0"),
    ]
