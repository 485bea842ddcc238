"""Reading and comparing what student code returns, on top of core's ``plain`` and asserts.

Every helper here makes the student's value plain first (:func:`~a2s.checks.core.plain`),
so an object that decides its own equality fails before any comparison runs.

* :func:`number`, :func:`float_array`, :func:`array_out`: a result as a float / an array,
  with the exercise's own message when it is not one.
* :func:`call_pure`, :func:`unchanged`: the student's function may not modify its inputs.
* :func:`close`: float64 comparison scaled to the largest expected value.
* :func:`looks_like`: does an answer equal a known-wrong candidate (to pick the hint)?
* :func:`call`: a call whose argument-count TypeError says "keep the signature".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, StudentError, assert_close, assert_true, plain
from a2s.checks.values import Hint

__all__ = [
    "array_out",
    "call",
    "call_pure",
    "close",
    "float_array",
    "looks_like",
    "number",
    "unchanged",
]


def number(got: Any, *, case: str, message: str, kind: type = float) -> Any:
    """``kind(got)`` of a plain value; ``message`` (the exercise's wording) when it is not one."""
    value = plain(got, case=case)
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise CheckFailure(message) from None


def float_array(x: Any, case: str, what: str) -> np.ndarray:
    """The student's array result as float64 numpy, with a readable failure when it is not one."""
    x = plain(x, what=what, case=case)
    if hasattr(x, "data") and not isinstance(x, np.ndarray):  # a Tensor or Parameter
        x = plain(x.data, what=what, case=case)
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{case}] {what}: expected a numpy array, got {type(x).__name__}"
        ) from None


def array_out(got: Any, *, case: str, shape: tuple[int, ...], dtype: Any, dtype_hint: str) -> Any:
    """A plain array of ``shape`` and ``dtype`` (lab 01's bit-pattern results)."""
    got = np.asarray(plain(got, case=case))
    assert_true(got.shape == shape, f"[{case}] returned shape {got.shape}, expected {shape}.")
    assert_true(got.dtype == dtype, f"[{case}] returned dtype {got.dtype}; {dtype_hint}")
    return got


_MODIFIED = (
    "your function modified one of its input arrays in place; the engine still needs them "
    "(another rule may read the same array): work on copies."
)


def call_pure(student: Callable[..., Any], *args: Any, case: str, why: str = _MODIFIED) -> Any:
    """Call the student with copies of the array arguments; fail if they modified them.

    Returns the plain result (tuples and lists item by item).
    """
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    result = student(*copies)
    for before, after in zip(args, copies, strict=True):
        if isinstance(before, np.ndarray):
            assert_true(np.array_equal(before, after, equal_nan=True), f"[{case}] {why}")
    return plain(result, case=case)


def unchanged(before: np.ndarray, after: np.ndarray, message: str) -> None:
    """Fail with ``message`` when an input array was modified in place."""
    assert_true(np.array_equal(before, after, equal_nan=True), message)


def close(
    got: Any, want: np.ndarray, *, case: str, what: str, hint: Hint = "", rtol: float = 1e-8
) -> float:
    """float64 comparison: rtol 1e-8, atol rtol/100 relative to the largest expected value."""
    got = plain(got, what=what, case=case)
    scale = float(np.max(np.abs(want))) if np.size(want) else 1.0
    if isinstance(got, (tuple, list)):
        raise CheckFailure(f"[{case}] {what} is a {type(got).__name__}; return one array.")
    return assert_close(
        got, want, case=case, rtol=rtol, atol=rtol / 100 * max(scale, 1.0), what=what, hint=hint
    )


def looks_like(got: Any, candidate: np.ndarray) -> bool:
    """Whether ``got`` equals ``candidate`` (a known-wrong answer), to pick the hint."""
    try:
        a = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if a.shape != candidate.shape or not a.size:
        return False
    return bool(np.allclose(a, candidate, rtol=1e-6, atol=1e-9))


def call(student: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the (guarded) student function; a TypeError about arguments gets a clear message."""
    try:
        return student(*args, **kwargs)
    except StudentError as exc:
        if isinstance(exc.__cause__, TypeError) and "argument" in str(exc.__cause__):
            raise CheckFailure(
                f"{exc} — keep the signature of the exercise cell (names and keywords)."
            ) from None
        raise
