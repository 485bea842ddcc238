"""Graders of exercises 18.1 (slot mapping) and 18.2 (paged attention equals contiguous).

18.1 is compared with a plain loop over positions; 18.2 with torch's
``scaled_dot_product_attention`` on the contiguous K/V, computed before the student's call.
Every cache slot outside the sequence's context holds large stale values, so reading a slot
past the context length (the rest of the last block) or the wrong block shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake, fresh, run_cases
from a2s.checks.compare import close, looks_like
from a2s.checks.core import CheckFailure, fresh_rng, grader, rng
from a2s.checks.truths import torch_attention

__all__ = ["check_paged_attention", "check_slot_mapping"]

_REF = "minitorch.runtime.paged_attention"
# the course's other attentions (labs 08, 09, 26) answer 18.2 after a gather: blocked too
_OTHER_ATTENTION = (
    "minitorch.model.attention:scaled_dot_product_attention",
    "minitorch.model.attention:repeat_kv",
    "minitorch.model.attention:CausalSelfAttention",
    "minitorch.parallel.context:attention",
    "minitorch.parallel.context:merge_block",
    "minitorch.kernels.attention:naive_attention",
    "minitorch.kernels.flash:flash_attention",
    "minitorch.kernels.flash:flash_attention_forward",
)


def _slots(table: list[int], positions: list[int], bs: int) -> list[int]:
    return [table[p // bs] * bs + p % bs for p in positions]


def _shifted(got: Any, t: list[int], p: list[int], bs: int) -> bool:
    """Whether got maps each position p as position p + 1 would be (where that exists)."""
    ok = [i for i, q in enumerate(p) if (q + 1) // bs < len(t)]
    want = [t[(p[i] + 1) // bs] * bs + (p[i] + 1) % bs for i in ok]
    return bool(ok) and np.asarray(got)[ok].tolist() == want


_SLOT_MISTAKES = (
    Mistake(
        "Off by one: position p sits at offset p % block_size of block table[p // block_size] "
        "(positions and offsets both start at 0).",
        when=lambda got, t, p, bs: (
            any(np.array_equal(np.asarray(got), np.asarray(_slots(t, p, bs)) + d) for d in (-1, 1))
            or _shifted(got, t, p, bs)
        ),
    ),
    Mistake(
        "The block index goes through the block table: physical block = table[p // block_size].",
        when=lambda got, t, p, bs: np.array_equal(np.asarray(got), p),
    ),
    Mistake(
        "Multiply the physical block by block_size: slot = table[p // bs] * bs + p % bs.",
        when=lambda got, t, p, bs: np.array_equal(
            np.asarray(got), [t[q // bs] + q % bs for q in p]
        ),
    ),
)


@grader(
    "18.1",
    blocks=(
        f"{_REF}:slot_mapping",
        "minitorch.runtime.block_manager:BlockManager",
    ),
    hand="parts",
)
def check_slot_mapping(slot_mapping: Callable[..., Any]) -> str:
    """Exercise 18.1: slot_mapping(block_table, positions, block_size) -> (n,) int slots."""
    gen, f = rng(1801), fresh_rng("18.1")
    cases = [
        ("table [7, 2, 5], block 4, positions 0..11", [7, 2, 5], list(range(12)), 4),
        ("block boundaries 3, 4, 7, 8", [7, 2, 5], [3, 4, 7, 8], 4),
        ("block size 1", [4, 0, 3], [0, 1, 2], 1),
        ("one block of 16", [9], [0, 15, 5], 16),
    ]
    table = gen.permutation(64)[:6].tolist()
    cases.append(("random table of 6 blocks of 8", table, gen.integers(0, 48, 20).tolist(), 8))
    bs = int(f.integers(1, 33))
    n_blocks = int(f.integers(1, 9))
    table = f.permutation(200)[:n_blocks].tolist()
    cases.append(
        (fresh(f"{n_blocks} blocks of {bs}"), table, f.integers(0, n_blocks * bs, 25).tolist(), bs)
    )

    def message(case: Case, got: Any, want: Any, hint: str) -> str:
        shown = np.asarray(got).tolist()[:8]
        return f"[{case.label}] slots {shown}..., expected {want[:8]}.... {hint}"

    def read(got: Any, label: str) -> list[int]:
        arr = np.asarray(got)
        if arr.dtype.kind not in "iu":
            raise CheckFailure(
                f"[{label}] slots of dtype {arr.dtype}: return ints (an int array). A float "
                "slot cannot index the cache; use // and %, or .astype(np.int64)."
            )
        return arr.tolist()  # type: ignore[no-any-return]

    n = run_cases(
        slot_mapping,
        [
            Case(
                lbl,
                (t, p, b),
                _slots(t, p, b),
                _SLOT_MISTAKES,
                "slot = table[p // block_size] * block_size + p % block_size.",
            )
            for lbl, t, p, b in cases
        ],
        message=message,
        read=read,
        what="slots",
    )
    return f"{n} block tables mapped exactly (1 fresh); a slot is one multiply-add away"


def _torch_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, shift: bool = True, scale: float | None = None
) -> np.ndarray:
    """Causal attention of the last n_q of L positions, q (n_q, H, d), k and v (L, H_kv, d):
    :func:`a2s.checks.truths.torch_attention` with the heads first (``shift=False``: the
    mistake of masking as if the queries were the first positions; ``scale=1.0``: the
    mistake of not dividing the scores by sqrt(d))."""
    offset = k.shape[0] - q.shape[0] if shift else 0
    qh, kh, vh = (np.swapaxes(a, 0, 1) for a in (q, k, v))  # heads first
    return np.swapaxes(torch_attention(qh, kh, vh, offset=offset, scale=scale), 0, 1)


def _case(g: np.random.Generator, n_q: int, length: int, h: int, hkv: int, bs: int) -> tuple:
    d, n_blocks = 8, -(-length // bs)
    table = g.permutation(n_blocks + 6)[:n_blocks].tolist()
    k_cache = g.standard_normal((n_blocks + 6, bs, hkv, d)) * 50  # stale everywhere
    v_cache = g.standard_normal((n_blocks + 6, bs, hkv, d)) * 50
    k, v = g.standard_normal((length, hkv, d)), g.standard_normal((length, hkv, d))
    slots = _slots(table, list(range(length)), bs)
    k_cache.reshape(-1, hkv, d)[slots] = k
    v_cache.reshape(-1, hkv, d)[slots] = v
    q = g.standard_normal((n_q, h, d))
    return q, k_cache, v_cache, table, length, k, v


@grader(
    "18.2",
    blocks=(
        f"{_REF}:paged_attention",
        f"{_REF}:gather_kv",
        f"{_REF}:PagedKVCache",
        "minitorch.runtime.paged_model:PagedGPT",
        *_OTHER_ATTENTION,
    ),
    uses=(("18.1", "slot_mapping", f"{_REF}:slot_mapping"),),
    hand="parts",
)
def check_paged_attention(paged_attention: Callable[..., Any]) -> str:
    """Exercise 18.2: paged_attention(q, k_cache, v_cache, block_table, context_len)."""
    gen, f = rng(1802), fresh_rng("18.2")
    shapes = [
        ("one decode query, 9 tokens in blocks of 4, MHA", 1, 9, 4, 4, 4),
        ("decode, GQA 4 query heads / 2 K/V heads", 1, 11, 4, 2, 4),
        ("a prefill chunk of 5 queries, 13 tokens", 5, 13, 4, 4, 4),
        ("context fills its blocks exactly (8 of 4)", 2, 8, 2, 1, 4),
        ("block size 1, MQA", 3, 6, 4, 1, 1),
    ]
    cases = [(lbl, _case(gen, *s)) for lbl, *s in shapes]
    n_q, length = int(f.integers(1, 6)), int(f.integers(6, 40))
    cases.append(
        (
            fresh(f"{n_q} queries over {length} tokens"),
            _case(f, n_q, length, 4, int(f.choice([1, 2, 4])), int(f.choice([2, 4, 8]))),
        )
    )
    for label, (q, kc, vc, table, length, k, v) in cases:
        want = _torch_attention(q, k, v)
        got = paged_attention(q.copy(), kc.copy(), vc.copy(), list(table), length)
        hint = "Gather the first context_len slots through the table, then causal attention."
        bs = kc.shape[1]
        full = len(table) * bs
        if full > length:
            kk = kc.reshape(-1, *kc.shape[2:])[_slots(table, list(range(full)), bs)]
            vv = vc.reshape(-1, *vc.shape[2:])[_slots(table, list(range(full)), bs)]
            if looks_like(got, _torch_attention(q, kk, vv)):
                hint = (
                    "You attended to every slot of the last block: only the first "
                    "context_len tokens hold this sequence's K/V (the rest are stale)."
                )
        rep = q.shape[1] // k.shape[1]
        if (
            rep > 1
            and k.shape[1] > 1
            and looks_like(
                got, _torch_attention(q, np.tile(k, (1, rep, 1)), np.tile(v, (1, rep, 1)))
            )
        ):
            hint = "GQA: query head h reads K/V head h // (H / H_kv) (np.repeat, not np.tile)."
        if looks_like(got, _torch_attention(q, k, v, scale=1.0)):
            hint = "Scale the scores by 1 / sqrt(d) before the softmax."
        if looks_like(got, _torch_attention(q, k, v, shift=False)):
            hint = (
                "The queries are the LAST n_q positions (context_len - n_q ..): query i "
                "sees keys 0 .. context_len - n_q + i."
            )
        close(got, want, case=label, what="attention output", hint=hint, rtol=1e-7)
    return (
        f"{len(cases)} paged caches (1 fresh) equal contiguous attention (torch SDPA); "
        "stale slots never read"
    )
