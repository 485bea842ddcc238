"""Grader of exercise 24.2: head-parallel causal self-attention.

The learner's ``tp_attention_forward(comm, x, wq, wk, wv, wo, bo, heads)`` runs on every rank
of a SimWorld (t = 1, 2, 4) with rank r's ``heads = a / t`` heads: the matching column slices
of W_q, W_k, W_v and row slice of W_o. Ground truth: full multi-head causal attention written
here one (batch, head) at a time. Budget: exactly one all-reduce of ``(s, b, h)``.

Given the learner's ``tp_mlp_forward`` (24.1) as well, the check then runs whole TP layers,
``h = x + attn(LN(x))``, ``y = h + mlp(LN(h))`` (t = 2 and a fresh t = 4), and counts: equal to
the unsharded layer with exactly TWO all-reduces of ``(s, b, h)`` forward. When that MLP alone
does not match the unsharded one, the layer stage is skipped with a note (24.1 grades it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, guarded, plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks as apart
from a2s.checks.lab24._truth import (
    BLOCKS,
    all_reduce_bytes,
    budget,
    expect,
    mlp_case,
    mlp_shards,
    plain_attention,
    plain_mlp,
    run_ranks,
)
from a2s.checks.truths import layer_norm
from minitorch.comm.simworld import SimWorld

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


# the composed layer normalizes between the learner's two blocks, inside the guarded rank:
# that call is the grader's (the default truth guard still blocks it for the learner)
_LAYER_BLOCKS = tuple(b for b in BLOCKS if b != "a2s.checks.truths:layer_norm")


def _layer(
    attn: Any, mlp: Any, t: int, s: int, b: int, h: int, a: int, seed: int, label: str
) -> str:
    """One TP layer forward from the learner's two blocks: values and the all-reduce count."""
    c = mlp_case(seed, s, b, h)
    w = [np.random.default_rng(seed + 1).standard_normal((h, h)) / np.sqrt(h) for _ in range(4)]
    bo, one = 0.1 * c["b2"][::-1].copy(), np.ones(h)
    x = c["x"]
    mid = x + plain_attention(layer_norm(x, one, 0 * one), w, bo, a)
    want = mid + plain_mlp(c, layer_norm(mid, one, 0 * one))
    raw_a, raw_m = (getattr(f, "fn", f) for f in (attn, mlp))

    # the learner's MLP alone first: a 24.1 mistake must not cost 24.2
    def alone_rank(comm: Any) -> Any:
        shards = mlp_shards(c, t, comm.rank)
        return raw_m(comm, mid.copy(), *(v.copy() for v in shards), c["b2"].copy())

    try:
        alone = apart(guarded(alone_rank, "24.2", BLOCKS), SimWorld(t), [()] * t)
    except Exception:  # not implemented, raises, calls the reference: 24.1's business
        return "skipped: your tp_mlp_forward does not pass 24.1 yet"
    got = alone.results
    if not all(
        isinstance(g, np.ndarray)
        and g.shape == mid.shape
        and np.allclose(g, plain_mlp(c, mid), rtol=1e-9, atol=1e-9)
        for g in got
    ) or sum(alone.world.bytes_sent) != all_reduce_bytes(t, x.nbytes):
        return "skipped: your tp_mlp_forward does not pass 24.1 yet"

    def rank(comm: Any) -> Any:
        r = comm.rank
        qkv = [np.split(m, t, axis=1)[r].copy() for m in w[:3]]
        h1 = x + raw_a(
            comm, layer_norm(x, 1.0, 0.0), *qkv, np.split(w[3], t)[r].copy(), bo.copy(), a // t
        )
        return h1 + raw_m(
            comm, layer_norm(h1, 1.0, 0.0), *(v.copy() for v in mlp_shards(c, t, r)), c["b2"].copy()
        )

    try:
        run = apart(guarded(rank, "24.2", _LAYER_BLOCKS), SimWorld(t), [()] * t)
    except (StudentError, CheckFailure) as exc:
        exc.args = (f"[{label}] {exc}",)
        raise
    outs, world = run.results, run.world
    for r, out in enumerate(outs):
        expect(
            label,
            r,
            plain(out, what="the layer's output", case=label),
            want,
            [],
            "y",
            "Your attention and MLP each pass alone; composed they do not?",
        )
    budget(
        label,
        world,
        2 * all_reduce_bytes(t, x.nbytes),
        "A tensor-parallel layer "
        "forward is TWO all-reduces of (s, b, h): one after attention, one after the MLP.",
    )
    return "ok"


@grader("24.2", blocks=BLOCKS, hand="ranks")
def check_head_parallel_attention(
    tp_attention_forward: Callable[..., Any], tp_mlp_forward: Callable[..., Any] | None = None
) -> str:
    """Exercise 24.2: attention sharded by heads equals the full layer; one all-reduce. With
    24.1's ``tp_mlp_forward``: whole TP layers forward, exactly two all-reduces."""
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
            (
                plain_attention(x, w, bo, a, causal=False),
                "Token i attended to later tokens: "
                "mask scores[i, j] for j > i with -inf before the softmax (causal).",
            ),
            (
                plain_attention(x, w, bo, a, scale=1 / np.sqrt(h)),
                "Scale the scores by "
                "1/sqrt(d) with d = h / a the HEAD dimension, not the hidden size.",
            ),
            (
                plain_attention(x, w, bo, a, strict=True),
                "Token i must attend to itself too: "
                "mask j > i only (np.tril with the diagonal, or triu(..., k=1) as the -inf part).",
            ),
            (
                want + (t - 1) * bo,
                "bo was added on every rank before the all-reduce: add it once, after.",
            ),
        ]
        for r, got in enumerate(outs):
            rank_hints = list(hints)
            if t > 1:
                keep = [m.copy() for m in w]
                for m in keep[:3]:
                    m[:, : r * h // t], m[:, (r + 1) * h // t :] = 0, 0
                keep[3][: r * h // t], keep[3][(r + 1) * h // t :] = 0, 0
                partial = plain_attention(x, keep, 0 * bo, a)
                rank_hints += [
                    (
                        partial + bo,
                        "This is rank r's partial sum over its heads: all-reduce "
                        "the output projection (g), then add bo.",
                    ),
                    (partial, "This is rank r's partial sum: all-reduce it."),
                ]
            default = (
                "Each rank: Q, K, V for its `heads` heads of d = columns/heads features, causal "
                "softmax per head, context (s, b, heads*d) @ wo, all-reduce, + bo."
            )
            expect(label, r, got, want, rank_hints, "y", default)
        one = "Attention sharded by heads needs no communication until the output projection: "
        budget(label, world, all_reduce_bytes(t, x.nbytes), one + "ONE all-reduce of (s, b, h).")
    layers = ""
    if tp_mlp_forward is not None:
        t4 = (
            4,
            int(gen.integers(1, 5)),
            int(gen.integers(1, 3)),
            8,
            4,
            int(gen.integers(1, 2**30)),
        )
        runs = [
            _layer(tp_attention_forward, tp_mlp_forward, *case, label=lab)
            for case, lab in (
                ((2, 4, 2, 8, 4, 2425), "layer t=2, s=4, b=2, h=8, heads=4"),
                (t4, fresh(f"layer t=4, s={t4[1]}, b={t4[2]}, h=8, heads=4")),
            )
        ]
        layers = (
            (
                "; whole layers with your 24.1 MLP: 2 all-reduces forward (+ 2 backward: "
                "24.1's dx and attention's)"
            )
            if runs == ["ok", "ok"]
            else f"; layers {runs[0]}"
        )
    return (
        f"{len(specs)} attention layers (t = 1..4, 2 fresh) equal full causal multi-head "
        f"attention; one all-reduce of (s, b, h) each{layers}"
    )
