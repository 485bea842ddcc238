"""Lab 08's trusted side, shared by its graders: running a student's kernel against the
instrumented HBM (tiles, traffic and peak memory), and the hint tables of the FlashAttention
graders (08.4 forward, 08.5 backward).

A kernel of lab 08 runs in a forked child process and gets a :class:`KernelHBM`, whose
``load``/``store``/``shape``/``alloc`` are requests to this process: the
:class:`~minitorch.kernels.io_model.HBM` (arrays, ``limits``, byte counters) never enters the
learner's reach. :func:`run_kernel` measures the kernel's peak Python memory in the child
(``tracemalloc``, which the kernel may read but not reset), turns a too-large tile into a teaching
failure and returns the peak.
:func:`assert_traffic` compares the bytes moved with the IO model's count, read and written
separately, and names the usual reason for a difference.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, ForbiddenCallError, _Guarded, assert_true, fmt_bytes
from a2s.checks.harness import request, run_apart
from a2s.checks.profiler import forbidden_message
from a2s.checks.truth_guard import truth_blocked
from a2s.checks.watch import Watch
from minitorch.kernels.io_model import HBM, TileTooLarge, Traffic

__all__ = ["KernelHBM", "assert_peak", "assert_traffic", "run_kernel"]

# ------------------------------------------- hint tables of 08.4 (forward), 08.5 (backward)
_RESCALE = (
    "When a new key block raises the running maximum m to m', rescale both l and the "
    "output accumulator by exp(m - m') before adding the new block."
)
_BUG_HINTS = {
    "no rescale": _RESCALE,
    "acc not rescaled": "You rescaled l but not the output accumulator: when m grows to m', "
    "multiply the accumulator by exp(m - m') too before adding P V_j.",
    "l not rescaled": "You rescaled the output accumulator but not l: when m grows to m', "
    "multiply l by exp(m - m') too before adding the new block's row sums.",
    "diagonal masked": "The causal mask hides keys c > r only: a query row sees its own key "
    "(c == r); masking c >= r leaves row 0 with no key at all.",
    "no mask": "Skipping future blocks is not enough: inside the blocks on the diagonal, mask "
    "S with -inf where the key column c > the query row r.",
    "default scale": "Use the scale you are given: s = 1 / sqrt(d) only when scale is None.",
}
_O_HINT = (
    "O_i = A / l after the last key block, with S = s Q_i K_j^T, P = exp(S - m') and the "
    "running m, l and A updated per key block."
)
_L_HINTS = {
    "log l": "L_i = m_i + log(l_i): your L is log(l) without the running maximum m.",
    "m": "L_i = m_i + log(l_i): your L is the running maximum alone.",
}
_MEM_HINT = (
    "Extra memory must stay O(tiles): never build an n x n (or bq x n) score matrix, "
    "nor gather all of K or V; keep one K_j, V_j tile at a time."
)
_GRAD_HINTS = {
    "no D": "dS = P * (dP - D_i) with D_i = rowsum(dO_i * O_i): yours left D out (dS = P * dP).",
    "default scale": "Use the scale you are given: s = 1 / sqrt(d) only when scale is None.",
    "no mask": "Recompute P with the causal mask: S = -inf where the key column c > the query "
    "row r, then P = exp(S - L).",
    "unscaled grads": "dQ_i += s dS K_j and dK_j += s dS^T Q_i: the scale s multiplies both.",
}
_GRAD_HINT = (
    "The gradients of attention: P = exp(S - L) recomputed per tile, dV_j += P^T dO_i, "
    "dP = dO_i V_j^T, dS = P * (dP - D_i), dQ_i += s dS K_j, dK_j += s dS^T Q_i."
)


# ------------------------------------------------------ a kernel against the instrumented HBM
_TILE = (
    "A kernel holds only tiles in SRAM: load and store one block of rows at a time "
    "(hbm.load(name, slice(i0, i1))), never a whole array."
)


class KernelHBM:
    """What a kernel receives, in the learner's process: every method is a request.

    ``load``, ``store``, ``shape``, ``alloc`` and ``limits`` go to the grader's process, which
    holds the :class:`HBM` (its arrays and its counters) and answers; the class has
    ``__slots__ = ()`` and its methods close over nothing, so no attribute, closure, ``gc``
    or ``vars`` route leads from it to the arrays or the counts.
    """

    __slots__ = ()

    def load(self, name: str, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """Copy the tile ``name[rows, cols]`` into SRAM (counted as read)."""
        return request("hbm.load", name, _ends(rows), _ends(cols))

    def store(
        self, name: str, value: Any, rows: slice = slice(None), cols: slice = slice(None)
    ) -> None:
        """Write ``value`` to the tile ``name[rows, cols]`` (counted as written)."""
        request("hbm.store", name, np.asarray(value), _ends(rows), _ends(cols))

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(request("hbm.shape", name))

    def alloc(self, name: str, shape: tuple[int, ...], dtype: Any = np.float64) -> None:
        """Allocate a zero-filled array in HBM (not counted)."""
        request("hbm.alloc", name, tuple(int(n) for n in shape), np.dtype(dtype).str)

    @property
    def limits(self) -> dict[str, int]:
        """The most elements one load or store of each array may move (a copy)."""
        return request("hbm.limits")

    def __repr__(self) -> str:
        return "<HBM: load, store, shape, alloc, limits (requests to the grader)>"


def _ends(s: Any) -> tuple[Any, Any, Any]:
    if not isinstance(s, slice):
        raise TypeError("HBM tiles are contiguous: index with slices like slice(i0, i1)")
    return (s.start, s.stop, s.step)


def _slice(ends: Any) -> slice:
    if type(ends) is not tuple or len(ends) != 3:
        raise TypeError("HBM tiles are contiguous: index with slices like slice(i0, i1)")
    for v in ends:
        if v is not None and not isinstance(v, (int, np.integer)):
            raise TypeError(f"a slice bound must be an int or None, got {type(v).__name__}")
    return slice(*(None if v is None else int(v) for v in ends))


def _serve(hbm: HBM, case: str, refused: list[str]) -> dict[str, Callable[..., Any]]:
    """The grader's side of :class:`KernelHBM`: the HBM answers, and counts, here."""

    def tile(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except TileTooLarge as exc:
            refused.append(str(exc))  # fails the check even if the kernel catches it
            raise CheckFailure(f"[{case}] {exc}. {_TILE}") from None

    def load(name: str, rows: Any, cols: Any) -> np.ndarray:
        return tile(lambda: hbm.load(str(name), _slice(rows), _slice(cols)))

    def store(name: str, value: Any, rows: Any, cols: Any) -> None:
        if type(value) is not np.ndarray:
            raise TypeError("store a numpy array (or numbers)")
        tile(lambda: hbm.store(str(name), value, _slice(rows), _slice(cols)))

    def alloc(name: str, shape: Any, dtype: str) -> None:
        hbm.alloc(str(name), tuple(int(n) for n in shape), np.dtype(str(dtype)))

    return {
        "hbm.load": load,
        "hbm.store": store,
        "hbm.shape": lambda name: tuple(hbm.shape(str(name))),
        "hbm.alloc": alloc,
        "hbm.limits": lambda: dict(hbm.limits),
    }


def _in_child(student: Callable[..., Any], measure: bool, *args: Any) -> int:
    """The learner's process: run the kernel on a :class:`KernelHBM`; its peak (tracemalloc).

    The meter is the kernel's to read, not to reset: in this (forked, disposable) process
    ``tracemalloc``'s ``start``, ``stop``, ``reset_peak`` and ``clear_traces`` raise a
    forbidden call before the kernel runs (the sealed kernel vetoes the ``gc`` route to the
    originals; a profile hook would cost 2x on every request).
    """
    if not measure:  # tracemalloc slows every request 3x: only where the peak is graded
        student(KernelHBM(), *args)
        return 0
    import _tracemalloc

    traced, reset = _tracemalloc.get_traced_memory, _tracemalloc.reset_peak
    if not _tracemalloc.is_tracing():
        _tracemalloc.start()
    for module in (tracemalloc, _tracemalloc):
        for name in ("start", "stop", "reset_peak", "clear_traces"):
            setattr(module, name, _forbidden(f"tracemalloc.{name}"))
    reset()
    base = traced()[0]
    student(KernelHBM(), *args)
    return int(traced()[1] - base)


def _forbidden(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise ForbiddenCallError(
            forbidden_message(name).replace(
                "this exercise asks you to write what that routine does",
                "it is the meter of your kernel's memory",
            )
        )

    return call


def run_kernel(
    student: Callable[..., Any], hbm: HBM, *args: Any, case: str, measure: bool = False
) -> int:
    """Run ``student(view, *args)`` apart; return the peak bytes it allocated (tracemalloc,
    with ``measure``; 0 without).

    The kernel runs in a forked child (:func:`a2s.checks.harness.run_apart`) with a
    :class:`KernelHBM` whose loads and stores are requests: the HBM, its arrays and its
    counters stay in this process, which serves them. A tile over its SRAM limit fails the
    check here, whether or not the kernel catches the error. No bytecode scan: whatever the
    kernel reaches in its process (private attributes, ``gc``, ``vars``) is the child's copy,
    and the grade is taken from this process's HBM.
    """
    if isinstance(student, _Guarded) and student.watch is None:  # built once, inherited
        student.watch = Watch(student.forbid, student.blocks)
        student.watch.scan(student.fn)
        with student.watch.active():  # its first use builds classes: not the kernel's memory
            pass
    with truth_blocked():  # the guard gathers its stubs here, not in the measured call
        pass
    refused: list[str] = []
    serve = _serve(hbm, case, refused)
    peak = run_apart(_in_child, student, measure, *args, serve=serve, timeout=60)
    if refused:
        raise CheckFailure(f"[{case}] {refused[0]}. {_TILE}")
    if type(peak) is not int:
        raise CheckFailure(f"[{case}] the kernel's process did not report its memory.")
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
