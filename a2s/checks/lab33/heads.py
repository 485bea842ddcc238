"""Grader of exercise 33.3: what removing attention heads saves, in closed form.

``head_savings(d_model, n_head, n_kv_head, removed, seq_len, itemsize)`` returns
``(linear_flops, weight_bytes, kv_bytes, attention_flops)``: per token, the FLOPs of the
projections and their weight bytes removed, the KV-cache bytes per token, and the attention
core FLOPs over one causal sequence of ``seq_len``. The truth counts the rows and columns
that actually vanish (``_truth.head_savings_loop``): a K/V head only once every query head
of its group is removed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import run_apart
from a2s.checks.lab33._truth import head_savings_loop
from a2s.checks.table import Table

__all__ = ["HEADS", "check_head_savings"]

_S = "minitorch.model.pruning_structured"


def _truth(c: int, h: int, kv: int, removed: list[int], t: int, s: int) -> tuple[int, ...]:
    return head_savings_loop(c, h, kv, removed, t, s)


def _with(c: int, h: int, kv: int, removed: list[int], t: int, s: int, **change: Any) -> Any:
    lin, wb, kvb, core = _truth(c, h, kv, removed, t, s)
    d, nq = c // h, len(set(removed))
    nkv = kvb // (2 * d * s)
    if "kv_per_head" in change:  # a K/V head removed with every query head
        nkv = nq * kv // h if kv == h else nq
        return (4 * c * d * (nq + nkv), 2 * c * d * (nq + nkv) * s, 2 * d * nkv * s, core)
    if "no_kv" in change:
        return (4 * c * d * nq, 2 * c * d * nq * s, 0, core)
    if "square" in change:
        return (lin, wb, kvb, 4 * d * t * t * nq)
    if "interleaved" in change:  # group g taken as the heads g, g + kv, g + 2 kv, ...
        gone = set(removed)
        groups = sum(all(q in gone for q in range(g, h, kv)) for g in range(kv))
        mats = nq + groups
        return (4 * c * d * mats, 2 * c * d * mats * s, 2 * d * groups * s, core)
    if "no_o" in change:
        return (lin - 2 * c * d * nq, wb - c * d * nq * s, kvb, core)
    return (lin, wb, kvb, core)


_MISTAKES = (
    Mistake(
        "With grouped-query attention a K/V head serves n_head / n_kv_head query heads: it "
        "goes (and its KV cache with it) only when EVERY query head of its group is removed.",
        answer=lambda *a: _with(*a, kv_per_head=True),
    ),
    Mistake(
        "Once a whole group is gone its K/V head goes too: its rows of k_proj and v_proj "
        "(4 C d FLOPs, 2 C d s bytes) and 2 d s KV-cache bytes per token.",
        answer=lambda *a: _with(*a, no_kv=True),
    ),
    Mistake(
        "A K/V group is CONSECUTIVE query heads: head h is in group h * n_kv_head // n_head "
        "(rounded down), not h % n_kv_head; group g holds heads g rep .. g rep + rep - 1.",
        answer=lambda *a: _with(*a, interleaved=True),
    ),
    Mistake(
        "Causal attention: query t attends to t keys, so a head's core is "
        "sum_t 4 d t = 2 d T (T + 1) FLOPs, not 4 d T^2.",
        answer=lambda *a: _with(*a, square=True),
    ),
    Mistake(
        "A query head is d rows of q_proj AND d columns of o_proj: 4 C d FLOPs and 2 C d s "
        "bytes per head.",
        answer=lambda *a: _with(*a, no_o=True),
    ),
)


def _read(got: Any, label: str) -> tuple[int, ...]:
    if not (isinstance(got, (tuple, list)) and len(got) == 4):
        raise CheckFailure(
            f"[{label}] return (linear_flops, weight_bytes, kv_bytes, attention_flops), "
            f"got {got!r}."
        )
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in got):
        raise CheckFailure(f"[{label}] return four integers (counts), got {got!r}: use //.")
    return tuple(int(v) for v in got)


def _label(c: int, h: int, kv: int, removed: list[int], t: int, s: int) -> str:
    return f"C {c}, {h} heads / {kv} KV heads, remove {removed}, T {t}, {s}-byte weights"


def _row(*a: Any) -> tuple[str, tuple[Any, ...]]:
    return _label(*a), a


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    kv = int(g.choice([1, 2, 4]))
    h = kv * int(g.choice([1, 2, 4]))
    c = h * int(g.choice([8, 16, 64]))
    removed = sorted(int(v) for v in g.choice(h, int(g.integers(1, h + 1)), replace=False))
    return _row(c, h, kv, removed, int(g.integers(1, 300)), int(g.choice([1, 2, 4])))


HEADS = Table(
    "33.3",
    truth=_truth,
    named=[
        _row(64, 4, 4, [1], 16, 4),
        _row(64, 4, 2, [0], 16, 4),
        _row(64, 4, 2, [0, 2], 16, 4),
        _row(64, 4, 2, [0, 1], 16, 2),
        _row(128, 8, 2, [0, 1, 2, 3, 5], 100, 2),
        _row(32, 2, 1, [0, 1], 1, 4),
    ],
    draw=_draw,
    seeded=4,
    fresh=3,
    mistakes=_MISTAKES,
    hint="Count what vanishes: per removed query head d rows of q_proj and d columns of "
    "o_proj; per fully removed group its d rows of k_proj and of v_proj; 2 FLOPs per "
    "weight per token; 2 d T (T + 1) core FLOPs per removed query head.",
    read=_read,
    what="head_savings",
    message="[{label}] head_savings returned {got}, removing those rows and columns saves "
    "{want}.{hint}",
    # apart: the learner's function runs in a forked child; the case runner's frames stay here
    prepare=lambda f: lambda *args: run_apart(f, *args),
)


@grader("33.3", blocks=(_S,))
def check_head_savings(head_savings: Callable[..., Any]) -> str:
    """Exercise 33.3: (linear FLOPs, weight bytes, KV bytes, core FLOPs) saved by heads."""
    n = HEADS.grade(head_savings)
    lin, wb, kvb, _ = _truth(4096, 32, 8, [0, 1, 2, 3], 4096, 2)
    return (
        f"{n} cases match the rows and columns that vanish; 4 of 32 heads (one whole GQA "
        f"group) of a 4096-wide layer save {wb / 2**20:.0f} MiB of FP16 weights, "
        f"{lin / 1e6:.0f} MFLOP and {kvb} KV bytes per token"
    )
