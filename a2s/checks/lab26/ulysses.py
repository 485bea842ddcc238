"""Grader of exercise 26.2: DeepSpeed-Ulysses attention on SimWorld (p = 2, 4).

The learner's ``ulysses_attention(comm, q, k, v, causal)`` gets this rank's sequence rows
(h, n/p, d) of Q, K, V (h divisible by p) and returns its rows of full attention, through an
all-to-all to head sharding (h/p heads, whole sequence), local attention, and an all-to-all
back. The budget, enforced: each rank sends exactly 4 (p - 1)/p of one local tensor's bytes
(three all-to-alls in, one out); an all-gather of the sequence sends p times more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab26.ring import simulated
from a2s.checks.truths import attention

__all__ = ["check_ulysses"]

REFERENCE = (
    "minitorch.parallel.context:ulysses_attention",
    "minitorch.parallel.context:_seq_to_heads",
    "minitorch.parallel.context:_heads_to_seq",
    "minitorch.parallel.context:attention",  # the attention in between
    "minitorch.parallel.context:ring_attention",
    "a2s.checks.truths:attention",  # the grader's own ground truth
)


def _case(seed: int, p: int, h: int, nb: int, d: int, causal: bool, label: str) -> dict:
    gen = np.random.default_rng(seed)
    q, k, v = (gen.standard_normal((h, p * nb, d)) for _ in range(3))
    return {"q": q, "k": k, "v": v, "causal": causal, "p": p, "label": label}


@grader("26.2", blocks=REFERENCE, hand="ranks")
def check_ulysses(ulysses_attention: Callable[..., Any]) -> str:
    """Exercise 26.2: Ulysses equals full attention with 4 (p-1)/p of a tensor sent per rank."""
    cases = [
        _case(1, 2, 2, 2, 3, False, "p=2, 2 heads"),
        _case(2, 2, 4, 3, 2, True, "p=2, 4 heads, causal"),
        _case(3, 4, 4, 2, 3, False, "p=4, 4 heads"),
        _case(4, 4, 8, 1, 2, True, "p=4, 8 heads, causal"),
    ]
    gen = fresh_rng("26.2")
    for _ in range(2):
        p = int(gen.choice([2, 4]))
        h, nb, causal = (
            p * int(gen.integers(1, 3)),
            int(gen.integers(1, 4)),
            bool(gen.integers(0, 2)),
        )
        cases.append(
            _case(
                int(gen.integers(2**31)),
                p,
                h,
                nb,
                3,
                causal,
                fresh(f"p={p}, h={h}, n={p * nb}, causal={causal}"),
            )
        )
    raw = getattr(ulysses_attention, "fn", ulysses_attention)
    sent = 0
    for case in cases:
        p, q = case["p"], case["q"]
        outs = simulated(raw, case, "26.2", REFERENCE)
        tag = f"[{case['label']}]"
        shape = (q.shape[0], q.shape[1] // p, case["v"].shape[-1])
        if any(np.shape(o["out"]) != shape for o in outs):
            raise CheckFailure(
                f"{tag} each rank must return its own sequence rows for every head, shape {shape}."
            )
        got = np.concatenate([o["out"] for o in outs], axis=-2)
        want = attention(q, case["k"], case["v"], case["causal"])
        if not np.allclose(got, want, rtol=0, atol=1e-10):
            raise CheckFailure(
                f"{tag} wrong attention (max error {float(np.max(np.abs(got - want))):.2e}). After "
                "the first all-to-all rank r must hold heads r h/p .. (r+1) h/p - 1 with the "
                "sequence blocks concatenated in RANK order; the second all-to-all must undo "
                "exactly that."
            )
        budget = 4 * (p - 1) * (q.nbytes // p) // p
        for r, o in enumerate(outs):
            total = sum(o["to"].values())
            if total != budget:
                raise CheckFailure(
                    f"{tag} right values, but rank {r} sent {total} bytes where Ulysses sends "
                    f"{budget} = 4 (p-1)/p x {q.nbytes // p} (each all-to-all keeps 1/p of the "
                    "tensor and sends the rest). "
                    + (
                        "An all-gather of the sequence sends every rank the whole of K and V."
                        if total > budget
                        else "Did every head and every row travel?"
                    )
                )
            sent += total
    return (
        f"{len(cases)} cases (p = 2, 4) equal full attention to 1e-10; {sent} bytes sent, "
        "4(p-1)/p of a tensor per rank"
    )
