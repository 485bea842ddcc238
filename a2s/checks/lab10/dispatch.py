"""Grader of exercise 10.5: dispatch and combine as an all-to-all permutation.

Ground truth is a plain loop over experts and tokens written here. The point is enforced:
the send buffer holds exactly the kept assignments grouped by expert (no padding to the
capacity, so the bytes sent to expert i are exactly counts_i * d * itemsize), ``order`` is a
permutation of the kept assignment ids, and combine inverts dispatch (identity experts with
gates 1 give every kept token back, in its place).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import call, close
from a2s.checks.core import assert_true, fmt_bytes, fresh_rng, grader
from a2s.checks.core import plain as _plain
from a2s.checks.lab10.gating import assert_ints_equal, loop_slots, loop_top_k

__all__ = ["check_dispatch_combine", "loop_dispatch"]

_D = "minitorch.model.moe_dispatch"
_BLOCKS = (
    f"{_D}:dispatch_order",
    f"{_D}:dispatch",
    f"{_D}:combine",
    "minitorch.model.moe:MoE",
    f"{__name__}:loop_dispatch",  # the grader's own ground truth
    "a2s.checks.lab10.gating:loop_slots",
    "a2s.checks.lab10.gating:loop_top_k",
)


def loop_dispatch(experts: np.ndarray, keep: np.ndarray, e: int) -> tuple[list[int], list[int]]:
    """(order, counts): for each expert in turn, the kept flat ids token * k + j in token order."""
    n, k = experts.shape
    order, counts = [], []
    for i in range(e):
        ids = [t * k + j for t in range(n) for j in range(k) if keep[t, j] and experts[t, j] == i]
        order += ids
        counts.append(len(ids))
    return order, counts


def _same(got: object, want: np.ndarray) -> bool:
    try:
        g = np.asarray(_plain(got, what="combine"), dtype=np.float64)
    except Exception:
        return False
    return g.shape == want.shape and bool(np.allclose(g, want))


def _cases() -> list[tuple[str, int, int, int, int, float, int]]:
    """(label, tokens, d, experts, k, capacity factor, seed)."""
    named = [
        ("8 tokens, 3 experts, top-1, nothing dropped", 8, 2, 3, 1, 4.0, 1),
        ("12 tokens, top-1, cf 1.0: drops", 12, 3, 4, 1, 1.0, 2),
        ("top-2, cf 1.25", 16, 4, 4, 2, 1.25, 3),
        ("an expert nobody picks", 6, 2, 8, 1, 1.0, 4),
        ("64 tokens, top-2, cf 0.5", 64, 8, 8, 2, 0.5, 5),
    ]
    g = fresh_rng("10.5")
    for i in range(3):
        named.append(
            (
                fresh(f"random case {i}"),
                int(g.integers(1, 50)),
                int(g.integers(1, 6)),
                int(g.integers(2, 7)),
                1 + i % 2,
                float(g.choice([0.5, 1.0, 1.5])),
                int(g.integers(0, 2**31)),
            )
        )
    return named


def _route(n: int, e: int, k: int, cf: float, seed: int):  # type: ignore[no-untyped-def]
    logits = np.random.default_rng(seed).standard_normal((n, e)) * 2
    logits[:, 0] += 1.0  # expert 0 popular, so capacity drops some
    experts, gates = loop_top_k(logits, k)
    cap = int(np.ceil(k * n * cf / e))
    return experts, gates, loop_slots(experts, e, cap)[1], cap


def _order_hint(order: np.ndarray, experts: np.ndarray) -> str:
    """'Stable' only for an order grouped by expert whose ids inside a group are not sorted
    (an unstable sort); otherwise the rule."""
    owner = experts.reshape(-1)[np.asarray(order).astype(np.int64)]
    if np.all(np.diff(owner) >= 0):
        return (
            "Grouped by expert, but inside an expert the ids are not in token order: sort "
            "stably (np.argsort(..., kind='stable')), so ties keep their original order."
        )
    return "Group by expert (all of expert 0 first), token order within an expert."


@grader("10.5", blocks=_BLOCKS, hand="parts")
def check_dispatch_combine(dispatch: Callable[..., object], combine: Callable[..., object]) -> str:
    """Exercise 10.5: dispatch(x, experts, keep, E) -> (sent, counts, order); combine inverts."""
    cases = _cases()
    sent_bytes = padded = 0
    for case, n, d, e, k, cf, seed in cases:
        experts, gates, keep, cap = _route(n, e, k, cf, seed)
        x = np.random.default_rng(seed + 1).standard_normal((n, d))
        got = _plain(call(dispatch, x.copy(), experts.copy(), keep.copy(), e), case=case)
        assert_true(
            isinstance(got, tuple) and len(got) == 3, f"[{case}] return (sent, counts, order)."
        )
        sent, counts, order = (np.asarray(a) for a in got)
        want_order, want_counts = loop_dispatch(experts, keep, e)
        m = len(want_order)
        rows = sent.shape[0] if sent.ndim else 0
        assert_true(
            sent.ndim == 2 and rows == m,
            f"[{case}] the send buffer has {rows} rows; the kept assignments are {m}. "
            + (
                "Send only kept rows: padding every expert to its capacity "
                f"({e} x {cap} = {e * cap} rows) sends bytes that carry nothing, and dropped "
                "tokens are not sent at all."
                if rows > m
                else "Every kept assignment (keep[t, j] True) sends its token's row once."
            ),
        )
        assert_ints_equal(
            counts,
            np.array(want_counts),
            case=case,
            what="counts per expert",
            hint="counts[i] = kept assignments routed to expert i.",
        )
        assert_true(
            sorted(order.tolist()) == sorted(want_order),
            f"[{case}] order must be a permutation of the kept assignment ids token * k + j.",
        )
        assert_ints_equal(
            order,
            np.array(want_order, dtype=np.int64),
            case=case,
            what="order",
            hint=_order_hint(order, experts),
        )
        close(
            sent,
            x[np.array(want_order, dtype=np.int64) // k].reshape(m, d),
            case=case,
            what="sent rows",
            hint="sent[r] = x[order[r] // k].",
        )
        back = call(combine, sent.copy(), order.copy(), np.ones_like(gates), n)
        lost = np.zeros((n, d))
        lost[np.array(want_order, dtype=np.int64) // k] += sent  # y[rows] += v: last repeat wins
        repeats = len(set(np.array(want_order) // k)) < m
        hint = (
            "y[rows] += values (or y[rows] = values) writes a repeated row once: a token kept "
            "twice (top-2) lost one of its rows; np.add.at(y, rows, values) adds them all."
            if repeats and _same(back, lost)
            else "Combine is the inverse permutation: row r goes back to token order[r] // k, "
            "and a token's k rows add up."
        )
        close(
            back,
            x * keep.sum(axis=1, keepdims=True),
            case=case,
            what="combine(dispatch(x))",
            hint=hint,
        )
        y_e = np.random.default_rng(seed + 2).standard_normal((m, d))
        want = np.zeros((n, d))
        for r, fid in enumerate(want_order):
            want[fid // k] += gates[fid // k, fid % k] * y_e[r]
        close(
            call(combine, y_e.copy(), order.copy(), gates.copy(), n),
            want,
            case=case,
            what="combine with gates",
            hint="row r times gates[t, j] of id t * k + j.",
        )
        sent_bytes += m * d * 8
        padded += e * cap * d * 8
    return (
        f"{len(cases)} routings: inverse restores order; sent {fmt_bytes(sent_bytes)} of kept "
        f"rows where a capacity-padded dispatch sends {fmt_bytes(padded)}"
    )
