"""Graders of exercises 06.2 (a loop order's trace), 06.3 (predict its misses) and 06.4 (the
blocked trace, under a miss budget).

Ground truth: a plain triple loop that writes the addresses one by one; a table of the
closed-form miss counts of the six loop orders; and, for the budget, the plain-loop LRU of
:mod:`a2s.checks.lab06.lru` run on the student's own trace (fully associative, 2 KiB of
64-byte lines). A blocked trace must visit every iteration ``(i, j, k)`` exactly once, so its
values are right, *and* miss at most 1.5x the lines a tiled nest loads (``tiled_lines``: A and
B tiles per block, C per tile of C; ``2 n^3 / (T L) + n^2 / L`` when rows are line-aligned).
Any order of the tiles or inside them passes; the untiled ikj order, value-correct, moves 2-4x
more lines and fails, and so do tiles too big for three to fit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Case, Mistake, fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab06._truth import _covers, line_events
from a2s.checks.lab06.lru import BLOCKS as CACHE_BLOCKS
from a2s.checks.lab06.lru import TRUTH_BLOCKS as LRU_TRUTH
from a2s.checks.lab06.lru import plain_lru
from a2s.checks.table import Table

__all__ = ["check_blocked_trace", "check_loop_trace", "check_predicted_misses"]

_T = "minitorch.kernels.traces"
ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")
# the grader's own traces, formula and line counts: blocked while the student's code runs
TRUTH_BLOCKS = (
    *LRU_TRUTH,
    *(
        f"{__name__}:{n}"
        for n in ("_plain_trace", "_formula", "tiled_lines", "_tile_lines", "_blocked_by")
    ),
)


def _plain_trace(n: int, order: str, layout: str = "row", elem: int = 8) -> np.ndarray:
    out: list[int] = []
    a0, b0, c0 = 0, n * n * elem, 2 * n * n * elem

    def at(r: int, c: int) -> int:
        return (r * n + c) if layout == "row" else (c * n + r)

    for x in range(n):
        for y in range(n):
            for z in range(n):
                v = dict(zip(order, (x, y, z), strict=True))
                i, j, k = v["i"], v["j"], v["k"]
                out += [a0 + at(i, k) * elem, b0 + at(k, j) * elem, c0 + at(i, j) * elem]
    return np.asarray(out, dtype=np.int64)


_TRACE_MISTAKES = [
    Mistake(
        "Your loops run in reverse: order[0] is the *outermost* loop, order[-1] the innermost.",
        answer=lambda n, order: _plain_trace(n, order[::-1]),
    ),
    Mistake(
        "Column-major addresses: row-major element (r, c) of an n x n matrix is at "
        "base + (r * n + c) * 8.",
        answer=lambda n, order: _plain_trace(n, order, layout="col"),
    ),
    Mistake(
        "Addresses are in bytes: multiply element indices by 8 (float64).",
        answer=lambda n, order: _plain_trace(n, order, elem=1),
    ),
]


_LAYOUT = "Check the layout: A at 0, B at 8n^2, C at 16n^2, row-major."


def _layout_hint(got: object, want: np.ndarray) -> str:
    g = np.asarray(got)
    if g.dtype.kind == "f" and g.shape == want.shape and np.array_equal(g, want):
        return "The values are right but floats: addresses are integers (build them as int64)."
    return _LAYOUT


def _same(got: object, want: np.ndarray) -> bool:
    g = np.asarray(got)
    return g.shape == want.shape and g.dtype.kind in "iu" and bool(np.array_equal(g, want))


def _trace_message(c: Case, got: object, want: np.ndarray, hint: str) -> str:
    shape = f"{np.asarray(got).shape} {np.asarray(got).dtype}"
    return (
        f"[{c.label}] trace differs from the plain triple loop (expected {want.size} int "
        f"addresses, A[i,k], B[k,j], C[i,j] per iteration; got {shape}). "
        f"{hint or _layout_hint(got, want)}"
    )


def _random_order(g: np.random.Generator, i: int) -> tuple[str, tuple[int, str]]:
    n, o = int(g.integers(3, 9)), str(g.choice(ORDERS))
    return f"n={n}, order {o}", (n, o)


TRACE = Table(
    "06.2",
    truth=lambda n, o: _plain_trace(n, o),
    named=[
        (f"n={n}, order {o}", (n, o))
        for n, o in [(1, "ijk"), (2, "ijk"), (2, "ikj"), (3, "jki"), (4, "kij"), (3, "jik")]
    ],
    draw=_random_order,
    seeded=6,
    fresh=3,
    mistakes=_TRACE_MISTAKES,
    same=_same,
    what="trace",
    message=_trace_message,
)

_LOOP_N = 16  # n^3 = 4,096 iterations: a Python loop over them shows as >= 4,096 line events


@grader(
    "06.2", blocks=(f"{_T}:loop_trace", f"{_T}:blocked_trace", f"{_T}:_interleave", *TRUTH_BLOCKS)
)
def check_loop_trace(loop_trace: Callable[..., object]) -> str:
    """Exercise 06.2: loop_trace(n, order) -> int64 byte addresses, A, B, C per iteration."""
    count = TRACE.grade(loop_trace)
    n = _LOOP_N
    _, lines = line_events(loop_trace, n, "ikj")
    assert_true(
        lines < n**3,
        f"[n={n}, order ikj] your function ran {lines:,} Python lines for {n**3:,} iterations: "
        "a Python loop (or comprehension, or generator) over the iterations. Build the trace "
        "with array operations: np.indices((n, n, n)) gives every loop counter at once.",
    )
    return (
        f"{count} traces (3 fresh) equal the plain triple loop, {lines} Python lines at "
        f"n={n} (no loop over its {n**3:,} iterations); n=64 has {3 * 64**3:,} accesses"
    )


# --------------------------------------------------------------------------- 06.3
_COEF = {"ijk": (1, 1), "jik": (1, 1), "ikj": (2, 0), "kij": (2, 0), "jki": (0, 2), "kji": (0, 2)}


def _formula(n: int, order: str, line_elems: int) -> float:
    per_line, per_access = _COEF[order]  # arrays walked with stride 1 / with stride n
    return float(n**3 * (per_line / line_elems + per_access))


_PREDICT_MISTAKES = [
    Mistake(
        "The innermost loop is order[-1] (the last letter), which decides each array's stride.",
        answer=lambda n, o, L: _formula(n, o[::-1], L),
    ),
    Mistake(
        "A stride-1 array misses once per *line* (n / L per inner loop), not once per access.",
        answer=lambda n, o, L: float(n**3 * sum(_COEF[o])),
    ),
    Mistake(
        "An array the inner loop does not move through stays in cache: count 0 misses for it "
        "(it is one line for the whole inner loop).",
        answer=lambda n, o, L: _formula(n, o, L) + n**3,
    ),
    Mistake(
        "n / L is a true division: when L does not divide n the count is fractional (the "
        "leading-order model), not n // L.",
        answer=lambda n, o, L: float(n * n * (_COEF[o][0] * (n // L) + _COEF[o][1] * n)),
    ),
]


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


@grader("06.3", blocks=(f"{_T}:predicted_misses", *TRUTH_BLOCKS), hand="property")
def check_predicted_misses(predicted_misses: Callable[..., object]) -> str:
    """Exercise 06.3: the leading-order miss count of a loop order in a tiny cache."""
    cases = [
        Case(f"n={n}, order {o}, {L} floats per line", (n, o, L), _formula, _PREDICT_MISTAKES)
        for n, L in [(64, 8), (32, 4), (60, 8), (33, 4)]  # and L not dividing n
        for o in ("jik", "ijk", "ikj", "jki", "kij", "kji")
    ]
    new = fresh_rng("06.3")
    cases += [
        Case(fresh(f"n={n}, order {o}, L={L}"), (n, o, L), _formula, _PREDICT_MISTAKES)
        for n, o, L in [
            (int(new.integers(8, 200)), str(new.choice(ORDERS)), int(new.choice([2, 4, 8, 16])))
            for _ in range(4)
        ]
    ]
    for case in cases:
        n = case.args[0]
        got = plain(predicted_misses(*case.args), what="prediction", case=case.label)
        want = case.want()
        # the leading order; adding the n^2 misses of the invariant array is also right
        if _is_number(got) and any(abs(float(got) - w) <= 1e-9 * w for w in (want, want + n * n)):
            continue
        hint = case.diagnose(got, lambda g, w: _is_number(g) and abs(g - w) <= 1e-9 * abs(w))
        raise CheckFailure(
            f"[{case.label}] predicted {got!r}, the model gives {want:,.2f} (or that plus n^2 "
            f"for the invariant array). {hint}"
        )
    ijk, ikj = _formula(64, "ijk", 8), _formula(64, "ikj", 8)
    return (
        f"{len(cases)} predictions (4 fresh); n=64: ijk {ijk:,.0f} misses, ikj {ikj:,.0f} "
        f"({ijk / ikj:.1f}x fewer lines moved)"
    )


# --------------------------------------------------------------------------- 06.4
CACHE = (2048, 64, 32)  # 2 KiB, 64-byte lines, fully associative: 256 floats
BUDGET = 1.5


def _tile_lines(n: int, r0: int, r1: int, c0: int, c1: int) -> int:
    """Lines (of 8 floats) that rows r0:r1, columns c0:c1 of a row-major n x n matrix span."""
    rows = np.arange(r0, min(r1, n))
    return int(((rows * n + min(c1, n) - 1) // 8 - (rows * n + c0) // 8 + 1).sum())


def tiled_lines(n: int, tile: int) -> int:
    """Lines a blocked nest loads when three tiles fit: A and B tiles per step, C per (ii, jj)."""
    starts = range(0, n, tile)
    total = 0
    for i0 in starts:
        for j0 in starts:
            total += _tile_lines(n, i0, i0 + tile, j0, j0 + tile)
            for k0 in starts:
                total += _tile_lines(n, i0, i0 + tile, k0, k0 + tile)
                total += _tile_lines(n, k0, k0 + tile, j0, j0 + tile)
    return total


def _blocked_by(trace: np.ndarray, n: int, tile: int, case: str) -> None:
    """The iterations of each T x T x T block are consecutive: one block at a time."""
    a, b = trace.reshape(-1, 3)[:, 0] // 8, trace.reshape(-1, 3)[:, 1] // 8 - n * n
    i, k, j = a // n, a % n, b % n
    nb = -(-n // tile)
    block = ((i // tile) * nb + k // tile) * nb + j // tile
    runs = int(np.count_nonzero(np.diff(block))) + 1
    assert_true(
        runs == nb**3,
        f"[{case}] your trace enters {nb**3:,} blocks of {tile} x {tile} x {tile} {runs:,} "
        f"times: finish one block (all its i, k, j) before the next, with the tile you are "
        f"given (here {tile}).",
    )


@grader(
    "06.4",
    blocks=(
        f"{_T}:blocked_trace",
        f"{_T}:loop_trace",
        f"{_T}:_interleave",
        *CACHE_BLOCKS,
        *TRUTH_BLOCKS,
    ),
    hand="budget",
)
def check_blocked_trace(blocked_trace: Callable[..., object]) -> str:
    """Exercise 06.4: blocked_trace(n, tile): every iteration once, misses within budget."""
    new = fresh_rng("06.4")
    n_new, t_new = int(new.choice([24, 32, 40])), int(new.choice([4, 6, 8]))
    cases = [
        ("n=32, tile 8", 32, 8),
        ("n=30, tile 8: edge tiles, rows not line-aligned", 30, 8),
        ("n=18, tile 4: half-line tiles, edge tiles", 18, 4),
        ("n=26, tile 6: a tile that divides neither n nor the line", 26, 6),
        (fresh(f"n={n_new}, tile {t_new}"), n_new, t_new),
    ]
    summary = ""
    for case, n, tile in cases:
        trace = np.asarray(plain(blocked_trace(n, tile), what="trace", case=case))
        _covers(trace, n, case, tile)
        misses = int((~plain_lru(trace, *CACHE)).sum())
        ideal = tiled_lines(n, tile)
        assert_true(
            misses <= BUDGET * ideal,
            f"[{case}] your trace computes C correctly but misses {misses:,} times in a 2 KiB "
            f"cache ({misses / ideal:.2f}x the {ideal:,} lines a {tile}-tiled nest loads; budget "
            f"{BUDGET}x). Loop over tiles (ii, kk, jj) outside and finish a whole T x T x T "
            "block inside before moving on, so its three tiles are reused while in cache.",
        )
        _blocked_by(trace, n, tile, case)
        if n == 32:
            summary = (
                f"n=32, T=8: {misses:,} misses = {misses * 64 / 1024:,.0f} KiB moved "
                f"(budget {BUDGET * ideal:,.0f}; untiled ikj moves ~n^3/L = {32**3 // 8:,} lines)"
            )
    return (
        f"{len(cases)} blocked traces (tiles 4, 6, 8; 1 fresh) cover every iteration once, "
        f"one T x T x T block at a time; {summary}"
    )
