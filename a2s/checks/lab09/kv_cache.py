"""Grader of exercise 09.7: predict the KV cache's bytes from the config (then the notebook
measures the K and V arrays the model produces). Ground truth: 2 * layers * K/V heads *
head dim * tokens * batch * bytes per number, written out here."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.compare import number
from a2s.checks.core import CheckFailure, grader
from a2s.checks.table import Table
from minitorch.model.config import GPTConfig

__all__ = ["check_kv_cache_bytes"]


def _bytes(cfg: GPTConfig, seq_len: int, batch: int, itemsize: int, heads: int, kv: int) -> int:
    return kv * cfg.n_layer * heads * cfg.head_dim * seq_len * batch * itemsize


_MISTAKES = (
    Mistake(
        "Count only the K/V heads (n_kv_head): query heads are not cached.",
        lambda c, t, b, s: _bytes(c, t, b, s, c.n_head, 2),
    ),
    Mistake(
        "Keys and values are both cached: a factor of 2.",
        lambda c, t, b, s: _bytes(c, t, b, s, c.n_kv_head, 1),
    ),
    Mistake(
        "Every layer keeps its own cache: multiply by n_layer.",
        lambda c, t, b, s: 2 * c.n_kv_head * c.head_dim * t * b * s,
    ),
    Mistake(
        "That counts numbers, not bytes: multiply by itemsize (bytes per number).",
        lambda c, t, b, s: _bytes(c, t, b, 1, c.n_kv_head, 2),
    ),
)


def _int(got: object, label: str) -> float:
    """The learner's bytes as a number; a float (even a whole one) is not a count."""
    message = f"[{label}] return the number of bytes as an int"
    if isinstance(got, (float, np.floating)) and not isinstance(got, bool):
        raise CheckFailure(
            f"{message}, got the float {got!r}: bytes are a whole number (use // or int "
            "arithmetic, not /)."
        )
    return number(got, case=label, kind=float, message=message)


def _message(case: Case, got: float, want: int, hint: str) -> str:
    shown = int(got) if got.is_integer() else got
    return f"[{case.label}] predicted {shown:,} bytes, expected {want:,}. " + hint


def _random(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    n_kv = int(g.choice([1, 2, 4]))
    cfg = GPTConfig(
        n_layer=int(g.integers(1, 9)), n_head=4 * n_kv, n_kv_head=n_kv, d_model=16 * 4 * n_kv
    )
    return "random config", (
        cfg,
        int(g.integers(1, 500)),
        int(g.integers(1, 9)),
        int(g.choice([1, 2, 4])),
    )


_LLAMA = GPTConfig(n_layer=80, n_head=64, n_kv_head=8, d_model=8192)
KV = Table(
    "09.7",
    truth=lambda c, t, b, s: _bytes(c, t, b, s, c.n_kv_head, 2),
    named=[  # the first tells the mistakes apart: V x2, layers x3, itemsize x4, heads x8
        (
            "MQA, 3 layers, 8 query heads, 10 tokens, fp32",
            (GPTConfig(n_head=8, n_kv_head=1, n_layer=3), 10, 1, 4),
        ),
        (
            "MHA, 3 layers, 2 sequences of 100, bf16",
            (GPTConfig(n_head=8, n_kv_head=8, n_layer=3), 100, 2, 2),
        ),
        ("tiny GPT (GQA 4/2), 32 tokens, fp32", (GPTConfig(n_kv_head=2), 32, 1, 4)),
        ("MQA, 1 K/V head", (GPTConfig(n_head=8, n_kv_head=1, n_layer=4), 64, 3, 2)),
        ("Llama-2-70B-like: 80 layers, 64/8 heads, 4096 tokens", (_LLAMA, 4096, 1, 2)),
    ],
    draw=_random,
    fresh=1,
    mistakes=_MISTAKES,
    read=_int,
    message=_message,
)


@grader(
    "09.7",
    blocks=(
        "minitorch.runtime.quant_serving:kv_bytes_per_token",  # lab 28: K and V bytes per token
        f"{__name__}:_bytes",  # the grader's closed form
    ),
)
def check_kv_cache_bytes(kv_cache_bytes: Callable[..., object]) -> str:
    """Exercise 09.7: kv_cache_bytes(config, seq_len, batch, itemsize) -> int."""
    n = KV.grade(kv_cache_bytes)
    gib = _bytes(_LLAMA, 4096, 1, 2, 8, 2) / 2**30
    return f"{n} configs exact; the 70B-like model caches {gib:.2f} GiB per 4k sequence"
