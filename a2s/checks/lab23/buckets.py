"""Grader of exercise 23.1: gradient buckets by bytes, filled in reverse parameter order.

Ground truth is a plain loop written here (:func:`~a2s.checks.lab23.workers.plain_buckets`).
Known mistakes: forward order (the first layer's gradients are ready last), a bucket closed
before it reaches the cap, the crossing parameter moved to the next bucket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import grader
from a2s.checks.lab23.workers import plain_buckets
from a2s.checks.table import Table

__all__ = ["check_assign_buckets"]


def _forward(nbytes: list[int], cap: int) -> list[list[int]]:
    rev = plain_buckets(nbytes[::-1], cap)
    n = len(nbytes)
    return [[n - 1 - i for i in b] for b in rev]


def _under_cap(nbytes: list[int], cap: int) -> list[list[int]]:
    out: list[list[int]] = [[]]
    size = 0
    for i in range(len(nbytes) - 1, -1, -1):
        if out[-1] and size + nbytes[i] > cap:
            out.append([])
            size = 0
        out[-1].append(i)
        size += nbytes[i]
    return [b for b in out if b]


_MISTAKES = [
    Mistake(
        "You filled the buckets in forward order. Backward produces the LAST parameter's "
        "gradient first: walk from the last index to the first, so the first bucket is ready "
        "early and its all-reduce overlaps the rest of backward.",
        answer=_forward,
    ),
    Mistake(
        "You kept every bucket at or under the cap. The rule here (PyTorch's): add the "
        "parameter, then close the bucket once its bytes reach the cap.",
        answer=_under_cap,
    ),
]
_RULE = (
    "Walk i = n-1 down to 0: append i to the open bucket, add nbytes[i], and close the bucket "
    "once its bytes reach the cap (size >= cap, not >); a last, smaller bucket is kept."
)


def _as_lists(got: Any, label: str) -> Any:
    """Buckets as lists of ints (tuples or arrays of indices are the same answer)."""
    if not isinstance(got, (list, tuple)) or not all(
        isinstance(b, (list, tuple, np.ndarray)) for b in got
    ):
        return got
    try:
        return [[int(i) for i in np.asarray(b).ravel()] for b in got]
    except (TypeError, ValueError):
        return got


_TEACHING = [
    ([400, 40, 400, 40], 440),
    ([100, 100, 100, 100, 100], 250),
    ([4096, 64, 4096, 64, 256, 8], 1000),
    ([8, 8, 8], 10**9),
    ([1000, 1, 1, 1000], 1),
]


def _random(gen: Any, i: int) -> tuple[str, tuple[list[int], int]]:
    n = [int(v) for v in gen.integers(1, 5000, int(gen.integers(1, 12)))]
    cap = int(gen.integers(1, 12000))
    return f"nbytes={n}, cap={cap}", (n, cap)


BUCKETS = Table(
    "23.1",
    truth=plain_buckets,
    named=[(f"nbytes={n}, cap={c}", (n, c)) for n, c in _TEACHING],
    draw=_random,
    fresh=8,
    mistakes=_MISTAKES,
    hint=_RULE,
    read=_as_lists,
    what="buckets",
    message="[{label}] got {got}, expected {want}.{hint}",
)


@grader(
    "23.1",
    blocks=(
        "minitorch.parallel.data:assign_buckets",
        "minitorch.runtime.overlap:make_buckets",
        "a2s.checks.lab23.workers:plain_buckets",  # the grader's own loop
    ),
)
def check_assign_buckets(assign_buckets: Callable[..., Any]) -> str:
    """Exercise 23.1: ``assign_buckets(nbytes, bucket_bytes) -> list of index lists``."""
    total = BUCKETS.grade(assign_buckets)
    return (
        f"{total} layouts (8 fresh) bucketed in backward order; e.g. {plain_buckets(*_TEACHING[2])}"
    )
