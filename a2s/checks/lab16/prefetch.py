"""Grader of exercise 16.5: FSDP-style parameter prefetch with a memory budget.

The learner's ``prefetch_schedule(fwd_times, param_bytes, alpha, beta)`` returns, per layer,
(gather start, gather end, compute start, compute end). The check verifies the schedule is
possible (durations, a layer computes after its gather, each stream runs in order without
overlap), then enforces both budgets: **at most 2 layers' parameters held at once** (from
gather start to compute end) and a forward no slower than the best schedule under that
limit (``_truth.prefetch_rows``). Prefetching everything is fast but breaks the memory
budget; gathering on demand keeps memory low but breaks the time budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader
from a2s.checks.lab16._truth import intervals, prefetch_rows

__all__ = ["check_prefetch", "held_peak"]

_R = "minitorch.runtime.overlap"
LIMIT = 2


def held_peak(rows: np.ndarray) -> int:
    """Most layers held at once, intervals [gather start, compute end) half-open."""
    points = sorted([(float(r[0]), 1) for r in rows] + [(float(r[3]), -1) for r in rows])
    live = peak = 0
    for _, d in points:
        live += d
        peak = max(peak, live)
    return peak


_TEACH = [
    ("compute-bound", ([2.0] * 6, [100] * 6, 0.5, 0.01)),
    ("comm-bound", ([1.0] * 5, [200] * 5, 0.5, 0.01)),
    ("uneven", ([1.0, 3.0, 1.0, 1.0, 2.0], [300, 100, 400, 100, 200], 0.2, 0.01)),
]


@grader(
    "16.5",
    blocks=(
        f"{_R}:prefetch_intervals",
        f"{_R}:prefetch_forward",
        "minitorch.runtime.streams:Device",
        "a2s.checks.lab16._truth:prefetch_rows",
    ),
    hand="budget",
)
def check_prefetch(prefetch_schedule: Callable[..., Any]) -> str:
    """Exercise 16.5: overlap layer i+1's all-gather with layer i's compute, 2 layers held."""
    cases = list(_TEACH)
    gen = fresh_rng("16.5")
    for i in range(5):
        n = int(gen.integers(2, 10))
        cases.append(
            (
                fresh(f"random model {i} ({n} layers)"),
                (
                    [float(x) for x in gen.integers(1, 6, n)],
                    [int(x) for x in gen.integers(50, 400, n)],
                    float(gen.uniform(0.1, 1.0)),
                    0.01,
                ),
            )
        )
    saved = []
    for label, (f, p, a, b) in cases:
        n = len(f)
        rows = intervals(
            prefetch_schedule(f, p, a, b),
            n,
            4,
            label,
            "(gather start, gather end, compute start, compute end) per layer",
        )
        gs, ge, cs, ce = rows.T
        tol = 1e-9 * (1 + float(np.abs(rows).max()))
        comm = np.array([a + b * x for x in p])
        checks = [
            (np.allclose(ge - gs, comm, atol=tol), "a gather takes alpha + beta * param_bytes"),
            (np.allclose(ce - cs, f, atol=tol), "a layer's compute takes fwd_times[i]"),
            (bool(np.all(cs >= ge - tol)), "a layer computes only after its gather ended"),
            (
                bool(np.all(gs[1:] >= ge[:-1] - tol)) and gs[0] >= -tol,
                "the comm stream runs gathers in layer order, one at a time, from t = 0",
            ),
            (bool(np.all(cs[1:] >= ce[:-1] - tol)), "layers compute in order, one at a time"),
        ]
        for ok, rule in checks:
            assert_true(ok, f"[{label}] impossible schedule: {rule}.")
        peak = held_peak(rows)
        assert_true(
            peak <= LIMIT,
            f"[{label}] memory budget: {peak} layers' parameters held at "
            f"once (gather start to compute end), the limit is {LIMIT}. Gather layer i "
            "only after layer i-2 has finished computing (and is freed).",
        )
        best = prefetch_rows(f, p, a, b)[-1][3]
        serial = prefetch_rows(f, p, a, b, depth=0)[-1][3]
        why = " You gather on demand: no prefetch." if np.isclose(ce[-1], serial) else ""
        assert_true(
            ce[-1] <= best + tol,
            f"[{label}] time budget: your forward ends at "
            f"{ce[-1]:.6g}, prefetching reaches {best:.6g}.{why} Start gather i+1 as "
            "soon as the comm stream is free and layer i-1 is freed.",
        )
        saved.append(serial / best)
    return (
        f"{len(cases)} forwards (5 fresh) within 2 layers held, {min(saved):.2f}-"
        f"{max(saved):.2f}x faster than gathering on demand"
    )
