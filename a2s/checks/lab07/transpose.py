"""Grader of exercise 07.5: a transpose through shared memory without bank conflicts.

Launch: block (32, 32), grid (cols / 32, rows / 32); block (bx, by) moves the 32x32 tile
src[32 by :, 32 bx :] to dst[32 bx :, 32 by :]; rows and cols are multiples of 32.
Ground truth: ``src.T`` (exact). Budgets, closed forms for float32 with 32-byte sectors:

    load sectors <= 4 r c / 32,  store sectors <= 4 r c / 32  (every access coalesced),
    bank conflicts == 0.

The direct transpose writes a warp's 32 values 32 rows apart (32 sectors instead of 4);
the 32x32 tile read by column puts all 32 lanes in one bank (32-way); a 32x33 tile does not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_bits_equal, fresh_rng, grader, rng
from a2s.checks.lab07._truth import (
    KERNELS,
    at_most,
    device,
    run_kernel,
    through_shared,
    touched_all,
)

__all__ = ["check_transpose"]

_UNCOALESCED = (
    "A warp (one row of threads, threadIdx.x = 0..31) must read a row of src *and* write a "
    "row of dst. Writing dst[c, r] straight from src[r, c] puts the 32 lanes 32 rows apart: "
    "stage the tile in shared memory and write the transposed tile row by row."
)
_VALUES = "dst[j, i] = src[i, j]; block (bx, by) owns src's tile (by, bx)."
_STAGE = (
    "Store src's tile into ctx.shared((32, 33)) row by row, ctx.syncthreads(), then read it "
    "by column into a row of dst."
)
_CONFLICTS = (
    "Reading the 32x32 tile down a column (tile[tx, ty]) asks 32 words 32 apart of one bank: "
    "a 32-way conflict. Pad the tile to 32x33: word tx*33 + ty lands in bank (tx + ty) % 32."
)


@grader(
    "07.5",
    blocks=tuple(f"{KERNELS}:transpose_{v}" for v in ("naive", "shared", "padded")),
    hand="kernel",
)
def check_transpose(kernel: Callable[..., object]) -> str:
    """Exercise 07.5: dst = src.T, coalesced both ways, conflict-free in shared memory."""
    gen, new = rng(705), fresh_rng("07.5")
    named = [(32, 32), (64, 32), (32, 96), (64, 64)]
    cases = [(f"src {r}x{c}", r, c, gen) for r, c in named]
    r, c = (32 * int(v) for v in new.integers(1, 4, 2))
    cases.append((fresh(f"src {r}x{c}"), r, c, new))
    conflicts_avoided = 0
    for case, rows, cols, src_gen in cases:
        x = src_gen.standard_normal((rows, cols)).astype(np.float32)
        src, dst = device(x), device(np.full((cols, rows), np.nan, np.float32))
        stats = run_kernel(kernel, (cols // 32, rows // 32), (32, 32), (src, dst, rows, cols), case)
        got = dst.to_numpy()
        want = np.ascontiguousarray(x.T).view(np.uint32)
        assert_bits_equal(got.view(np.uint32), want, case=case, what="dst bits", hint=_VALUES)
        touched_all(src, stored=False, name="src", case=case)
        touched_all(dst, stored=True, name="dst", case=case)
        sectors = 4 * rows * cols // 32
        at_most(stats, "gld_transactions", sectors, case, "4rc / 32: coalesced rows", _UNCOALESCED)
        at_most(stats, "gst_transactions", sectors, case, "4rc / 32: coalesced rows", _UNCOALESCED)
        at_most(stats, "bank_conflicts", 0, case, "a padded tile", _CONFLICTS)
        through_shared(stats, case, _STAGE)
        conflicts_avoided += 31 * rows * cols // 32
    return (
        f"{len(cases)} transposes exact at the minimum traffic, 0 bank conflicts "
        f"({conflicts_avoided:,} avoided against an unpadded tile)"
    )
