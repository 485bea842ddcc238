"""Grader of exercise 12.6: prefix tuning's trainable parameters, AdamW bytes and KV bytes.

Ground truth: a plain loop over the layers and K/V heads. Each layer holds P keys and P values
of ``head_dim`` numbers per K/V head (GQA: ``n_kv_heads``, not the query heads); AdamW keeps
two moments per trainable number; at inference every sequence's KV cache holds the prefix's
keys and values of every layer, ``itemsize`` bytes each (a merged LoRA adds none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import fmt_bytes, grader
from a2s.checks.table import Table

__all__ = ["check_prefix_memory", "prefix_memory_loop"]


def prefix_memory_loop(
    n_layers: int, n_heads: int, n_kv_heads: int, head_dim: int, n_prefix: int, itemsize: int
) -> tuple[int, int, int]:
    """(trainable, AdamW state bytes, extra KV-cache bytes per sequence), by a plain loop."""
    trainable = 0
    for _layer in range(n_layers):
        for _head in range(n_kv_heads):
            for _tensor in ("key", "value"):
                trainable += n_prefix * head_dim
    return trainable, 2 * itemsize * trainable, itemsize * trainable


def _variant(kind: str) -> Callable[..., tuple[int, int, int]]:
    def wrong(L: int, H: int, Hkv: int, d: int, P: int, item: int) -> tuple[int, int, int]:
        n, adam, kv = prefix_memory_loop(L, H, Hkv, d, P, item)
        if kind == "one moment":
            return n, adam // 2, kv
        if kind == "keys only":
            return n // 2, adam // 2, kv // 2
        if kind == "query heads":
            m = prefix_memory_loop(L, H, H, d, P, item)
            return m
        if kind == "no kv":
            return n, adam, 0
        if kind == "kv per query head":  # the cache after repeat_kv
            return n, adam, prefix_memory_loop(L, H, H, d, P, item)[2]
        return n, adam, kv

    return wrong


_MISTAKES = [
    Mistake(
        "AdamW keeps TWO moments per trainable number (exp_avg and exp_avg_sq).",
        _variant("one moment"),
    ),
    Mistake(
        "The prefix is keys AND values: 2 P head_dim per K/V head per layer.", _variant("keys only")
    ),
    Mistake(
        "The prefix lives in K/V space: one per K/V head (n_kv_heads, with GQA fewer than the "
        "query heads); the query heads share them as they share the real keys.",
        _variant("query heads"),
    ),
    Mistake(
        "Unlike a merged LoRA, the prefix is not folded into a weight: its keys and values sit "
        "in every sequence's KV cache, itemsize bytes per number.",
        _variant("no kv"),
    ),
    Mistake(
        "The cache stores K/V heads, n_kv_heads of them: repeating them for the query heads "
        "(repeat_kv) happens at compute time, not in the cache.",
        _variant("kv per query head"),
    ),
]
# (label, n_layers, n_heads, n_kv_heads, head_dim, P, itemsize)
_NAMED = [
    ("one layer, one head, P 1, float32", 1, 1, 1, 4, 1, 4),
    ("the lab's tiny GPT: 2 layers, 4 heads / 2 K/V heads, d 16, P 16", 2, 4, 2, 16, 16, 4),
    ("GPT-2 small: 12 layers, 12 heads, d 64, P 10, float32", 12, 12, 12, 64, 10, 4),
    ("Llama-2 7B shape: 32 layers, 32 heads, d 128, P 20, bf16", 32, 32, 32, 128, 20, 2),
    ("GQA: 32 layers, 32 heads / 8 K/V heads, d 128, P 20, bf16", 32, 32, 8, 128, 20, 2),
]


def _random(gen: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    hkv = int(gen.integers(1, 5))
    h = hkv * int(gen.integers(1, 5))
    L, d, P = int(gen.integers(1, 13)), int(gen.choice([8, 16, 32, 64])), int(gen.integers(1, 33))
    item = int(gen.choice([2, 4, 8]))
    label = f"random {i}: {L} layers, {h} heads / {hkv} K/V, d {d}, P {P}, itemsize {item}"
    return label, (L, h, hkv, d, P, item)


PREFIX_MEMORY = Table(
    "12.6",
    truth=prefix_memory_loop,
    named=[(label, args) for label, *args in _NAMED],
    draw=_random,
    fresh=3,
    mistakes=_MISTAKES,
    hint="Count per layer and K/V head: P keys and P values of head_dim numbers.",
    same=lambda got, want: isinstance(got, (tuple, list)) and tuple(got) == tuple(want),
    message="[{label}] got {got!r}, expected {want!r}.{hint}",
)


@grader(
    "12.6",
    blocks=(
        "minitorch.model.prefix:prefix_parameter_count",
        "minitorch.model.lora:adamw_state_bytes",
        f"{__name__}:prefix_memory_loop",
    ),
    # three products need no course code: lab 34's kv_bytes(P, L, Hkv, d, itemsize) and MLA's
    # kv_elements_per_token answer it in a call, so every minitorch module is refused
    forbid=("torch", "minitorch"),
)
def check_prefix_memory(prefix_memory: Callable[..., Any]) -> str:
    """Exercise 12.6: the three counts exactly, on named models and fresh ones."""
    n = PREFIX_MEMORY.grade(prefix_memory)
    trainable, adam, kv = prefix_memory_loop(32, 32, 8, 128, 20, 2)
    return (
        f"{n} models (3 fresh) exact; a 7B-shaped GQA model with P = 20: {trainable:,} "
        f"trainable, AdamW state {fmt_bytes(adam)}, {fmt_bytes(kv)} more KV cache per sequence "
        f"(a merged LoRA: 0 B)"
    )
