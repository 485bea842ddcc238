"""Grader of exercise 24.2: head-parallel causal self-attention.

The learner's ``tp_attention_forward(comm, x, wq, wk, wv, wo, bo, heads)`` runs on every rank
of a SimWorld (t = 1, 2, 4) with rank r's ``heads = a / t`` heads: the matching column slices
of W_q, W_k, W_v and row slice of W_o. Ground truth: full multi-head causal attention written
here one (batch, head) at a time. Budget: exactly one all-reduce of ``(s, b, h)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitorch.checks.cases import fresh
from minitorch.checks.core import fresh_rng, grader
from minitorch.checks.lab24._world import (
    BLOCKS,
    all_reduce_bytes,
    budget,
    expect,
    plain_attention,
    run_ranks,
)

__all__ = ["check_head_parallel_attention"]

_TEACHING = [
    (1, 3, 1, 4, 2, 2421),
    (2, 4, 2, 8, 4, 2422),
    (4, 5, 1, 8, 4, 2423),
    (2, 1, 2, 4, 2, 2424),
]


def _fresh_case(gen: np.random.Generator) -> tuple[int, ...]:
    t = int(gen.choice([2, 4]))
    a = t * int(gen.integers(1, 3))
    return (
        t,
        int(gen.integers(2, 6)),
        int(gen.integers(1, 3)),
        2 * a,
        a,
        int(gen.integers(1, 2**31)),
    )


@grader("24.2", blocks=BLOCKS)
def check_head_parallel_attention(tp_attention_forward: Callable[..., Any]) -> str:
    """Exercise 24.2: attention sharded by heads equals the full layer; one all-reduce."""
    gen = fresh_rng("24.2")
    specs = list(_TEACHING) + [_fresh_case(gen) for _ in range(2)]
    for i, (t, s, b, h, a, seed) in enumerate(specs):
        label = f"t={t}, s={s}, b={b}, h={h}, heads={a}"
        label = fresh(label) if i >= len(_TEACHING) else label
        g = np.random.default_rng(seed)
        x = g.standard_normal((s, b, h))
        w = [g.standard_normal((h, h)) / np.sqrt(h) for _ in range(4)]
        bo = g.standard_normal(h)
        args = []
        for r in range(t):
            qkv = [np.split(m, t, axis=1)[r] for m in w[:3]]
            args.append((x, *qkv, np.split(w[3], t)[r], bo, a // t))
        outs, world = run_ranks(tp_attention_forward, "24.2", t, args, label, "attention output")
        want = plain_attention(x, w, bo, a)
        hints = [
            (plain_attention(x, w, bo, a, causal=False), "Token i attended to later tokens: "
             "mask scores[i, j] for j > i with -inf before the softmax (causal)."),
            (plain_attention(x, w, bo, a, scale=1 / np.sqrt(h)), "Scale the scores by "
             "1/sqrt(d) with d = h / a the HEAD dimension, not the hidden size."),
            (want + (t - 1) * bo, "bo was added on every rank before the all-reduce: add it "
             "once, after."),
        ]  # fmt: skip
        for r, got in enumerate(outs):
            rank_hints = list(hints)
            if t > 1:
                keep = [m.copy() for m in w]
                for m in keep[:3]:
                    m[:, : r * h // t], m[:, (r + 1) * h // t :] = 0, 0
                keep[3][: r * h // t], keep[3][(r + 1) * h // t :] = 0, 0
                partial = plain_attention(x, keep, 0 * bo, a)
                rank_hints += [
                    (partial + bo, "This is rank r's partial sum over its heads: all-reduce "
                     "the output projection (g), then add bo."),
                    (partial, "This is rank r's partial sum: all-reduce it."),
                ]  # fmt: skip
            default = (
                "Each rank: Q, K, V for its `heads` heads of d = columns/heads features, causal "
                "softmax per head, context (s, b, heads*d) @ wo, all-reduce, + bo."
            )
            expect(label, r, got, want, rank_hints, "y", default)
        one = "Attention sharded by heads needs no communication until the output projection: "
        budget(label, world, all_reduce_bytes(t, x.nbytes), one + "ONE all-reduce of (s, b, h).")
    return (
        f"{len(specs)} attention layers (t = 1..4, 2 fresh) equal full causal multi-head "
        "attention; one all-reduce of (s, b, h) each"
    )
