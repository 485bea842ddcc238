"""Graders of exercises 09.1 (causal scaled dot-product attention) and 09.2 (grouped-query
attention). Ground truth: :func:`a2s.checks.truths.torch_attention`, torch's
``scaled_dot_product_attention`` in float64 with the causal mask (K/V heads repeated for 09.2)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import grader, rng
from a2s.checks.lab09._truth import array_table
from a2s.checks.truths import torch_attention

__all__ = ["check_causal_attention", "check_gqa"]

_A = "minitorch.model.attention"
_GQA_BLOCKS = (
    f"{_A}:repeat_kv",
    f"{_A}:CausalSelfAttention",
    "minitorch.runtime.paged_attention:paged_attention",  # lab 18: causal GQA over a paged cache
    f"{__name__}:_plain",  # the grader's own numpy attention
    f"{__name__}:_tiled",
)
# 09.1 also blocks the course's other causal attentions (labs 08 and 26), which solve it in a call;
# 09.2 may use attention itself (the reference stands in for a failed 09.1)
_BLOCKS = (
    f"{_A}:scaled_dot_product_attention",
    f"{__name__}:_unsafe",
    f"{__name__}:_zero_masked",
    f"{__name__}:_head0",
    "minitorch.parallel.context:attention",
    "minitorch.kernels.attention:naive_attention",
    "minitorch.kernels.flash:flash_attention",
    *_GQA_BLOCKS,
)


def _plain(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scale: float,
    mask: int | None,
    upper: bool = False,
    axis: int = -1,
) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool), k=mask), s, -np.inf)
    if upper:  # the anti-causal mask: keys j >= i
        s = np.where(np.triu(np.ones(s.shape[-2:], bool)), s, -np.inf)
    with np.errstate(invalid="ignore"):
        s = s - s.max(axis=axis, keepdims=True)
        p = np.exp(s)
        return p / p.sum(axis=axis, keepdims=True) @ v


def _unsafe(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = np.where(np.tril(np.ones(s.shape[-2:], bool)), np.exp(s), 0.0)
        return e / e.sum(-1, keepdims=True) @ v


def _same_nans(got: np.ndarray, want: np.ndarray) -> bool:
    g = np.isnan(np.asarray(got, np.float64))
    return bool(g.any()) and g.shape == want.shape and bool(np.array_equal(g, np.isnan(want)))


def _zero_masked(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    s = s * np.tril(np.ones(s.shape[-2:]))
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


_ATT_MISTAKES = (
    Mistake(
        "Subtract each row's maximum score before np.exp: large scores overflow to inf (and "
        "inf / inf is NaN) without it.",
        when=lambda got, q, k, v: _same_nans(got, _unsafe(q, k, v)),
    ),
    Mistake(
        "Masked scores must be -inf, not 0: exp(0) = 1 still gives the future keys weight.",
        _zero_masked,
    ),
    Mistake(
        "Every query sees every key: mask the scores above the diagonal (key j > query i) "
        "to -inf before the softmax.",
        lambda q, k, v: _plain(q, k, v, q.shape[-1] ** -0.5, None),
    ),
    Mistake(
        "Scale the scores by 1/sqrt(d), d = head dim (the last axis of q).",
        lambda q, k, v: _plain(q, k, v, 1.0, 0),
    ),
    Mistake(
        "The scale is 1/sqrt(d), not 1/d.", lambda q, k, v: _plain(q, k, v, 1.0 / q.shape[-1], 0)
    ),
    Mistake(
        "A query attends to its own position too: keep the diagonal (mask only j > i).",
        when=lambda got, q, k, v: bool(np.isnan(got).any()),
    ),
    Mistake(
        "The mask hides the past: query i may see keys j <= i, so -inf goes where j > i "
        "(np.triu(..., k=1) marks the future).",
        lambda q, k, v: _plain(q, k, v, q.shape[-1] ** -0.5, None, upper=True),
    ),
    Mistake(
        "The softmax runs over the keys, the last axis of the scores (each query's weights "
        "sum to 1), not over the queries.",
        lambda q, k, v: _plain(q, k, v, q.shape[-1] ** -0.5, 0, axis=-2),
    ),
)


def _qkv(g: np.random.Generator, b: int, h: int, hkv: int, t: int, d: int) -> tuple:
    return (
        g.standard_normal((b, h, t, d)),
        g.standard_normal((b, hkv, t, d)),
        g.standard_normal((b, hkv, t, d)),
    )


def _random(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    b, h, t, d = (int(x) for x in g.integers([1, 1, 2, 2], [3, 5, 12, 33]))
    return f"random case {i}", _qkv(g, b, h, h, t, d)


_R = rng(91)
ATTENTION = array_table(
    "09.1",
    "attention output",
    truth=torch_attention,
    named=[
        ("one head, T=4, d=8", _qkv(_R, 1, 1, 1, 4, 8)),
        ("2 x 3 heads, T=7, d=16", _qkv(_R, 2, 3, 3, 7, 16)),
        ("T=1", _qkv(_R, 1, 2, 2, 1, 4)),
        # scores of thousands: exp overflows
        ("large scores (|q.k| in the thousands)", tuple(60.0 * a for a in _qkv(_R, 1, 2, 2, 6, 4))),
    ],
    draw=_random,
    fresh=2,
    mistakes=_ATT_MISTAKES,
)


@grader("09.1", blocks=_BLOCKS)
def check_causal_attention(causal_attention: Callable[..., object]) -> str:
    """Exercise 09.1: softmax(q k^T / sqrt(d) + causal mask) v."""
    n = ATTENTION.grade(causal_attention)
    return f"{n} cases equal torch SDPA (is_causal) to 1e-6; T x T scores per head, half masked"


def _tiled(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    rep = q.shape[1] // k.shape[1]
    return _plain(q, np.tile(k, (1, rep, 1, 1)), np.tile(v, (1, rep, 1, 1)), q.shape[-1] ** -0.5, 0)


def _mixed(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    rep = q.shape[1] // k.shape[1]
    s = q.shape[-1] ** -0.5
    tile, repeat = (1, rep, 1, 1), (rep, 1)
    return [
        _plain(q, np.repeat(k, *repeat), np.tile(v, tile), s, 0),
        _plain(q, np.tile(k, tile), np.repeat(v, *repeat), s, 0),
    ]


def _head0(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    kk, vv = (np.broadcast_to(a[:, :1], q.shape[:2] + a.shape[2:]) for a in (k, v))
    return _plain(q, kk, vv, q.shape[-1] ** -0.5, 0)


def _close(got: object, want: np.ndarray) -> bool:
    g = np.asarray(got, np.float64)
    return g.shape == want.shape and bool(np.allclose(g, want, rtol=1e-6, atol=1e-8))


_GQA_MISTAKES = (
    Mistake(
        "Query head h uses K/V head h // n_rep (consecutive query heads share one K/V "
        "head: np.repeat along the head axis), not h % n_kv (np.tile).",
        _tiled,
    ),
    Mistake(
        "K and V must follow the same mapping: query head h reads K and V of head h // n_rep "
        "(one of them was tiled, the other repeated).",
        when=lambda got, q, k, v: any(_close(got, m) for m in _mixed(q, k, v)),
    ),
    Mistake(
        "Every query head used K/V head 0: query head h reads K/V head h // n_rep "
        "(n_rep = H / H_kv), so each K/V head serves its own group.",
        _head0,
    ),
)


def _random_gqa(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    hkv = int(g.integers(1, 4))
    return "random case", _qkv(g, 2, hkv * int(g.integers(2, 4)), hkv, int(g.integers(2, 10)), 8)


_R2 = rng(92)
GQA = array_table(
    "09.2",
    "attention output",
    truth=torch_attention,
    named=[
        ("MHA: 4 query heads, 4 K/V heads", _qkv(_R2, 1, 4, 4, 5, 8)),
        ("GQA: 4 query heads share 2 K/V heads", _qkv(_R2, 2, 4, 2, 6, 8)),
        ("MQA: 6 query heads share 1 K/V head", _qkv(_R2, 1, 6, 1, 5, 4)),
        ("GQA: 8 query heads, 4 K/V heads", _qkv(_R2, 1, 8, 4, 3, 4)),
    ],
    draw=_random_gqa,
    fresh=1,
    mistakes=_GQA_MISTAKES,
)


@grader(
    "09.2",
    blocks=_GQA_BLOCKS,
    uses=(("09.1", "causal_attention", f"{_A}:scaled_dot_product_attention"),),
)
def check_gqa(gqa_attention: Callable[..., object]) -> str:
    """Exercise 09.2: grouped-query attention, q (B, H, T, d), k and v (B, H_kv, T, d)."""
    n = GQA.grade(gqa_attention)
    return f"{n} cases equal torch SDPA (enable_gqa); MQA keeps 1/6 of MHA's K/V cache"
