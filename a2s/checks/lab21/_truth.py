"""Shared by the lab 21 graders: run a rank program on SimWorld guarded, compare, ring bytes.

The ranks' inputs, the chunk sizes and the plain sum over ranks are the shared truths of
:mod:`a2s.checks.truths` (lab 20 uses them too)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.core import _Guarded, guarded, plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks
from a2s.checks.truths import chunks
from minitorch.comm.simworld import SimWorld

_A = "minitorch.comm.allreduce"
_C = "minitorch.comm.collectives"
ALGORITHMS = tuple(
    f"{_A}:{n}"
    for n in (
        "ring_all_reduce",
        "halving_doubling_all_reduce",
        "tree_all_reduce",
        "binary_tree_all_reduce",
        "double_binary_tree_all_reduce",
    )
)
BLOCKS = (*ALGORITHMS, "minitorch.comm.hierarchical:hierarchical_all_reduce", f"{_C}:all_reduce")


def run_sim(
    student: Any, exercise: str, blocks: Sequence[str], world: SimWorld, label: str, *columns: Any
) -> list[Any]:
    """Run ``student(comm, *column[r])`` on every rank of ``world``, each rank in its own
    process (:func:`~a2s.checks.harness.run_ranks`); plain results. ``world``'s
    counters, links and clock are the router's record: no rank can reach them."""
    guarded_student = student if type(student) is _Guarded else guarded(student, exercise, blocks)

    def rank(comm: Any, *args: Any) -> Any:  # runs in the rank's process
        given = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        out = guarded_student(comm, *given)
        for v, w in zip(args, given, strict=True):
            if isinstance(v, np.ndarray) and not np.array_equal(v, w):
                raise CheckFailure(
                    f"[{label}] rank {comm.rank}'s x was changed in place: work on a copy "
                    f"(buf = x.copy()); the caller still owns x."
                )
        return plain(out, what="result", case=label)

    try:
        run = run_ranks(rank, world, list(zip(*columns, strict=True)))
    except (StudentError, CheckFailure) as exc:
        if not str(exc).startswith(f"[{label}]"):
            exc.args = (f"[{label}] {exc}",)
        raise
    if run.unreceived:
        src, dst, _tag, count = run.unreceived[0]
        raise CheckFailure(
            f"[{label}] {count} message(s) from rank {src} to rank {dst} were never received: "
            "every rank gets its data with comm.recv (a value read any other way is not "
            "communication)."
        )
    return run.results


def same(got: Any, want: np.ndarray) -> bool:
    """Exact on integers, within 1e-9 on floats, same shape (a list or tuple is an array)."""
    if isinstance(got, (list, tuple)):
        try:
            got = np.asarray(got, dtype=want.dtype if len(got) == 0 else None)
        except (TypeError, ValueError):
            return False
    if not isinstance(got, np.ndarray) or got.shape != want.shape or got.dtype == object:
        return False
    if want.dtype.kind in "iu":  # integers asked: integers of x's dtype, exact
        return got.dtype == want.dtype and bool(np.array_equal(got, want))
    return bool(np.allclose(got, want, rtol=1e-9, atol=1e-9))


def _dtype_hint(got: Any, want: np.ndarray) -> str:
    """The values are right but the dtype is not x's (an accumulator of another dtype)."""
    if (
        isinstance(got, np.ndarray)
        and got.shape == want.shape
        and got.dtype != want.dtype
        and want.dtype.kind in "iu"
        and np.array_equal(got, want)
    ):
        return (
            f"The sums are right but came back as {got.dtype} for {want.dtype} inputs: keep "
            "x's dtype (buf = x.copy(), not x.astype(float) or np.zeros(n))."
        )
    return ""


def check_values(
    label: str, outs: list[Any], want: np.ndarray, hint: str | Callable[[Any], str]
) -> None:
    """Fail on the first rank whose result differs from ``want`` (``hint`` may look at it)."""
    for r, got in enumerate(outs):
        if not same(got, want):
            if _dtype_hint(got, want):
                hint = _dtype_hint(got, want)
            elif callable(hint):
                hint = hint(got)
            shown = (
                f"array{got.shape} {np.array2string(got, threshold=8)}"
                if isinstance(got, np.ndarray)
                else repr(got)[:80]
            )
            raise CheckFailure(
                f"[{label}] rank {r} of {len(outs)} returned {shown}, expected "
                f"array{want.shape} {np.array2string(want, threshold=8)}. {hint}"
            )


def ring_bytes(n: int, p: int, item: int) -> list[list[int]]:
    """Bytes per rank of a ring, one list per owner shift ``k`` (rank r owns chunk r + k after
    the reduce-scatter): it never sends that chunk in the reduce-scatter, nor its right
    neighbour's in the all-gather, so it sends ``2 n - c[r+k] - c[r+k+1]``."""
    c = [item * s for s in chunks(n, p)]
    full = item * n
    return [[2 * full - c[(r + k) % p] - c[(r + k + 1) % p] for r in range(p)] for k in range(p)]
