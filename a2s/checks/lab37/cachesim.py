"""Grader of exercise 37.6: the address trace of the compiled tiled kernel, checked exactly and
then measured against valgrind's cachegrind through lab 06's simulator.

The truth (``_truth.tiled_trace``) is a plain loop of ``a2s_matmul_tiled``'s C: tiles
``(i0, k0, j0)`` outside, ``i, p, j`` inside, each bounded by ``min(start + tile, n)``, and
per iteration the byte addresses of ``A[i, p]``, ``B[p, j]``, ``C[i, j]`` (A at 0, B at
``8 n^2``, C at ``16 n^2``). Named edges (a tile that does not divide n, a tile larger than
n, tile 1, n = 1) and seeded and fresh shapes are compared element by element. Then, at
n = 32 (tile 8) and n = 40 (tile 12), the grader feeds the learner's trace to lab 06's LRU
simulator (:mod:`minitorch.hardware.cache`, D1 4 KiB 4-way, LL 32 KiB 8-way, 64-byte lines)
and runs its own build of the kernel (``-O1``, no vectorisation, cold caches) under
cachegrind with the same caches; the two must agree within the tolerance measured in
:mod:`minitorch.native.cachegrind`: D1 at most 12 % (+ 8 lines) above the model, never
below it by more than 8 lines (the compiled loop keeps its bounds on the stack), LL within
1 % + 8 lines. Without valgrind the check says so and cannot grade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import NATIVE, cachegrind_misses, tiled_trace, valgrind
from a2s.checks.table import Table
from minitorch.hardware.cache import CacheConfig, simulate

__all__ = ["D1", "LL", "MEASURED", "check_tiled_trace"]

D1, LL = (4096, 4, 64), (32768, 8, 64)  # (size, ways, line)
MEASURED = ((32, 8), (40, 12))

_NAMED = [
    ("n = 1", (1, 1)),
    ("n = 4, tile 2", (4, 2)),
    ("n = 5, tile 2 (the last tile is short)", (5, 2)),
    ("n = 3, tile 8 (one tile)", (3, 8)),
    ("n = 3, tile 1", (3, 1)),
    ("n = 7, tile 3", (7, 3)),
]


def _draw(g: Any, i: int) -> tuple[str, tuple[int, int]]:
    n = int(g.integers(2, 13))
    tile = int(g.integers(1, n + 3))
    return (f"n = {n}, tile {tile}", (n, tile))


def _read(got: Any, label: str) -> np.ndarray:
    arr = np.asarray(got)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise CheckFailure(
            f"[{label}] tiled_trace must return a 1-D sequence of int byte addresses, "
            f"got {type(got).__name__} of shape {arr.shape} and dtype {arr.dtype}"
        )
    return arr.astype(np.int64)


def _same(got: Any, want: Any) -> bool:
    return bool(np.array_equal(np.asarray(got, np.int64), np.asarray(want, np.int64)))


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    g, w = np.asarray(got, np.int64), np.asarray(want, np.int64)
    if g.size != w.size:
        head = f"has {g.size} addresses, the kernel makes {w.size}"
    else:
        at = int(np.flatnonzero(g != w)[0])
        head = f"address {at} (iteration {at // 3}) is {g[at]}, the kernel touches {w[at]}"
    return f"[{case.label}] tiled_trace {head}.{' ' + hint.lstrip() if hint else ''}"


_MISTAKES = (
    Mistake(
        " B is row-major too: B[p, j] is at 8 n^2 + 8 (p n + j), not 8 (j n + p).",
        answer=lambda n, tile: tiled_trace(n, tile, b_transposed=True),
    ),
    Mistake(
        " A tile ends before start + tile: the bound is min(start + tile, n), exclusive (an "
        "inclusive bound visits the first row of the next tile twice).",
        answer=lambda n, tile: tiled_trace(n, tile, inclusive=True),
    ),
    Mistake(
        " C[i, j] += ... is an access too: the cache allocates a line on a write miss "
        "(write-allocate), so C belongs in the trace, once per iteration.",
        answer=lambda n, tile: tiled_trace(n, tile, no_c=True),
    ),
    Mistake(
        " One address per array per iteration: C's read and write of += touch the same line "
        "back to back (the write always hits), so lab 06's trace lists C once.",
        when=lambda got, n, tile: len(got) == 4 * len(tiled_trace(n, tile)) // 3,
    ),
)

TRACE = Table(
    "37.6",
    truth=tiled_trace,
    named=_NAMED,
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    read=_read,
    same=_same,
    hint="for i0, k0, j0 in tiles; for i, p, j in min(start + tile, n): A[i,p], B[p,j], C[i,j].",
    what="tiled_trace",
    message=_message,
)


def _config(g: tuple[int, int, int]) -> CacheConfig:
    size, ways, line = g
    return CacheConfig(size, line, ways)


@grader("37.6", blocks=(*NATIVE, "minitorch.kernels.traces"), hand="measure")
def check_tiled_trace(student: Callable[..., Any]) -> str:
    """Exercise 37.6: tiled_trace(n, tile) -> the byte addresses a2s_matmul_tiled touches."""
    valgrind()  # before any case: without valgrind this exercise cannot be graded
    n_cases = TRACE.grade(student)
    rows = []
    for n, tile in MEASURED:
        got = _read(plain(student(n, tile), what="tiled_trace"), f"n = {n}, tile {tile}")
        if not _same(got, tiled_trace(n, tile)):
            raise CheckFailure(f"[n = {n}, tile {tile}] tiled_trace differs from the kernel's.")
        first, second = simulate(got, _config(D1), _config(LL))
        sd1, sll = first.misses, second.misses
        md1, mll = cachegrind_misses(n, tile, D1, LL)
        if not (sd1 - 8 <= md1 <= 1.12 * sd1 + 8 and abs(mll - sll) <= 0.01 * sll + 8):
            raise CheckFailure(
                f"[n = {n}, tile {tile}] cachegrind measured D1 {md1}, LL {mll} misses; lab 06's "
                f"model on your trace {sd1}, {sll}: outside the stated tolerance (this machine's "
                "compiler or valgrind differs from the one the tolerance was measured with)."
            )
        rows.append(
            f"n={n} tile {tile}: D1 {sd1} vs {md1} ({md1 / sd1 - 1:+.1%}), LL {sll} vs {mll}"
        )
    return f"{n_cases} traces exact; model vs cachegrind: " + "; ".join(rows)
