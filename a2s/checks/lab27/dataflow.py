"""Graders of exercises 27.1 (weight-stationary) and 27.2 (output-stationary) dataflows.

The student's simulator gets a counting ``mac`` (the arithmetic of every PE for one cycle, on
``(R, C)`` arrays) and returns ``(C, busy)``. Ground truth is independent of the reference:
the product of small integer matrices (exact), the closed-form cycle count, and the wavefront
counted by a plain formula (PE ``(k, n)`` works on row ``m`` at cycle ``R + m + k + n``, WS;
PE ``(m, n)`` on step ``k`` at cycle ``m + n + k``, OS). A marked ``mac`` that adds a fresh
random mark (one per call) to every result proves that ``C`` really came out of the PEs: the
partial sum of ``C[m, n]`` meets the marks of cycles ``m + r + n``, ``r < R`` (WS), or every
mark (OS), and ``C`` must grow by exactly those.

The learner's simulator runs in a forked child (:func:`~a2s.checks.harness.run_apart`);
its ``mac`` is a request to this process, where the calls, the operand shapes, the products
summed PE by PE and the marks are kept: rewriting a counter in the child changes nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, rng
from a2s.checks.harness import request, run_apart

__all__ = ["check_output_stationary", "check_weight_stationary"]

_S = "minitorch.hardware.systolic"
BLOCKS = (
    f"{_S}:simulate_ws",
    f"{_S}:simulate_os",
    f"{_S}:tiled_gemm",
    f"{_S}:ws_cycles",
    f"{_S}:os_cycles",
    f"{__name__}:_wave",
    f"{__name__}:_Mac",  # the grader's counting PE arithmetic: only its request is handed out
)

_SKEW = (
    "The wavefront is wrong: without the skew (row r of the array starting r cycles late) an "
    "activation meets the partial sum of another output row. PE (k, n) must work on row m of A "
    "at cycle R + m + k + n."
)
_NO_LOAD = "Count the weight load: R cycles shift the weights in before the first activation."
_FILL = (
    "Fill and drain are part of the run: C[m, n] leaves the bottom of the array R - 1 + n "
    "cycles after row m entered, so one fold takes 2R + C + M - 2 cycles, not R + M."
)
_SMALL = (
    "Fill and drain cross the whole array, not only the used PEs: a partial sum goes through "
    "all R rows and the last column is C - 1 PEs away (use rows and cols, not K and N)."
)
_WORK_WS = (
    "PE (k, n) multiplies every A[m, k] that passes it by its weight B[k, n], and the input "
    "column gets 0 when no row of A enters (other PEs hold weight 0)."
)
_WORK_OS = "PE (m, n) multiplies A[m, k] by B[k, n] for every k; the edges get 0 outside A and B."
_OS_DRAIN = "Count the drain: the accumulators shift out of the array, one row per cycle (R)."
_OS_FILL = "The last MAC is at cycle (M-1)+(N-1)+(K-1) of a full array: K + R + C - 2 cycles."


@dataclass(slots=True)
class _Mac:
    """The PEs' arithmetic for one cycle, counted in the grader's process (the learner's code
    runs in a forked child and reaches it only through :func:`_mac_request`). With ``marks``
    each call adds its own mark (drawn here, one per call) to every PE's result."""

    shape: tuple[int, int]
    marks: np.ndarray | None = None
    calls: int = 0
    bad: list[tuple[int, ...]] = field(default_factory=list)
    work: np.ndarray | None = None  # the products each PE computed, summed over cycles

    def __call__(self, x: np.ndarray, y: np.ndarray, acc: np.ndarray) -> np.ndarray:
        x, y, acc = (np.asarray(v, dtype=np.float64) for v in (x, y, acc))
        mark = 0.0
        if self.marks is not None and self.calls < len(self.marks):
            mark = float(self.marks[self.calls])
        self.calls += 1
        if not x.shape == y.shape == acc.shape == self.shape:
            self.bad.append(x.shape)
        product = x * y
        if product.shape == self.shape:
            self.work = product if self.work is None else self.work + product
        return acc + product + mark


def _mac_request(x: object, y: object, acc: object) -> object:
    """The ``mac`` the learner's function gets: a request to the grader's process."""
    return request("mac", x, y, acc)


_NAMED = [  # (label, M, K, N, R, C)
    ("one PE", 1, 1, 1, 1, 1),
    ("2x2 on a 2x2 array", 2, 2, 2, 2, 2),
    ("rectangular fold that fills the array", 5, 3, 4, 3, 4),
    ("fold smaller than the array", 3, 2, 3, 4, 5),
    ("one row of A: a GEMV", 1, 6, 6, 6, 6),
    ("tall A, wide array", 9, 4, 2, 4, 6),
]


def _wave(m: int, k: int, n: int, offset: int, total: int) -> np.ndarray:
    idx = np.add.outer(np.add.outer(np.arange(m), np.arange(k)), np.arange(n)).ravel()
    return np.bincount(idx + offset, minlength=total)[:total]


def _run(
    student: Callable[..., object],
    a: np.ndarray,
    b: np.ndarray,
    dims: tuple[int, int],
    marks: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, _Mac]:
    mac = _Mac(dims, marks)  # a local of this frame: the count lives in the grader's process
    got = run_apart(student, a.copy(), b.copy(), *dims, _mac_request, serve={"mac": mac})
    if not (isinstance(got, tuple | list) and len(got) == 2):
        raise CheckFailure("Return the pair (C, busy): the product and the busy PEs per cycle.")
    return np.asarray(got[0]), np.asarray(got[1]), mac


def _one(
    student: Callable[..., object],
    case: str,
    shape: tuple[int, ...],
    ws: bool,
    gen: np.random.Generator,
) -> int:
    m, k, n, rows, cols = shape
    a = gen.integers(-4, 5, (m, k)).astype(np.float64)
    b = gen.integers(-4, 5, (k, n)).astype(np.float64)
    want = a.astype(np.int64) @ b.astype(np.int64)
    c, busy, mac = _run(student, a, b, (rows, cols), None)
    head = f"[{case}] A {a.shape} @ B {b.shape} on a {rows}x{cols} array"
    if ws:
        total, compute, offset = 2 * rows + cols + m - 2, m + rows + cols - 2, rows
        wrong = {
            m + k + n - 2: _NO_LOAD,
            m + rows + cols - 2: _NO_LOAD,
            rows + m: _FILL,
            rows + m + k + n - 2: _SMALL,
        }
    else:
        total, compute, offset = 2 * rows + cols + k - 2, k + rows + cols - 2, 0
        wrong = {k + rows + cols - 2: _OS_DRAIN, m + n + k - 2 + rows: _OS_FILL}
    assert_true(c.shape == want.shape, f"{head}: C has shape {c.shape}, expected {want.shape}.")
    assert_true(
        busy.ndim == 1 and busy.dtype.kind in "iu",
        f"{head}: busy must be a 1-D int array, one entry per cycle (got {busy.dtype} "
        f"{busy.shape}).",
    )
    assert_true(
        len(busy) == total,
        f"{head}: {len(busy)} cycles, expected {total}. "
        + wrong.get(len(busy), "Count every cycle: load, stream, fill and drain."),
    )
    assert_true(np.array_equal(c, want), f"{head}: C differs from A @ B. {_SKEW}")
    expected = _wave(m, k, n, offset, total)
    assert_true(
        np.array_equal(busy, expected),
        f"{head}: busy PEs per cycle {busy.tolist()[:12]}..., expected "
        f"{expected.tolist()[:12]}... ({'WS' if ws else 'OS'}). {_SKEW}",
    )
    assert_true(
        mac.calls == compute and not mac.bad,
        f"{head}: mac was called {mac.calls} times (operand shapes {mac.bad[:1] or 'ok'}); "
        f"expected once per {'streaming' if ws else 'compute'} cycle ({compute}), on all "
        f"{rows}x{cols} PEs at once.",
    )
    work = np.zeros((rows, cols))
    if ws:  # PE (k, n) multiplies every A[m, k] by its weight B[k, n]
        work[:k, :n] = a.sum(axis=0)[:, None] * b
    else:  # PE (m, n) accumulates A[m, k] B[k, n] over k
        work[:m, :n] = want
    got_work = np.zeros((rows, cols)) if mac.work is None else mac.work
    assert_true(
        np.array_equal(got_work, work),
        f"{head}: the products the PEs computed (summed over the cycles, PE by PE) are not "
        f"the dataflow's: {_WORK_WS if ws else _WORK_OS} C must come out of the PEs' own "
        "arithmetic.",
    )
    marks = gen.integers(1, 1000, compute).astype(np.float64)  # a fresh mark per call
    c2, _, _ = _run(student, a, b, (rows, cols), marks)
    if ws:  # the partial sum of C[m, n] is at PE row r in streaming cycle m + r + n
        idx = np.add.outer(np.arange(m), np.arange(n))[:, :, None] + np.arange(rows)
        extra = marks[idx].sum(axis=2)
        why = "every partial sum crosses all R rows, cycle m + r + n at row r"
    else:  # every accumulator runs every compute cycle
        extra = np.full((m, n), marks.sum())
        why = "every accumulator runs every cycle"
    assert_true(
        np.array_equal(np.asarray(c2), want + extra),
        f"{head}: with a mac that adds its own mark to every PE's result (a new mark each "
        f"cycle), C should grow by the marks its partial sums met ({why}): C must be what the "
        "PEs computed, not a product taken some other way.",
    )
    return total


def _cases(
    seed: int, exercise: str, ws: bool
) -> list[tuple[str, tuple[int, ...], np.random.Generator]]:
    gen, new = rng(seed), fresh_rng(exercise)
    named: list[tuple[str, tuple[int, ...], np.random.Generator]] = []
    for lbl, m0, k0, n0, r0, c0 in _NAMED:
        named.append((lbl, (m0 if ws else min(m0, r0), k0, n0, r0, c0), gen))
    for i in range(3):
        rows, cols = (int(v) for v in new.integers(2, 9, 2))
        m = int(new.integers(1, 10)) if ws else int(new.integers(1, rows + 1))
        k = int(new.integers(1, rows + 1)) if ws else int(new.integers(1, 10))
        n = int(new.integers(1, cols + 1))
        named.append((fresh(f"random case {i}"), (m, k, n, rows, cols), new))
    return named


@grader("27.1", blocks=BLOCKS, hand="parts")
def check_weight_stationary(weight_stationary: Callable[..., object]) -> str:
    """Exercise 27.1: weight_stationary(a, b, rows, cols, mac) -> (C, busy per cycle)."""
    cycles = [_one(weight_stationary, lbl, s, True, g) for lbl, s, g in _cases(2701, "27.1", True)]
    gemv = cycles[4]  # "one row of A": 36 MACs on 36 PEs
    return (
        f"{len(cycles)} folds (3 fresh) exact, every cycle count = 2R + C + M - 2 and the "
        f"wavefront PE by PE; the 6x6 GEMV kept the PEs busy {1 / gemv:.1%} of {gemv} cycles"
    )


@grader("27.2", blocks=BLOCKS, hand="parts")
def check_output_stationary(output_stationary: Callable[..., object]) -> str:
    """Exercise 27.2: output_stationary(a, b, rows, cols, mac) -> (C, busy per cycle)."""
    cycles = [
        _one(output_stationary, lbl, s, False, g) for lbl, s, g in _cases(2702, "27.2", False)
    ]
    return (
        f"{len(cycles)} folds (3 fresh) exact, every cycle count = 2R + C + K - 2, wavefront exact"
    )
