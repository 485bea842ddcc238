"""Grader of exercise 07.4: a shared-memory tiled matmul, held to the traffic of tiling.

Launch: block (16, 16), grid (n / 16, m / 16); thread (x, y) of block (bx, by) computes
c[16 by + y, 16 bx + x]; m, n, k are multiples of 16. Ground truth: float64 ``a @ b``.
Budget, a closed form of the tile T = 16 with float32 (a row of a tile is 64 bytes, two
32-byte sectors): each of the (m/T)(n/T) blocks reads k/T tiles of a and of b, 2T sectors
each, so

    global load sectors <= 4 m n k / T^2 = m n k / 64,   store sectors <= m n / 8,
    bank conflicts == 0.

An untiled kernel (every thread reads its row of a and column of b from global memory)
reads m n k / 8 sectors, 8x the budget, whatever its values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_close, fresh_rng, grader, rng
from a2s.checks.lab07._truth import (
    KERNELS,
    at_most,
    device,
    run_kernel,
    through_shared,
    touched_all,
)

__all__ = ["TILE", "check_matmul_tiled", "matmul_budget"]

TILE = 16
_UNTILED = (
    "Each element of a and b must come from global memory once per *tile*, not once per "
    "thread: load a 16x16 tile of a and of b into shared arrays (one element per thread), "
    "ctx.syncthreads(), accumulate 16 products from shared memory, ctx.syncthreads(), next tile."
)
_STAGE = (
    "Stage a 16x16 tile of a and of b in ctx.shared((16, 16)) (one element per thread), "
    "ctx.syncthreads(), accumulate 16 products read from shared memory, ctx.syncthreads()."
)
_LAYOUT = (
    "Load tiles so that threadIdx.x walks along a row (a[row, p0 + tx], b[p0 + ty, col]): "
    "then a warp's 32 lanes read two 64-byte rows."
)
_CONFLICTS = (
    "Read a_s[ty, p] (one word for a whole row of threads: a broadcast) and b_s[p, tx] "
    "(16 consecutive words); reading a_s[tx, p] or b_s[tx, p] walks down a column: "
    "16 lanes in one bank."
)


def matmul_budget(m: int, n: int, k: int) -> tuple[int, int]:
    """(load sectors, store sectors) of a 16x16-tiled float32 matmul (closed form)."""
    return 4 * m * n * k // TILE**2, m * n * 4 // 32


@grader("07.4", blocks=(f"{KERNELS}:matmul_tiled", f"{KERNELS}:matmul_naive"), hand="kernel")
def check_matmul_tiled(kernel: Callable[..., object]) -> str:
    """Exercise 07.4: c = a @ b with 16x16 shared tiles, at the traffic of tiling."""
    gen, new = rng(704), fresh_rng("07.4")
    named = [(16, 16, 16), (16, 32, 48), (48, 16, 32), (32, 32, 64), (64, 64, 64)]
    cases = [(f"a {m}x{k} @ b {k}x{n}", m, n, k, gen) for m, n, k in named]
    for _ in range(2):
        m, n, k = (16 * int(v) for v in new.integers(1, 4, 3))
        cases.append((fresh(f"a {m}x{k} @ b {k}x{n}"), m, n, k, new))
    loads = 0
    for case, m, n, k, src in cases:
        a = src.standard_normal((m, k)).astype(np.float32)
        b = src.standard_normal((k, n)).astype(np.float32)
        da, db, dc = device(a), device(b), device(np.full((m, n), np.nan, np.float32))
        stats = run_kernel(
            kernel, (n // TILE, m // TILE), (TILE, TILE), (da, db, dc, m, n, k), case
        )
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert_close(
            dc.to_numpy(),
            want,
            case=case,
            rtol=1e-4,
            atol=1e-4 * np.sqrt(k),
            what="c",
            hint="c[i, j] = sum over p of a[i, p] * b[p, j].",
        )
        for arr, name, stored in ((da, "a", False), (db, "b", False), (dc, "c", True)):
            touched_all(arr, stored=stored, name=name, case=case)
        ld, st = matmul_budget(m, n, k)
        why = f"4mnk / 16^2: k/16 tiles of a and b per block, {ld:,} sectors"
        hint = _UNTILED if stats.gld_transactions >= 4 * ld else _LAYOUT
        loads += at_most(stats, "gld_transactions", ld, case, why, hint)
        at_most(stats, "gst_transactions", st, case, "mn / 8: each c once", _LAYOUT)
        at_most(stats, "bank_conflicts", 0, case, "conflict-free tile reads", _CONFLICTS)
        through_shared(stats, case, _STAGE)
    return (
        f"{len(cases)} products right with 16x16 tiles: {loads:,} load sectors, "
        "8x fewer than untiled, 0 bank conflicts"
    )
