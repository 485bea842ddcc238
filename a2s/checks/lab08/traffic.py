"""Grader of exercise 08.3: predict the HBM bytes of naive and flash attention forward.

Ground truth is a plain loop over the tiles written here (not the reference's formula):
naive attention reads Q, K, S, P, V and writes S, P, O (Dao et al. Algorithm 0); FlashAttention
reads Q_i once per query block and K_j, V_j for every (i, j) pair it visits, and writes O_i and
L_i once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.table import Table

__all__ = ["check_predicted_traffic", "flash_forward_bytes"]

_IO = "minitorch.kernels.io_model"


def naive_bytes(n: int, d: int, itemsize: int) -> int:
    reads = 2 * n * d + n * n + n * n + n * d  # Q, K; S; P, V
    return itemsize * (reads + n * n + n * n + n * d)  # writes S, P, O


def flash_forward_bytes(n: int, d: int, bq: int, bk: int, causal: bool, itemsize: int) -> int:
    """A plain loop over the tile pairs FlashAttention's forward visits."""
    total = 0
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        total += (i1 - i0) * d  # Q_i
        for j0 in range(0, n, bk):
            if causal and j0 >= i1:
                break
            total += 2 * (min(j0 + bk, n) - j0) * d  # K_j and V_j
        total += (i1 - i0) * d + (i1 - i0)  # O_i and L_i
    return total * itemsize


def _want(n: int, d: int, bq: int, bk: int, causal: bool, itemsize: int) -> tuple[int, int]:
    return naive_bytes(n, d, itemsize), flash_forward_bytes(n, d, bq, bk, causal, itemsize)


_MISTAKES = [
    Mistake(
        "Causal attention skips the key blocks wholly in a query block's future (j0 >= i1).",
        lambda n, d, bq, bk, c, s: _want(n, d, bq, bk, False, s),
    ),
    Mistake(
        "The logsumexp L (n values) is written too: the backward needs it.",
        lambda n, d, bq, bk, c, s: (
            _want(n, d, bq, bk, c, s)[0],
            _want(n, d, bq, bk, c, s)[1] - n * s,
        ),
    ),
    Mistake(
        "Naive attention writes S and P (n^2 each) *and* reads both back: 4n^2, plus "
        "Q, K, V read and O written (4nd).",
        when=lambda got, n, d, bq, bk, c, s: (
            isinstance(got, tuple)
            and len(got) == 2
            and got[0] != naive_bytes(n, d, s)
            and got[0] in (s * (4 * n * d + 2 * n * n), s * (4 * n * d + 3 * n * n))
        ),
    ),
]
_HINT = (
    "Count bytes: K_j and V_j are read once per query block that sees them, and the last "
    "block of a length that is not a multiple of the block is short (ceil, not floor)."
)


def _pair(got: object, label: str) -> object:
    """A list is a pair too; the two counts must be integers (bytes), not floats."""
    pair = tuple(got) if isinstance(got, list) else got
    if isinstance(pair, tuple) and len(pair) == 2:
        kinds = [type(v).__name__ for v in pair if not isinstance(v, (int, np.integer))]
        if kinds or any(isinstance(v, bool) for v in pair):
            raise CheckFailure(
                f"[{label}] return the two byte counts as integers, got "
                f"({type(pair[0]).__name__}, {type(pair[1]).__name__}): use // and ints."
            )
    return pair


def _random(g: np.random.Generator, i: int) -> tuple[str, tuple[object, ...]]:
    n, d = int(g.integers(1, 3000)), int(g.choice([16, 32, 64, 128]))
    bq, bk = int(g.choice([16, 32, 64, 128])), int(g.choice([16, 32, 64, 128]))
    args = (n, d, bq, bk, bool(g.integers(0, 2)), int(g.choice([2, 4, 8])))
    return f"random case {i}: n = {n}, d = {d}, blocks {bq}/{bk}", args


TRAFFIC = Table(
    "08.3",
    truth=_want,
    named=[
        ("n = 64, d = 16, blocks of 16, float64", (64, 16, 16, 16, False, 8)),
        ("same, causal", (64, 16, 16, 16, True, 8)),
        ("n = 1000 (not a multiple), float32", (1000, 64, 64, 128, False, 4)),
        ("n = 1000, causal, bfloat16", (1000, 64, 128, 64, True, 2)),
        ("n = 4096, d = 64, bfloat16", (4096, 64, 64, 64, False, 2)),
    ],
    draw=_random,
    fresh=4,
    mistakes=_MISTAKES,
    hint=_HINT,
    read=_pair,
    what="(naive bytes, flash bytes)",
    message="[{label}] predicted {got!r}, the IO model gives {want!r}.{hint}",
)


@grader(
    "08.3",
    blocks=(
        *(
            f"{_IO}:{f}"
            for f in ("naive_attention_traffic", "flash_forward_traffic", "q_blocks", "kv_blocks")
        ),
        *(f"{__name__}:{f}" for f in ("naive_bytes", "flash_forward_bytes", "_want")),  # truth
    ),
)
def check_predicted_traffic(predict: Callable[..., object]) -> str:
    """Exercise 08.3: (naive bytes, flash bytes) of attention forward, from the IO model."""
    count = TRAFFIC.grade(predict)
    naive, flash = _want(4096, 64, 128, 64, False, 2)
    return (
        f"{count} predictions exact; at n = 4096, d = 64, blocks 128/64 (bf16) naive moves "
        f"{naive / 2**20:.0f} MiB, flash {flash / 2**20:.0f} MiB ({naive / flash:.1f}x less)"
    )
