"""Shared by the lab 20 graders: run a student's rank program on SimWorld, compare, budget.

The ranks' inputs, the chunk bounds and the plain sum over ranks are the shared truths of
:mod:`a2s.checks.truths` (lab 21 uses them too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from a2s.checks.core import plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import RankRun, run_ranks
from minitorch.comm.simworld import SimWorld

_C = "minitorch.comm.collectives"
BLOCKS = tuple(
    f"{_C}:{n}"
    for n in ("broadcast", "reduce", "all_reduce", "reduce_scatter", "all_gather", "all_to_all")
)


@dataclass
class WorldCase:
    """One run: per-rank argument lists, expected per-rank results and bytes per rank."""

    label: str
    args: list[tuple[Any, ...]]
    want: list[Any]
    budget: list[int]


def run_world(
    student: Any, exercise: str, case: WorldCase, *, what: str = "result"
) -> tuple[list[Any], RankRun]:
    """Run ``student(comm, *case.args[r])`` on every rank, each in its own process; plain
    results and the router's record (the world's counters live here, never on a rank)."""
    p = len(case.args)
    world = SimWorld(p)
    try:
        run = run_ranks(student, world, case.args)
    except (StudentError, CheckFailure) as exc:  # name the case
        exc.args = (f"[{case.label}] {exc}",)
        raise
    return [plain(o, what=what, case=case.label) for o in run.results], run


def compare(
    case: WorldCase,
    outs: list[Any],
    world: RankRun,
    *,
    value_hint: Callable[[int, Any, Any], str],
    budget_hint: Callable[[list[int]], str],
) -> None:
    """Fail on the first wrong rank result, then on any rank whose bytes differ from budget."""
    for r, (got, want) in enumerate(zip(outs, case.want, strict=True)):
        if not _same(got, want):
            hint = value_hint(r, got, want)
            if _float_ints(got, want):
                hint = (
                    f"The values are right but the ranks' int64 inputs came back as "
                    f"{got.dtype}: keep the dtype (start from x.copy() or np.zeros_like(x), "
                    "not np.zeros(n))."
                )
            raise CheckFailure(
                f"[{case.label}] rank {r} of {len(outs)} returned {_show(got)}, expected "
                f"{_show(want)}. {hint}"
            )
    if world.unreceived:
        src, dst, _tag, count = world.unreceived[0]
        raise CheckFailure(
            f"[{case.label}] right results, but {count} message(s) from rank {src} to rank "
            f"{dst} were never received: every rank gets its data with comm.recv (a value "
            "read any other way is not communication)."
        )
    sent = list(world.world.bytes_sent)
    if sent != case.budget:
        bad = next(r for r in range(len(sent)) if sent[r] != case.budget[r])
        raise CheckFailure(
            f"[{case.label}] right results, but rank {bad} sent {sent[bad]} bytes where the "
            f"algorithm sends exactly {case.budget[bad]} (all ranks: sent {sent}, formula "
            f"{case.budget}). {budget_hint(sent)}"
        )


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, list):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(want)
            and all(_same(g, w) for g, w in zip(got, want, strict=True))
        )
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        return False
    if want.dtype.kind in "iu":  # integers summed exactly, and still integers
        return got.dtype.kind in "iu" and bool(np.array_equal(got, want))
    return bool(np.allclose(got, want, rtol=1e-9, atol=1e-9))


def _float_ints(got: Any, want: Any) -> bool:
    """Integer data returned as floats with the right values (np.zeros(n) accumulators)."""
    return (
        isinstance(got, np.ndarray)
        and isinstance(want, np.ndarray)
        and want.dtype.kind in "iu"
        and got.dtype.kind == "f"
        and got.shape == want.shape
        and bool(np.array_equal(got, want))
    )


def _show(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"array{x.shape} {np.array2string(x, threshold=8)}"
    return repr(x)[:80]
