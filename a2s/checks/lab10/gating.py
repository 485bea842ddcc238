"""Graders of exercises 10.1 (top-k gating) and 10.2 (capacity slots and dropped tokens).

Ground truth: torch's softmax for the probabilities, and plain loops written here for the
ranking (ties to the lower expert) and for GShard's slot priority (every first choice, in token
order, before any second choice). Capacity is enforced: no expert may keep more than its slots,
and the number of dropped assignments must be exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call
from a2s.checks.core import (
    CheckFailure,
    assert_close,
    assert_true,
    fresh_rng,
    grader,
)
from a2s.checks.core import plain as _plain

__all__ = [
    "assert_ints_equal",
    "check_assign_slots",
    "check_top_k_gating",
    "loop_slots",
    "loop_top_k",
]

_R = "minitorch.model.moe_router"
_BLOCKS = (
    f"{_R}:top_k_gating",
    f"{_R}:assign_slots",
    f"{_R}:router_probs",
    "minitorch.model.moe:MoE",
    "minitorch.parallel.expert:global_positions",  # lab 26: the slots, over ranks
    f"{__name__}:loop_top_k",  # the grader's own ground truth
    f"{__name__}:loop_slots",
)


def assert_ints_equal(
    actual: object, expected: object, *, case: str, what: str, hint: str = ""
) -> None:
    """Exact equality of integer (or boolean) arrays, the first wrong row shown in decimal
    (expert ids, slots and orders are counts, not bit patterns)."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        raise CheckFailure(f"[{case}] {what} has shape {a.shape}, expected {e.shape}.")
    if a.dtype.kind not in "iub" and e.dtype.kind in "iub":
        raise CheckFailure(f"[{case}] {what} must be integers, got dtype {a.dtype}.")
    bad = a != e
    if not bad.any():
        return
    first = int(np.argwhere(bad)[0][0])
    where = (
        f"at index {first}: got {a[first].tolist()}, expected {e[first].tolist()}"
        if a.ndim == 1
        else f"first in row {first}: got {a[first].tolist()}, expected {e[first].tolist()}"
    )
    raise CheckFailure(
        f"[{case}] {what} differ in {int(bad.sum())} of {bad.size} entries; {where}."
        + (f" {hint}" if hint else "")
    )


def loop_top_k(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Experts ranked by probability (ties: lower index first), gates renormalized for k > 1."""
    p = torch.softmax(torch.from_numpy(logits.astype(np.float64)), dim=-1).numpy()
    experts = np.array([sorted(range(p.shape[1]), key=lambda i: (-row[i], i))[:k] for row in p])
    gates = np.take_along_axis(p, experts, axis=1)
    return experts, gates / gates.sum(axis=1, keepdims=True) if k > 1 else gates


def loop_slots(experts: np.ndarray, e: int, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    n, k = experts.shape
    position, filled = np.zeros((n, k), dtype=np.int64), [0] * e
    for j in range(k):
        for t in range(n):
            position[t, j] = filled[experts[t, j]]
            filled[experts[t, j]] += 1
    return position, position < capacity


def _pair(result: object, case: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    got = _plain(result, what=what, case=case)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise CheckFailure(f"[{case}] return a pair {what}, got {got!r:.80}")
    return np.asarray(got[0]), np.asarray(got[1])


def _gating_cases() -> list[tuple[str, np.ndarray, int]]:
    named = [
        (
            "3 tokens, 4 experts, top-1",
            np.log([[0.1, 0.6, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.4, 0.1]]),
            1,
        ),
        (
            "the same tokens, top-2",
            np.log([[0.1, 0.6, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.4, 0.1]]),
            2,
        ),
        ("a tie: experts 0 and 2 equal", np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 2.0]]), 2),
        ("logits of 1e3 (overflow without the shift)", np.array([[1e3, 999.0, -1e3]]), 2),
        (
            "rows far apart: one near 1e3, one all near -1e3 (a shift per row)",
            np.array([[1e3, 999.0, 998.0], [-1e3, -1001.0, -1003.0]]),
            2,
        ),
        ("top-3 of 8", np.random.default_rng(101).standard_normal((16, 8)) * 3, 3),
    ]
    g = fresh_rng("10.1")
    return named + [
        (fresh(f"random case {i}"), g.standard_normal((int(g.integers(1, 40)), 6)) * 2, i % 2 + 1)
        for i in range(3)
    ]


@grader("10.1", blocks=_BLOCKS, hand="parts")
def check_top_k_gating(top_k_gating: Callable[..., object]) -> str:
    """Exercise 10.1: (experts, gates) of top-k routing."""
    cases = _gating_cases()
    for case, logits, k in cases:
        experts, gates = _pair(call(top_k_gating, logits.copy(), k), case, "(experts, gates)")
        want_e, want_g = loop_top_k(logits, k)
        if gates.dtype.kind in "fc" and not np.all(np.isfinite(gates)):
            assert_true(
                False,
                f"[{case}] your gates hold inf/nan: exp overflows for large logits; subtract "
                "each row's max before exp (softmax is unchanged).",
            )
        p = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
        flipped = want_e[:, ::-1]
        if k > 1 and experts.shape == want_e.shape and np.array_equal(experts, flipped):
            assert_true(False, f"[{case}] your experts are in ascending order: best first.")
        assert_ints_equal(
            experts,
            want_e,
            case=case,
            what="experts",
            hint="Rank by probability, highest first; on a tie the lower expert index wins "
            "(np.argsort(-p, kind='stable')).",
        )
        unnorm = np.take_along_axis(p, want_e, axis=1)
        hint = (
            "gate = the softmax probability of the chosen expert (Switch: p_e, not 1, not a logit)"
        )
        if k > 1 and gates.shape == unnorm.shape and np.allclose(gates, unnorm):
            hint = "top-k with k > 1 renormalizes the k gates to sum to 1 (GShard)."
        elif k == 1 and gates.shape == want_g.shape and np.allclose(gates, 1.0):
            hint = "top-1 keeps the probability p_e as gate (Switch); renormalizing gives 1."
        assert_close(gates, want_g, case=case, rtol=1e-9, atol=1e-12, what="gates", hint=hint)
    return f"{len(cases)} routings equal torch's softmax ranked by a plain loop (top-1, 2, 3)"


def _slot_cases() -> list[tuple[str, np.ndarray, int, int]]:
    hand = np.array([[0], [0], [1], [0], [0]])
    top2 = np.array([[0, 1], [0, 2], [1, 0], [0, 1]])
    g = np.random.default_rng(102)
    skewed = np.stack([g.permutation(5)[:2] if t % 3 else [0, 1] for t in range(30)])
    named = [
        ("hand case: 4 tokens want expert 0, capacity 2", hand, 2, 2),
        ("top-2: first choices before second choices", top2, 3, 2),
        ("capacity 0", hand, 2, 0),
        ("an idle expert", np.array([[0], [2], [0]]), 3, 1),
        ("30 tokens, expert 0 popular, capacity 8", skewed, 5, 8),
    ]
    fg = fresh_rng("10.2")
    for i in range(3):
        n, e, k = int(fg.integers(1, 50)), int(fg.integers(2, 7)), 1 + i % 2
        experts = np.stack([fg.permutation(e)[:k] for _ in range(n)])
        named.append((fresh(f"random case {i}"), experts, e, int(fg.integers(0, n + 1))))
    return named


@grader("10.2", blocks=_BLOCKS, hand="parts")
def check_assign_slots(assign_slots: Callable[..., object]) -> str:
    """Exercise 10.2: (position, keep) of each assignment under a capacity."""
    cases = _slot_cases()
    drops = 0
    for case, experts, e, cap in cases:
        position, keep = _pair(call(assign_slots, experts.copy(), e, cap), case, "(position, keep)")
        want_pos, want_keep = loop_slots(experts, e, cap)
        n, k = experts.shape
        token_major = loop_slots(experts.reshape(n * k, 1), e, cap)[0].reshape(n, k)
        hint = "A token's slot is the number of earlier assignments to the same expert."
        if k > 1 and position.shape == want_pos.shape and np.array_equal(position, token_major):
            hint = (
                "Priority: every token's first choice, in token order, then the second "
                "choices (GShard): a token's second choice never evicts another's first."
            )
        assert_ints_equal(position, want_pos, case=case, what="position", hint=hint)
        assert_true(
            keep.shape == want_keep.shape and keep.dtype.kind in "biu",
            f"[{case}] keep must be a boolean array of shape {want_keep.shape}.",
        )
        kept = np.bincount(experts[keep.astype(bool)], minlength=e)
        assert_true(
            int(kept.max(initial=0)) <= cap,
            f"[{case}] an expert keeps {int(kept.max(initial=0))} assignments, over its capacity "
            f"of {cap}: keep = position < capacity.",
        )
        assert_ints_equal(
            keep,
            want_keep,
            case=case,
            what="keep",
            hint=f"exactly {int((~want_keep).sum())} dropped: keep the slots 0 .. capacity - 1.",
        )
        drops += int((~want_keep).sum())
    return f"{len(cases)} routings: capacity respected, {drops} dropped assignments exact"
