"""Grader of exercise 15.1: schedule a matmul by hand (split, reorder), under a miss budget.

The learner's ``schedule_matmul(s)`` gets the plain nest of an ``n x n`` matmul and returns a
scheduled one. The grader reads the returned nest itself: it evaluates each iterator's
expression over the loop counters (a few arithmetic tokens only), checks that every iteration
``(i, j, k)`` runs exactly once, runs the generated kernel and compares C with ``A @ B``, and
feeds the address trace it builds (A, B, then C per iteration, row-major, one array after the
other) to the LRU simulator of lab 06: a 2 KiB fully associative cache of 64-byte lines. The
budget is twice the lines of an 8 x 8 x 8 tiled nest, ``2 (2n^3 / (8L) + n^2 / L)``, L = 8
floats per line: the best untiled order (ikj) moves about ``n^3 / L`` lines and fails.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader
from minitorch.compiler.loops import Kernel, Nest, compile_nest, matmul, nest, reorder, split
from minitorch.hardware.cache import CacheConfig, simulate

__all__ = ["check_schedule_matmul", "miss_budget", "run_order"]

CACHE = CacheConfig(2048, 64, 32)
_TOKENS = re.compile(r"^[A-Za-z0-9_\s()*+%/-]+$")


def miss_budget(n: int) -> int:
    """Twice the lines an 8 x 8 x 8 tiled nest loads (8 floats per 64-byte line)."""
    return 2 * (2 * n**3 // 64 + n * n // 8)


def run_order(s: Nest, case: str) -> np.ndarray:
    """The iterations of ``s`` in run order, (P, 3), evaluated from its loops by the grader."""
    loops, names = s.loops, [lp.var for lp in s.loops]
    for var, expr in s.bind:
        used = set(re.findall(r"[A-Za-z_]\w*", expr))
        assert_true(
            bool(_TOKENS.match(expr)) and "**" not in expr and used <= set(names),
            f"[{case}] iterator {var} = {expr!r} uses something other than the loop variables "
            f"{names}: build the nest with the schedule primitives.",
        )
    size = int(np.prod([lp.extent for lp in loops]))
    assert_true(size <= 4 * 64**3, f"[{case}] the nest runs {size:,} iterations: too many.")
    counters = np.indices([lp.extent for lp in loops], dtype=np.int64).reshape(len(loops), -1)
    env = dict(zip(names, counters, strict=True))
    cols = [
        np.broadcast_to(eval(e, {"__builtins__": {}}, env), counters.shape[1:]) for _, e in s.bind
    ]
    points = np.stack(cols, axis=1)
    ext = np.array([e for _, e in s.kernel.dims])
    return points[((points >= 0) & (points < ext)).all(axis=1)]


_ONLY = (
    "Split and reorder only: {what}. Build the schedule from split(s, var, factor) and "
    "reorder(s, ...) (no fuse, unroll, vectorize, tile or hand-made loops)."
)


def _splits(expr: ast.expr, case: str) -> list[tuple[str, int]]:
    """The splits (var, factor) that give an iterator the expression ``expr``, outer first:
    ``v`` is no split; ``(vo * f + vi)`` splits v by f, then vo and vi may be split again."""
    if isinstance(expr, ast.Name):
        return []
    ok = (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, ast.Add)
        and isinstance(expr.left, ast.BinOp)
        and isinstance(expr.left.op, ast.Mult)
        and isinstance(expr.left.right, ast.Constant)
        and type(expr.left.right.value) is int
    )
    assert_true(ok, f"[{case}] " + _ONLY.format(what=f"an iterator is {ast.unparse(expr)!r}"))
    outer, inner = expr.left.left, expr.right  # type: ignore[attr-defined]
    root = _root(outer, case)
    assert_true(
        root.endswith("o") and _root(inner, case) == root[:-1] + "i",
        f"[{case}] " + _ONLY.format(what=f"an iterator is {ast.unparse(expr)!r}"),
    )
    factor = int(expr.left.right.value)  # type: ignore[attr-defined]
    return [(root[:-1], factor), *_splits(outer, case), *_splits(inner, case)]


def _root(expr: ast.expr, case: str) -> str:
    """The loop variable a split tree stands for: ``(ioo * 2 + ioi)`` is ``io``."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.BinOp) and isinstance(expr.left, ast.BinOp):
        return _root(expr.left.left, case)[:-1]
    assert_true(False, f"[{case}] " + _ONLY.format(what=f"an iterator is {ast.unparse(expr)!r}"))
    return ""


def split_and_reorder_only(got: Nest, kernel: Kernel, case: str) -> None:
    """``got`` is what split and reorder make of the plain nest: replay the splits its
    iterators name (with the course's own split), reorder to its loop order, compare."""
    want = nest(kernel)
    for var, expr in got.bind:
        try:
            tree = ast.parse(expr, mode="eval").body
        except SyntaxError:
            assert_true(False, f"[{case}] " + _ONLY.format(what=f"{var} = {expr!r}"))
        for name, factor in _splits(tree, case):
            try:
                want = split(want, name, factor)
            except (KeyError, ValueError):
                assert_true(False, f"[{case}] " + _ONLY.format(what=f"{var} = {expr!r}"))
    order = [lp.var for lp in got.loops]
    assert_true(
        sorted(order) == sorted(want.order),
        f"[{case}] " + _ONLY.format(what=f"loops {tuple(order)}, the splits give {want.order}"),
    )
    want = reorder(want, *order)
    kinds = sorted({lp.kind for lp in got.loops} - {"serial"})
    what = (
        f"{kinds[0]} loops"
        if kinds
        else "the loops' extents or the guards differ from what those splits give"
    )
    assert_true(got == want, f"[{case}] " + _ONLY.format(what=what))


def _trace(points: np.ndarray, n: int) -> np.ndarray:
    i, j, k = points.T
    a, b, c = (i * n + k) * 8, (n * n + k * n + j) * 8, (2 * n * n + i * n + j) * 8
    return np.stack([a, b, c], axis=1).ravel()


def _one_case(student: Callable[..., object], n: int, case: str) -> int:
    kernel = matmul(n, n, n)
    got: Any = student(nest(kernel))
    assert_true(
        type(got) is Nest and type(got.kernel) is Kernel and got.kernel == kernel,
        f"[{case}] return the scheduled Nest of the matmul you were given "
        f"(got {type(got).__name__}).",
    )
    points = run_order(got, case)
    seen = np.zeros((n, n, n), dtype=np.int64)
    np.add.at(seen, tuple(points.T), 1)
    assert_true(
        bool((seen == 1).all()),
        f"[{case}] {int((seen == 0).sum())} iterations (i, j, k) never run and "
        f"{int((seen > 1).sum())} run twice: C would be wrong. Split and reorder only.",
    )
    split_and_reorder_only(got, kernel, case)
    gen = np.random.default_rng(n)
    a, b, c = gen.standard_normal((n, n)), gen.standard_normal((n, n)), np.zeros((n, n))
    compile_nest(got)(a, b, c)
    err = float(np.abs(c - a @ b).max())
    assert_true(err < 1e-9 * n, f"[{case}] the generated kernel gives C != A @ B (max {err:.2e}).")
    misses = simulate(_trace(points, n), CACHE)[0].misses
    budget = miss_budget(n)
    assert_true(
        misses <= budget,
        f"[{case}] C is right but your schedule misses {misses:,} times in a 2 KiB cache "
        f"(budget {budget:,}, twice an 8x8x8 tiled nest). Split i, j and k and reorder so the "
        "tile loops are outside the point loops: three 8x8 tiles (1.5 KiB) then stay in cache.",
    )
    return misses


@grader(
    "15.1",
    blocks=(
        "minitorch.compiler.loops:tile",
        "minitorch.compiler.autotune:matmul_schedule",
    ),
    hand="budget",
)
def check_schedule_matmul(schedule_matmul: Callable[..., object]) -> str:
    """Exercise 15.1: a split/reorder schedule of an n x n matmul, misses within budget."""
    n_new = int(fresh_rng("15.1").choice([24, 48]))
    cases = [("n=32", 32), ("n=40", 40), (fresh(f"n={n_new}"), n_new)]
    misses = {n: _one_case(schedule_matmul, n, case) for case, n in cases}
    ikj = 32**3 // 8
    return (
        f"C = A @ B on {len(cases)} sizes (1 fresh); n=32: {misses[32]:,} misses "
        f"(budget {miss_budget(32):,}; untiled ikj ~{ikj:,}: {ikj / misses[32]:.1f}x more lines)"
    )
