"""Grader of exercise 20.5: predict the bytes a rank sends, from the algorithm alone.

The learner's ``predict_bytes(collective, n_elems, p, rank, itemsize)`` is compared with the
closed forms written out here (not with ``minitorch.comm.cost``, which is blocked, nor by
measuring the course's collectives, blocked too), on named
cases (root and non-root, uneven chunks, p = 1) and fresh random ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.lab20._truth import BLOCKS

__all__ = ["check_predict_bytes"]

_NAMES = ("broadcast", "all_reduce", "reduce_scatter", "all_gather")
_HINTS = {
    "broadcast": "Flat broadcast from rank 0: the root sends n bytes to each of p-1 ranks.",
    "all_reduce": "Naive all-reduce: ranks 1.. send n to rank 0, which then broadcasts.",
    "reduce_scatter": "Rank r sends every chunk but its own: n minus its chunk's bytes.",
    "all_gather": "Rank r sends its own chunk (of the n-element result) to p-1 ranks.",
}


def _want(name: str, n: int, p: int, r: int, item: int) -> int:
    chunk = (n // p + (1 if r < n % p else 0)) * item
    full = n * item
    return {
        "broadcast": (p - 1) * full if r == 0 else 0,
        "all_reduce": (p - 1) * full if r == 0 else full,
        "reduce_scatter": full - chunk,
        "all_gather": (p - 1) * chunk,
    }[name]


@grader(
    "20.5",  # the model, not a measurement of the course's collectives
    blocks=("minitorch.comm.cost:bytes_sent", "minitorch.comm.cost:chunk_bytes", *BLOCKS),
    hand="parts",
)
def check_predict_bytes(predict_bytes: Callable[..., Any]) -> str:
    """Exercise 20.5: bytes sent by one rank, for the four algorithms of this lab."""
    named = [(c, 10, 4, r, 4) for c in _NAMES for r in (0, 1, 3)]
    named += [(c, 1_000_000, 8, 7, 4) for c in _NAMES] + [(c, 5, 1, 0, 8) for c in _NAMES]
    gen, fr = rng(2005), fresh_rng("20.5")
    cases = [(str(x), x) for x in named]
    for _ in range(12):
        p = int(fr.integers(1, 65))
        x = (_NAMES[int(fr.integers(0, 4))], int(fr.integers(0, 10**6)), p, int(fr.integers(0, p)))
        cases.append((fresh(str(x)), (*x, int(gen.choice([2, 4, 8])))))
    for label, (name, n, p, r, item) in cases:
        got = plain(predict_bytes(name, n, p, r, item), what="predicted bytes", case=label)
        want = _want(name, n, p, r, item)
        if isinstance(got, (float, np.floating)) and float(got).is_integer():
            got = int(got)  # a whole number of bytes written as a float is fine
        assert_true(
            isinstance(got, (int, np.integer)) and got == want,
            f"[{label}] predicted {got!r} bytes for rank {r}, the algorithm sends {want}. "
            f"{_HINTS[name]}",
        )
    return f"{len(cases)} predictions (12 fresh, p up to 64) equal the closed forms"
