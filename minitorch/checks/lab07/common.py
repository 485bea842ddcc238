"""Shared by the lab 07 graders: launch a student's kernel and hold it to a budget.

A budget is a closed form of the kernel's shape (the minimum global segments, zero bank
conflicts), written in the grader, never read from the reference kernels. The counters come
from :func:`minitorch.kernels.simt.launch`; a count over its budget fails the check even
when every value is right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.checks.core import CheckFailure, assert_true
from minitorch.checks.hygiene import assert_public_api
from minitorch.kernels.simt import DeviceArray, KernelStats, launch, to_device

__all__ = ["KERNELS", "at_most", "device", "run_kernel", "through_shared", "touched_all"]

KERNELS = "minitorch.kernels.simt_kernels"


def device(x: np.ndarray) -> DeviceArray:
    """A host array copied to global memory (float32 unless it is already another dtype)."""
    return to_device(np.asarray(x))


def run_kernel(
    kernel: Callable[..., Any], grid: Any, block: Any, args: Sequence[Any], case: str
) -> KernelStats:
    """Launch the (guarded) student kernel on ``grid`` x ``block``; return its counters.

    The counters live in the context the kernel receives: a kernel that reaches a private
    attribute (``ctx._stats``, ``arr._data``) or reflection is rejected before it runs.
    """
    assert_public_api(
        kernel, what="your kernel", api="ctx's public API (threadIdx, load, store, shared, ...)"
    )
    try:
        return launch(kernel, grid, block, args)
    except CheckFailure as exc:
        if not str(exc).startswith(("[", "not implemented")):
            exc.args = (f"[{case}] {exc}",)
        raise


def touched_all(arr: DeviceArray, *, stored: bool, name: str, case: str) -> None:
    """Every element of ``arr`` went through ctx.load (or ctx.store): the kernel did the work."""
    done = arr.writes if stored else arr.reads
    verb = "stored through ctx.store" if stored else "read through ctx.load"
    missing = int(np.count_nonzero(~done))
    assert_true(
        missing == 0,
        f"[{case}] {missing} of {done.size} elements of `{name}` were never {verb}: a kernel "
        "moves data only with ctx.load / ctx.store (the counters see nothing else).",
    )


def at_most(stats: KernelStats, counter: str, budget: int, case: str, why: str, hint: str) -> int:
    """Fail unless ``stats.<counter> <= budget``; return the count."""
    got = int(getattr(stats, counter))
    assert_true(
        got <= budget,
        f"[{case}] {counter} = {got:,}, over the budget of {budget:,} ({why}); the values may "
        f"be right, the traffic is not. {hint}",
    )
    return got


def through_shared(stats: KernelStats, case: str, stage: str) -> None:
    """Every block stored to shared memory, synchronised and loaded back.

    The simulator runs a block's threads as one numpy vector, so ``v.sum()``, ``v.reshape``
    or ``v.T`` on a loaded vector would move values between threads for free, something no
    GPU thread can do (the budgets see no shared traffic at all). A kernel whose blocks never
    went through ``ctx.shared`` and ``ctx.syncthreads()`` did not do the exercise.
    """
    blocks = max(int(stats.blocks), 1)
    used = (stats.shared_store_requests, stats.shared_load_requests, stats.barriers)
    assert_true(
        min(used) >= blocks,
        f"[{case}] over {blocks} block(s) your kernel made {used[0]} shared stores, {used[1]} "
        f"shared loads and {used[2]} syncthreads(): values crossed between threads through "
        "numpy on the thread vector (sum, reshape, .T over lanes), which no GPU thread can do. "
        f"{stage}",
    )
