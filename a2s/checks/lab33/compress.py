"""Grader of exercise 33.1: the 2:4 mask and its compressed format, bytes counted.

``compress_24(w)`` returns ``(values, meta)``: the two kept values of every group of 4 (in
position order, ``w``'s dtype) and their 2-bit positions packed 4 per byte (uint8, index
``4k + j`` in bits ``2j..2j+1`` of byte ``k``). The truth is a loop over the groups
(``_truth.compress_loop``); the grader also decompresses the learner's answer with its own
loop and requires ``w`` times the mask (the round trip), and counts the stored bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import run_apart
from a2s.checks.lab33._truth import compress_loop, decompress_loop
from a2s.checks.table import Table
from a2s.checks.values import plain

__all__ = ["COMPRESS", "check_compress_24"]

_S = "minitorch.model.sparse24"


def _by(w: np.ndarray, order: Callable[[np.ndarray], np.ndarray]) -> tuple[Any, Any]:
    """A compression keeping, per group, the 2 positions ``order`` ranks first."""
    g = w.reshape(w.shape[0], -1, 4)
    pos = np.sort(order(g)[..., :2], axis=-1)
    vals = np.take_along_axis(g, pos, axis=-1).reshape(w.shape[0], -1)
    p = pos.reshape(w.shape[0], -1, 4).astype(np.uint8)
    meta = p[..., 0] | p[..., 1] << 2 | p[..., 2] << 4 | p[..., 3] << 6
    return vals, meta.astype(np.uint8)


def _smallest(w: np.ndarray) -> tuple[Any, Any]:
    return _by(w, lambda g: np.argsort(np.abs(g), axis=-1, kind="stable"))


def _ties_high(w: np.ndarray) -> tuple[Any, Any]:
    return _by(w, lambda g: np.argsort(np.abs(g), axis=-1, kind="stable")[..., ::-1])


def _signed(w: np.ndarray) -> tuple[Any, Any]:
    return _by(w, lambda g: np.argsort(-g, axis=-1, kind="stable"))


def _reversed_bits(w: np.ndarray) -> tuple[Any, Any]:
    vals, meta = compress_loop(w)
    parts = [(meta >> (2 * j)) & 3 for j in range(4)]
    flip = parts[3] | parts[2] << 2 | parts[1] << 4 | parts[0] << 6
    return vals, flip.astype(np.uint8)


_MISTAKES = (
    Mistake(
        "You kept the 2 SMALLEST magnitudes of each group: keep the largest |w|.",
        answer=_smallest,
    ),
    Mistake(
        "On equal magnitudes keep the LOWER index (a stable sort of -|w|): your answer keeps "
        "the higher one (sorting |w| ascending and taking the last two reverses the ties).",
        answer=_ties_high,
    ),
    Mistake(
        "Rank by magnitude |w|, not by the signed value: a large negative weight is kept.",
        answer=_signed,
    ),
    Mistake(
        "The packing order is reversed: index 4k + j goes in bits 2j..2j+1 of byte k "
        "(the first index in the LOW bits).",
        answer=_reversed_bits,
    ),
)


def _read(got: Any, label: str) -> tuple[np.ndarray, np.ndarray]:
    """The learner's (values, meta) as two arrays, shapes and dtypes checked."""
    got = plain(got, what="compress_24", case=label)
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailure(f"[{label}] return the pair (values, meta), got {type(got).__name__}.")
    try:
        vals, meta = (np.asarray(v) for v in got)
    except (TypeError, ValueError):
        raise CheckFailure(f"[{label}] values and meta must be arrays of numbers.") from None
    return vals, meta


def _want(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return compress_loop(w)


def _same(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> bool:
    return all(
        a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
        for a, b in zip(got, want, strict=True)
    )


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    (w,) = case.args
    (vals, meta), (tv, tm) = got, want
    out, cols = w.shape
    if vals.shape != tv.shape or vals.dtype != tv.dtype:
        return (
            f"[{case.label}] values has shape {vals.shape}, dtype {vals.dtype}; expected "
            f"{tv.shape}, {tv.dtype}: two kept values per group of 4, in w's dtype."
        )
    if meta.shape != tm.shape or meta.dtype != np.uint8:
        return (
            f"[{case.label}] meta has shape {meta.shape}, dtype {meta.dtype}; expected "
            f"{tm.shape}, uint8: four 2-bit positions packed in each byte ({out} x {cols} / 8)."
        )
    back = decompress_loop(vals, meta, cols)
    masked = decompress_loop(tv, tm, cols)
    trip = "" if np.array_equal(back, masked) else " Decompressed, it is not w times the 2:4 mask."
    return f"[{case.label}] (values, meta) differ from the 2:4 compression of w.{trip} {hint}"


def _w(g: np.random.Generator, shape: tuple[int, int], dtype: Any) -> np.ndarray:
    return g.standard_normal(shape).astype(dtype)


def _ties() -> np.ndarray:
    row = [0, 0, 0, 0, 1, -1, 1, 0, 0.5, 2, -2, 0.5, -3, 0, 0, 3]
    return np.array([row, row[::-1]], dtype=np.float32)


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    out, cols = int(g.integers(1, 9)), 8 * int(g.integers(1, 6))
    dtype = (np.float16, np.float32, np.float64)[i % 3]
    w = _w(g, (out, cols), dtype)
    return f"random {out} x {cols}, {np.dtype(dtype).name}", (w,)


COMPRESS = Table(
    "33.1",
    truth=_want,
    named=[
        ("ties and zeros: [0, 0, 0, 0], [1, -1, 1, 0], ...", (_ties(),)),
        ("4 x 16 float16", (_w(np.random.default_rng(3301), (4, 16), np.float16),)),
        ("a large negative weight", (np.array([[-5, 1, 2, 0.5, 1, 2, 3, -4]], np.float64),)),
    ],
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    hint="Keep the 2 largest |w| of each group of 4 (ties: the lower index), values in "
    "position order; pack index 4k + j into bits 2j..2j+1 of byte k.",
    same=_same,
    read=_read,
    what="compress_24",
    message=_message,
    # apart: the learner's function runs in a forked child; the case runner's frames stay here
    prepare=lambda f: lambda *args: run_apart(f, *args),
)


@grader("33.1", blocks=(_S,))
def check_compress_24(compress_24: Callable[..., Any]) -> str:
    """Exercise 33.1: compress_24(w) -> (values (out, in/2), meta uint8 (out, in/8))."""
    n = COMPRESS.grade(compress_24)
    out, cols = 4096, 4096
    dense, sparse = out * cols * 2, out * cols // 2 * 2 + out * cols // 8
    return (
        f"{n} weights compressed exactly, round trip equal to w * mask; a 4096 x 4096 FP16 "
        f"weight stores {sparse / 2**20:.2f} MiB against {dense / 2**20:.0f} MiB dense "
        f"({sparse / dense:.4g} = 9/16)"
    )
