"""Grader of exercise 17.1: size rounding and the choice of pool and segment.

Ground truth: :func:`~a2s.checks.lab17._truth.plain_size_class`, a closed form written in
the grader; its variants name the usual mistakes (powers of two, rounding down, the 1 MiB
boundary, the 20 MiB shared segment, large segments not rounded to 2 MiB).
"""

from __future__ import annotations

from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import grader
from a2s.checks.lab17._truth import KIB, MIB, plain_size_class
from a2s.checks.table import Table

__all__ = ["check_size_class"]

_REF = "minitorch.runtime.allocator"
BLOCKS = (
    f"{_REF}:size_class",
    f"{_REF}:round_size",
    f"{_REF}:malloc",
    "a2s.checks.lab17._truth:plain_size_class",
)
_MISTAKES = [
    Mistake(
        "Round up to the next multiple of 512 B, not to a power of two: a 1,100-byte "
        "request takes 1,536 B, not 2,048 B.",
        lambda n: plain_size_class(n, "power of two"),
    ),
    Mistake(
        "Round *up* (ceil), never down: a block smaller than the request would overlap the "
        "next one.",
        lambda n: plain_size_class(n, "floor"),
    ),
    Mistake(
        "Every request takes at least 512 B, even an empty one (0 bytes).",
        lambda n: plain_size_class(n, "no minimum"),
    ),
    Mistake(
        "A request of exactly 1 MiB still belongs to the small pool (size <= 1 MiB).",
        lambda n: plain_size_class(n, "strict 1 MiB"),
    ),
    Mistake(
        "Large requests under 10 MiB share a 20 MiB segment (PyTorch's kLargeBuffer); "
        "only bigger ones get a segment of their own.",
        when=lambda got, n: _no_shared_segment(got, n),
    ),
    Mistake(
        "Only large requests *under* 10 MiB share a 20 MiB segment: exactly 10 MiB gets a "
        "segment of its own (rounded up to 2 MiB).",
        lambda n: plain_size_class(n, "10 MiB shared"),
    ),
    Mistake(
        "A large request of 10 MiB or more gets its own segment rounded up to 2 MiB "
        "(kRoundLarge), not exactly its size.",
        lambda n: plain_size_class(n, "segment = size"),
    ),
]
_NAMED = [
    ("0 bytes (an empty tensor)", 0),
    ("1 byte", 1),
    ("512 bytes", 512),
    ("513 bytes", 513),
    ("1,100 bytes", 1100),
    ("a 700,000-byte activation", 700_000),
    ("exactly 1 MiB", MIB),
    ("1 MiB + 1", MIB + 1),
    ("3 MiB", 3 * MIB),
    ("exactly 10 MiB", 10 * MIB),
    ("11 MiB + 3", 11 * MIB + 3),
]


def _no_shared_segment(got: Any, n: int) -> bool:
    want = plain_size_class(n)
    return want[1] == "large" and want[2] == 20 * MIB and tuple(got[:2]) == want[:2] != got[2]


def _same(got: Any, want: Any) -> bool:
    return isinstance(got, tuple | list) and len(got) == 3 and tuple(got) == tuple(want)


_FRESH_RANGES = [(1, 4 * KIB), (MIB // 2, 2 * MIB), (2 * MIB, 40 * MIB)]


def _fresh_size(g: Any, i: int) -> tuple[str, tuple[int]]:
    n = int(g.integers(*_FRESH_RANGES[i]))
    return f"{n:,} bytes", (n,)


SIZES = Table(
    "17.1",
    truth=plain_size_class,
    named=[(label, (n,)) for label, n in _NAMED],
    draw=_fresh_size,
    fresh=len(_FRESH_RANGES),
    mistakes=_MISTAKES,
    same=_same,
    what="size_class",
    message=(
        "[{label}] size_class({args[0]}) returned {got!r}, expected {want!r} "
        "(rounded size, pool, segment bytes).{hint}"
    ),
)


@grader("17.1", blocks=BLOCKS)
def check_size_class(student: Any) -> str:
    count = SIZES.grade(student)
    return f"{count} requests: rounded to 512 B, pool and segment right (1 MiB boundary held)"
