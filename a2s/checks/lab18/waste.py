"""Grader of exercise 18.5: predict the KV memory wasted by max-length reservation and by
paging, before the notebook measures both with the block manager.

Closed forms, written here: reserving ``max_len`` slots per sequence wastes
1 - sum(l) / (n max_len); paging wastes only the unused tail of each last block,
1 - sum(l) / (block_size sum(ceil(l / block_size))).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.compare import number
from a2s.checks.core import CheckFailure, grader, rng
from a2s.checks.table import Table

__all__ = ["check_kv_waste"]


def _waste(
    lengths: list[int],
    max_len: int,
    bs: int,
    *,
    ceil: bool = True,
    cap: int | None = None,
    over_used: bool = False,
) -> tuple[float, float]:
    used = sum(lengths)
    blocks = sum(-(-x // bs) if ceil else x // bs for x in lengths)
    reserved = [len(lengths) * (cap or max_len), blocks * bs]
    if over_used:
        return tuple((r - used) / used for r in reserved)  # type: ignore[return-value]
    return tuple(1 - used / r for r in reserved)  # type: ignore[return-value]


def _close(got: Any, want: Any) -> bool:
    return bool(np.allclose(got, want, rtol=1e-9, atol=1e-12))


def _max_seen(got: Any, lengths: list[int], max_len: int, bs: int) -> bool:
    wrong = _waste(lengths, max_len, bs, cap=max(lengths))[0]
    return not np.isclose(got[0], _waste(lengths, max_len, bs)[0]) and bool(
        np.isclose(got[0], wrong)
    )


_MISTAKES = (
    Mistake(
        "Reservation is for max_len, the longest a sequence MAY get, not the longest seen.",
        when=_max_seen,
    ),
    Mistake(
        "Waste is a fraction of what is RESERVED: (reserved - used) / reserved.",
        answer=lambda lengths, m, bs: _waste(lengths, m, bs, over_used=True),
    ),
    Mistake(
        "A sequence of l tokens holds ceil(l / block_size) blocks: the last "
        "one is partly empty (that tail is paging's only waste).",
        answer=lambda lengths, m, bs: _waste(lengths, m, bs, ceil=False),
    ),
)


def _pair(got: Any, label: str) -> list[float]:
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailure(f"[{label}] return two fractions: (reserved, paged)")
    return [number(g, case=label, message=f"[{label}] return floats") for g in got]


def _random(f: Any, i: int) -> tuple[str, tuple[Any, ...]]:
    return "random workload", (f.integers(1, 500, 30).tolist(), 512, int(f.choice([8, 16, 32])))


WASTE = Table(
    "18.5",
    truth=_waste,
    named=[
        ("3 sequences, max 16, blocks of 4", ([5, 16, 8], 16, 4)),
        ("every length a multiple of the block", ([8, 16, 4], 32, 4)),
        ("block size 1: no waste", ([3, 7], 10, 1)),
        (
            "2,048-token reservation, blocks of 16",
            (rng(1805).integers(20, 900, 50).tolist(), 2048, 16),
        ),
    ],
    draw=_random,
    fresh=1,
    mistakes=_MISTAKES,
    hint="reserved: 1 - sum(l) / (n max_len); paged: 1 - sum(l) / (bs sum(ceil(l/bs))).",
    read=_pair,
    same=_close,
    what="(reserved, paged)",
    message=(
        "[{label}] predicted (reserved, paged) = ({got[0]:.4f}, {got[1]:.4f}), "
        "expected ({want[0]:.4f}, {want[1]:.4f}).{hint}"
    ),
)


@grader(
    "18.5",
    blocks=("minitorch.runtime.block_manager:BlockManager",),
)
def check_kv_waste(kv_waste: Callable[..., Any]) -> str:
    """Exercise 18.5: kv_waste(lengths, max_len, block_size) -> (reserved, paged) fractions."""
    count = WASTE.grade(kv_waste)
    r, p = _waste(*WASTE.named[3][1])
    return (
        f"{count} workloads exact (1 fresh); at 2,048 reserved, {r:.0%} wasted vs "
        f"{p:.1%} with 16-token blocks"
    )
