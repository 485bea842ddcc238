"""Running a student's kernel against the instrumented HBM: tiles, traffic and peak memory.

A kernel of lab 08 gets an :class:`~minitorch.kernels.io_model.HBM` whose ``limits`` hold its
SRAM tiles; it may move data only through ``load`` and ``store``. :func:`run_kernel` calls it
under ``tracemalloc`` (numpy reports its buffers there), turns a too-large tile into a
teaching failure and returns the peak of Python memory the kernel allocated.
:func:`assert_traffic` compares the bytes moved with the IO model's count, read and written
separately, and names the usual reason for a difference.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

from minitorch.checks.core import CheckFailure, StudentError, assert_true, fmt_bytes
from minitorch.checks.hygiene import assert_public_api
from minitorch.kernels.io_model import HBM, TileTooLarge, Traffic

__all__ = ["assert_peak", "assert_traffic", "run_kernel"]

_COUNTERS = frozenset({"reads", "writes", "limits", "array"})
_TILE = (
    "A kernel holds only tiles in SRAM: load and store one block of rows at a time "
    "(hbm.load(name, slice(i0, i1))), never a whole array."
)


def run_kernel(student: Callable[..., Any], hbm: HBM, *args: Any, case: str) -> int:
    """Call ``student(hbm, *args)``; return the peak bytes it allocated (tracemalloc).

    The counters are the HBM's own: a kernel that touches them (``hbm.reads``,
    ``hbm.limits``), reads a whole array uncounted (``hbm.array``) or uses a private
    attribute or reflection is rejected before it runs.
    """
    assert_public_api(
        student, what="your kernel", api="hbm.load, hbm.store, hbm.shape and hbm.alloc",
        deny=_COUNTERS,
    )  # fmt: skip
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        student(hbm, *args)
    except StudentError as exc:
        if isinstance(exc.__cause__, TileTooLarge):
            raise CheckFailure(f"[{case}] {exc.__cause__}. {_TILE}") from None
        raise
    finally:
        peak = tracemalloc.get_traced_memory()[1] - base
        if not was_tracing:
            tracemalloc.stop()
    return peak


def assert_peak(peak: int, budget: int, *, case: str, hint: str) -> None:
    """Fail when the kernel's extra memory ``peak`` is over ``budget`` bytes."""
    assert_true(
        peak <= budget,
        f"[{case}] your kernel allocated {fmt_bytes(peak)} at its peak; the budget for SRAM "
        f"tiles is {fmt_bytes(budget)}. {hint}",
    )


def assert_traffic(
    got: Traffic, want: Traffic, *, case: str, hints: list[tuple[Traffic, str]], other: str
) -> None:
    """Require HBM traffic equal to the model's; name a known deviation when one matches."""
    if got == want:
        return
    hint = next(
        (
            h
            for extra, h in hints
            if got == Traffic(want.reads + extra.reads, want.writes + extra.writes)
        ),
        other,
    )
    raise CheckFailure(
        f"[{case}] HBM traffic: read {got.reads:,} B and wrote {got.writes:,} B; the IO model "
        f"allows exactly {want.reads:,} B read and {want.writes:,} B written. {hint}"
    )
