"""Comparisons of the graders: plain values, arrays within tolerance, exact bits.

Every value that student code returns is first made *plain* (:func:`plain`): exact builtins,
numpy scalars and arrays. An object that decides its own equality (an ``int`` subclass whose
``==`` always says yes) fails before any comparison runs.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.errors import CheckFailure

__all__ = ["assert_bits_equal", "assert_close", "assert_true", "chosen_hint", "fmt_bytes", "plain"]


_PLAIN_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def _is_numpy_scalar_type(kind: type) -> bool:
    """Whether ``kind`` is one of numpy's own scalar types (``np.float32``, ``np.bool_``, ...).

    A subclass, even one that sets its ``__module__`` to ``"numpy"``, is not numpy's own.
    """
    return (
        issubclass(kind, np.generic)
        and kind.__module__ == "numpy"
        and getattr(np, kind.__name__, None) is kind
    )


# Exact stdlib dict types whose equality is a dict's: read as plain dicts (a subclass still fails).
_STDLIB_DICTS = (collections.Counter, collections.OrderedDict, collections.defaultdict)


def plain(x: Any, *, what: str = "result", case: str = "") -> Any:
    """Return ``x`` as plain data: exact builtins, numpy scalars and arrays of numeric dtype.

    Tuples, lists and dicts are converted item by item; a torch tensor becomes a numpy array.
    A subclass of a builtin, of a numpy scalar type or of ``ndarray`` (say, an ``int`` whose
    ``==`` always says yes) fails: the grader compares values, never objects that decide their
    own equality.
    """
    where = f"[{case}] " if case else ""
    kind = type(x)
    if kind in _PLAIN_SCALARS or _is_numpy_scalar_type(kind):
        return x
    if kind is np.ndarray:
        if x.dtype.kind not in "biufcSU":
            raise CheckFailure(f"{where}{what} is an array of {x.dtype}; return numbers.")
        return x.copy()
    if kind in (tuple, list):
        return kind(plain(v, what=what, case=case) for v in x)
    if kind is dict or kind in _STDLIB_DICTS:  # a Counter or OrderedDict reads as a plain dict
        return {
            plain(k, what=what, case=case): plain(v, what=what, case=case) for k, v in x.items()
        }
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        return np.array(x.detach().cpu().numpy(), copy=True)
    if isinstance(x, (*_PLAIN_SCALARS[:-1], np.generic, np.ndarray, tuple, list, dict)):
        raise CheckFailure(
            f"{where}{what} is a {kind.__qualname__}, a subclass of "
            f"{next(b.__name__ for b in kind.__mro__[1:] if b.__module__ in ('builtins', 'numpy'))}"
            "; return a plain value (the grader does not let a value decide its own equality)."
        )
    return x


def _as_array(x: Any, what: str, case: str) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    elif type(x) is not np.ndarray and isinstance(x, (*_PLAIN_SCALARS[:-1], np.ndarray, list)):
        x = plain(x, what=what, case=case)  # a subclass deciding its own equality fails here
    try:
        return np.asarray(x)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise CheckFailure(
            f"[{case}] {what}: could not read {type(x).__name__} as an array"
        ) from exc


def _where(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]" if index else "(scalar)"


def assert_close(
    actual: Any,
    expected: Any,
    *,
    case: str,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    what: str = "result",
    hint: Hint = "",
) -> float:
    """Compare arrays with ``|a - e| <= atol + rtol |e|``; return the max abs error.

    On failure the message names the case, both shapes, the max error, the first mismatch and
    the hint. A string hint is shown on every mismatch: let it restate the rule, never guess
    a cause. To name a mistake, pass ``hint(got, want) -> str`` that matches the answer
    against the modelled mistake and returns ``""`` when none matches (:func:`chosen_hint`).
    """
    a = _as_array(actual, what, case)
    e = _as_array(expected, what, case)
    if a.shape != e.shape:
        shown = chosen_hint(hint, a, e)
        raise CheckFailure(
            f"[{case}] {what} has shape {a.shape}, expected {e.shape}."
            + (f" {shown}" if shown else "")
        )
    a64 = a.astype(np.float64)
    e64 = e.astype(np.float64)
    same_nan = np.isnan(a64) & np.isnan(e64)
    with np.errstate(invalid="ignore"):  # inf - inf: handled on the next line
        err = np.where(same_nan, 0.0, np.abs(a64 - e64))
    err = np.where(np.isinf(a64) & (a64 == e64), 0.0, err)
    bad = ~(err <= atol + rtol * np.abs(np.nan_to_num(e64, nan=0.0, posinf=0.0, neginf=0.0)))
    max_err = float(np.nanmax(np.where(np.isnan(err), np.inf, err))) if err.size else 0.0
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        shown = chosen_hint(hint, a, e)
        raise CheckFailure(
            f"[{case}] {what} differs in {int(bad.sum())} of {bad.size} entries "
            f"(max abs error {max_err:.3g}, rtol={rtol:g}, atol={atol:g}); first at {_where(idx)}: "
            f"got {a64[idx].item()!r}, expected {e64[idx].item()!r}."
            + (f" {shown}" if shown else "")
        )
    return max_err


def assert_bits_equal(
    actual: Any, expected: Any, *, case: str, what: str = "bit patterns", hint: Hint = ""
) -> None:
    """Require exact equality (integers, bit patterns); show the first mismatch in hex.

    ``hint``: as in :func:`assert_close` (a callable chooses it by matching the answer)."""
    a = _as_array(actual, what, case)
    e = _as_array(expected, what, case)
    if a.shape != e.shape:
        raise CheckFailure(f"[{case}] {what} has shape {a.shape}, expected {e.shape}.")
    if a.dtype.kind not in "iub" and e.dtype.kind in "iu":
        raise CheckFailure(f"[{case}] {what} must be integers, got dtype {a.dtype}.")
    bad = _bits_differ(a, e)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        width = max(2, e.dtype.itemsize * 2) if e.dtype.kind in "iu" else 0
        show = (lambda v: f"0x{int(v):0{width}x}") if width else repr
        shown = chosen_hint(hint, a, e)
        raise CheckFailure(
            f"[{case}] {what} differ in {int(bad.sum())} of {bad.size} entries; first at "
            f"{_where(idx)}: got {show(a[idx])}, expected {show(e[idx])}."
            + (f" {shown}" if shown else "")
        )


def _bits_differ(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Where two arrays differ bit for bit: floats by their bits (-0.0 is not 0.0), NaN = NaN.

    Floats of one dtype compare their bit patterns; of two widths, their values and signs.
    Any NaN matches any NaN (its payload and sign depend on how it was made).
    """
    if a.dtype.kind != "f" or e.dtype.kind != "f":
        return np.asarray(a != e)
    both_nan = np.isnan(a) & np.isnan(e)
    if a.dtype == e.dtype:
        kind = f"u{a.dtype.itemsize}"
        differ = np.ascontiguousarray(a).view(kind) != np.ascontiguousarray(e).view(kind)
    else:
        differ = (a != e) | (np.signbit(a) != np.signbit(e))
    return differ & ~both_nan


Hint = str | Callable[[np.ndarray, np.ndarray], str]  # a rule, or a matcher of mistakes


def chosen_hint(hint: Hint, got: np.ndarray, want: np.ndarray) -> str:
    """The hint to show: a string as is; a callable's answer for (got, want), "" if it fails."""
    if not callable(hint):
        return hint
    try:
        return str(hint(got, want) or "")
    except (TypeError, ValueError, ArithmeticError, IndexError):
        return ""


def assert_true(condition: bool, message: str) -> None:
    """Raise :class:`CheckFailure` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailure(message)


def fmt_bytes(n: float) -> str:
    """Format a byte count for cost lines: ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
