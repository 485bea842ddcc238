"""Lab 09's trusted side, shared by its graders: array cases compared with a torch ground truth."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import Case, run_cases
from a2s.checks.compare import float_array

__all__ = ["run_array_cases"]


def _same(got: Any, want: Any) -> bool:
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    return g.shape == w.shape and bool(np.allclose(g, w, rtol=1e-6, atol=1e-8))


_FLOAT32 = (
    "Close, but not to 1e-6 relative: compute in float64 (no float32 casts or constants "
    "rounded to a few digits)."
)


def _message(what: str, truth: str) -> Callable[[Case, Any, Any, str], str]:
    def message(case: Case, got: Any, want: Any, hint: str) -> str:
        g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if g.shape != w.shape:
            return f"[{case.label}] {what} has shape {g.shape}, expected {w.shape}. {hint}".strip()
        nans = int(np.isnan(g).sum() - np.isnan(w).sum())
        if nans > 0:
            return f"[{case.label}] {what} has {nans} NaN values where {truth} has numbers. {hint}"
        err = float(np.nanmax(np.abs(g - w))) if g.size else 0.0
        if not hint and err < 1e-4 * (1 + float(np.abs(w).max(initial=0.0))):
            hint = _FLOAT32
        return (
            f"[{case.label}] {what} differs from {truth} (max abs error {err:.3g}). {hint}".strip()
        )

    return message


def _copying(student: Callable[..., Any]) -> Callable[..., Any]:
    """Call ``student`` on copies: the case's arrays feed the ground truth after the call, so
    an in-place edit (zeroing q, k, v) must not reach it."""

    def call(*args: Any) -> Any:
        return student(*(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args))

    return call


def run_array_cases(
    student: Callable[..., Any], cases: Sequence[Case], what: str, truth: str = "torch"
) -> int:
    """Every case's answer within 1e-6 relative of the truth (float64); first known mistake
    named. The student gets copies of each case's arrays."""
    return run_cases(
        _copying(student),
        cases,
        message=_message(what, truth),
        same=_same,
        read=lambda got, label: float_array(got, label, what),
        what=what,
    )
