"""Grader of exercise 12.3: predict trainable parameters and AdamW state bytes, full vs LoRA.

Ground truth: a plain loop over the layers. Full fine-tuning trains every weight and bias; LoRA
(rank r on every linear layer, biases frozen) trains A: (r, d_in) and B: (d_out, r) per layer.
AdamW keeps two moments (exp_avg, exp_avg_sq) per trainable parameter, ``itemsize`` bytes each.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import fmt_bytes, grader
from a2s.checks.table import Table

__all__ = ["check_lora_memory", "lora_memory_loop"]

Layers = list[tuple[int, int]]


def lora_memory_loop(layers: Layers, r: int, itemsize: int) -> tuple[int, int, int, int]:
    """(full trainable, LoRA trainable, full AdamW bytes, LoRA AdamW bytes), by a plain loop."""
    full = lora = 0
    for d_in, d_out in layers:
        full += d_in * d_out + d_out  # weight and bias
        lora += r * d_in + d_out * r  # A and B; the bias stays frozen
    return full, lora, 2 * itemsize * full, 2 * itemsize * lora


def _variant(kind: str) -> Callable[..., tuple[int, int, int, int]]:
    def wrong(layers: Layers, r: int, itemsize: int) -> tuple[int, int, int, int]:
        full, lora, fb, lb = lora_memory_loop(layers, r, itemsize)
        if kind == "one moment":
            return full, lora, fb // 2, lb // 2
        if kind in ("with grads", "with weights"):
            k = 3 if kind == "with grads" else 4
            return full, lora, k * itemsize * full, k * itemsize * lora
        if kind == "lora bias":
            lora += sum(o for _, o in layers)
        if kind == "only A":
            lora = sum(r * i for i, _ in layers)
        if kind == "no bias":
            full -= sum(o for _, o in layers)
        return full, lora, 2 * itemsize * full, 2 * itemsize * lora

    return wrong


_MISTAKES = [
    Mistake(
        "AdamW keeps TWO moments per parameter (exp_avg and exp_avg_sq).", _variant("one moment")
    ),
    Mistake("LoRA freezes the biases: only A and B train.", _variant("lora bias")),
    Mistake(
        "Count B too: A is (r, d_in) and B is (d_out, r), r (d_in + d_out) per layer.",
        _variant("only A"),
    ),
    Mistake("Full fine-tuning trains the biases as well (d_out per layer).", _variant("no bias")),
    Mistake(
        "Count the optimizer's state only: AdamW's two moments, 2 x itemsize bytes per trainable "
        "parameter; the gradients (and the weights) are not AdamW state.",
        _variant("with grads"),
    ),
    Mistake(
        "Count the optimizer's state only: AdamW's two moments, 2 x itemsize bytes per trainable "
        "parameter; the weights and gradients are not AdamW state.",
        _variant("with weights"),
    ),
]
_GPT2 = [(768, 2304), (768, 768), (768, 3072), (3072, 768)] * 12  # GPT-2 small's linears
_NAMED = [
    ("one layer 4 -> 3, r 1, float32", [(4, 3)], 1, 4),
    ("MLP 16-64-64-4, r 4, float32", [(16, 64), (64, 64), (64, 4)], 4, 4),
    ("square 1024, r 8, bf16", [(1024, 1024)], 8, 2),
    ("GPT-2 small's 48 linear layers, r 8, float32", _GPT2, 8, 4),
]


def _random(gen: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    widths = [int(v) for v in gen.integers(1, 300, int(gen.integers(2, 6)))]
    layers = list(itertools.pairwise(widths))
    r, item = int(gen.integers(1, 17)), int(gen.choice([2, 4, 8]))
    return f"random {i}: widths {widths}, r {r}, itemsize {item}", (layers, r, item)


MEMORY = Table(
    "12.3",
    truth=lora_memory_loop,
    named=[(label, (layers, r, item)) for label, layers, r, item in _NAMED],
    draw=_random,
    fresh=3,
    mistakes=_MISTAKES,
    hint="Count per layer, then sum.",
    same=lambda got, want: isinstance(got, (tuple, list)) and tuple(got) == tuple(want),
    message="[{label}] got {got!r}, expected {want!r}.{hint}",
)


@grader("12.3", blocks=("minitorch.model.lora:adamw_state_bytes", f"{__name__}:lora_memory_loop"))
def check_lora_memory(lora_memory: Callable[..., Any]) -> str:
    """Exercise 12.3: the four counts exactly, on named models and fresh ones."""
    n = MEMORY.grade(lora_memory)
    full, lora, fb, lb = lora_memory_loop(_GPT2, 8, 4)
    return (
        f"{n} models (3 fresh) exact; GPT-2 small's linears at r = 8: {lora:,} of {full:,} "
        f"parameters train ({100 * lora / full:.2f}%), AdamW state {fmt_bytes(lb)} "
        f"vs {fmt_bytes(fb)}"
    )
