"""Grader of exercise 07.3: a tree reduction in shared memory, one sum per block.

Ground truth: float64 sums of each block's slice (numpy). Budgets, closed forms of a block of
B threads (W = B / 32 warps) reducing in log2(B) steps s = B/2, ..., 1, where a step costs at
most 2 loads and 1 store for each warp that has an active lane:

    shared transactions <= W (fill) + 3 * sum_s ceil(s / 32) + 1 (read the total)
    bank conflicts == 0,  global load sectors <= ceil(4 n / 32)

Sequential addressing (threads t < s add ``sdata[t + s]``) meets both. Interleaved
addressing (index ``2 s t``) has the right count of warps but 2- to 16-way conflicts;
divergent addressing (threads with ``t % 2s == 0``) keeps every warp issuing every step.
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

__all__ = ["check_block_sum", "shared_budget"]

_STAGE = (
    "Stage each thread's value in ctx.shared(B), then add pairs as a tree with "
    "ctx.syncthreads() between steps; thread 0 stores sdata[0]."
)
_CONFLICTS = (
    "Interleaved addressing (thread t at index 2*s*t) puts a warp's lanes 2s words apart, "
    "so several share a bank and serialize. Use sequential addressing: for s = B/2, B/4, ..., "
    "1, threads t < s add sdata[t + s] into sdata[t] (32 consecutive words: 32 banks)."
)
_DIVERGENT = (
    "Too many warps issue each step: with the active threads chosen by t % (2*s) == 0 they "
    "are spread over every warp, so every warp runs every step (divergence). Keep the active "
    "threads contiguous (t < s): then only ceil(s / 32) warps issue, the rest have retired."
)
_SUMS = "out[b] is the sum of x[b*B : (b+1)*B] (elements past n count 0)."
_GLOBAL = "Each thread loads its one element of x (coalesced), the tree runs in shared memory."


def shared_budget(block: int) -> int:
    """Shared-memory transactions one block of ``block`` threads may spend (closed form)."""
    steps, s = 0, block // 2
    while s >= 1:
        steps += 3 * -(-s // 32)  # 2 loads + 1 store for each warp with an active lane
        s //= 2
    return -(-block // 32) + steps + 1


def _sums(x: np.ndarray, block: int) -> np.ndarray:
    pad = np.zeros(-(-x.size // block) * block)
    pad[: x.size] = x
    return pad.reshape(-1, block).sum(axis=1)  # float64


@grader(
    "07.3",
    blocks=tuple(f"{KERNELS}:block_sum_{v}" for v in ("sequential", "interleaved", "divergent")),
    hand="kernel",
)
def check_block_sum(kernel: Callable[..., object]) -> str:
    """Exercise 07.3: out[block] = sum of its slice of x; tree in shared memory, on budget."""
    gen, new = rng(703), fresh_rng("07.3")
    named = [(256, 256), (256, 1000), (256, 1), (128, 300), (64, 64), (512, 2048), (32, 40)]
    cases = [(f"block {b}, n = {n}", b, n, gen) for b, n in named]
    for _ in range(2):
        b, n = int(new.choice([64, 128, 256])), int(new.integers(1, 3000))
        cases.append((fresh(f"block {b}, n = {n}"), b, n, new))
    spent = 0
    for case, block, n, src in cases:
        x = src.standard_normal(n).astype(np.float32)
        blocks = -(-n // block)
        dx, out = device(x), device(np.full(blocks, np.nan, np.float32))
        stats = run_kernel(kernel, blocks, block, (dx, out, n), case)
        want = _sums(x.astype(np.float64), block)
        tol = 1e-5 * max(1.0, float(np.abs(x).sum()) / blocks)
        assert_close(out.to_numpy(), want, case=case, rtol=1e-5, atol=tol, what="sums", hint=_SUMS)
        touched_all(dx, stored=False, name="x", case=case)
        touched_all(out, stored=True, name="out", case=case)
        at_most(stats, "bank_conflicts", 0, case, "conflict-free addressing", _CONFLICTS)
        budget = blocks * shared_budget(block)
        what = f"{blocks} block(s) x {shared_budget(block)} for a block of {block}"
        spent += at_most(stats, "shared_transactions", budget, case, what, _DIVERGENT)
        at_most(stats, "gld_transactions", -(-4 * n // 32), case, "ceil(4n / 32)", _GLOBAL)
        through_shared(stats, case, _STAGE)
    return f"{len(cases)} reductions right, 0 bank conflicts, {spent:,} shared transactions"
