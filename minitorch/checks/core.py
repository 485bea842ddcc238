"""Shared machinery of the graders: guards, comparisons, teaching messages, the success line.

Every lab grader (``minitorch.checks.labNN``) is a set of functions decorated with
:func:`grader`. A grader receives the student's callable already wrapped so that, while it
runs, the reference entry points of that exercise are blocked; calling them raises
:class:`ReferenceCalledError` (an ``AssertionError``, so the exercise counts as failed).

    @grader("01.2", blocks=("minitorch.numerics.bfloat16:round_to_bf16_bits",))
    def check_round_to_bf16(student) -> str:
        got = student(x)                      # guarded call
        assert_bits_equal(got, expected, case="ties")
        return "1,000,000 values bit-exact with torch"   # the cost line
"""

from __future__ import annotations

import functools
import importlib
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "CheckFailure",
    "ReferenceCalledError",
    "StudentError",
    "assert_bits_equal",
    "assert_close",
    "assert_true",
    "blocked",
    "fmt_bytes",
    "grader",
    "guarded",
    "rng",
]


class CheckFailure(AssertionError):
    """A wrong answer: the message says which case, what differs and what that usually means."""


class ReferenceCalledError(CheckFailure):
    """The student's code called the reference implementation it is meant to replace."""


class StudentError(Exception):
    """The student's code raised while the grader ran it (status ``error``, not ``failed``)."""


# --------------------------------------------------------------------------- guard
# the stub's code object runs with the *reference module's* globals once swapped in, so it
# reaches this module through __import__ and learns its own name from a replaced constant.
def _stub(*args: Any, **kwargs: Any) -> Any:
    raise __import__("minitorch.checks.core", fromlist=["_"])._reference_called("__A2S_NAME__")


_CALLS: list[str] = []  # names of blocked references called while a guard is active


def _reference_called(name: str) -> None:
    _CALLS.append(name)
    raise ReferenceCalledError(
        f"your code called the reference `{name}` instead of computing the answer itself. "
        "The course's minitorch package is there to read and to build on in later labs, "
        "but this exercise asks you to write it: implement it with numpy / plain Python."
    )


def _resolve(target: str) -> Any:
    module_name, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _functions_of(obj: Any) -> list[types.FunctionType]:
    """The plain functions behind ``obj``: itself (and what it wraps), or a class's methods."""
    if isinstance(obj, types.FunctionType):
        found = [obj]
        while isinstance(getattr(found[-1], "__wrapped__", None), types.FunctionType):
            found.append(found[-1].__wrapped__)  # functools.wraps decorators
        return found
    if isinstance(obj, type):
        found = []
        for value in vars(obj).values():
            raw = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            if isinstance(raw, property):
                raw = raw.fget
            if isinstance(raw, types.FunctionType):
                found.append(raw)
        return found
    raise TypeError(f"cannot block {obj!r}: not a plain function or class (fix the grader)")


@contextmanager
def blocked(targets: Sequence[str]) -> Iterator[None]:
    """Make every target (``"pkg.module:name"``, a function or a class) raise when called.

    The function objects themselves are patched (their ``__code__`` is swapped), so a
    reference imported under another name, or bound before the guard, is blocked too.
    """
    saved: list[tuple[types.FunctionType, types.CodeType]] = []
    try:
        for target in targets:
            obj = _resolve(target)
            for fn in _functions_of(obj):
                if fn.__code__.co_freevars:  # a swapped code object must keep the closure's size
                    if not isinstance(obj, type):
                        raise TypeError(f"cannot block closure {fn.__qualname__}; block its maker")
                    continue  # a method using super(): its class's other methods stay blocked
                name = f"{fn.__module__}.{fn.__qualname__}"
                consts = tuple(name if c == "__A2S_NAME__" else c for c in _stub.__code__.co_consts)
                saved.append((fn, fn.__code__))
                renamed = {"co_consts": consts, "co_name": fn.__code__.co_name}
                if sys.version_info >= (3, 11):
                    renamed["co_qualname"] = fn.__qualname__
                fn.__code__ = _stub.__code__.replace(**renamed)
        yield
    finally:
        for fn, code in reversed(saved):
            fn.__code__ = code


# --------------------------------------------------------------------------- grader
@dataclass(slots=True)
class _Guarded:
    """The student's callable, run with the exercise's references blocked."""

    fn: Callable[..., Any]
    exercise: str
    blocks: tuple[str, ...]
    calls: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        start = len(_CALLS)
        t0 = time.perf_counter()
        try:
            with blocked(self.blocks):
                result = self.fn(*args, **kwargs)
        except (CheckFailure, StudentError):
            raise
        except NotImplementedError as exc:
            raise CheckFailure(f"not implemented yet: {exc}") from None
        except Exception as exc:
            if len(_CALLS) > start:
                _reference_called(_CALLS[-1])
            raise StudentError(
                f"Exercise {self.exercise}: your function raised {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            self.seconds += time.perf_counter() - t0
        if len(_CALLS) > start:  # the student caught our exception: still a reference call
            _reference_called(_CALLS[-1])
        return result


def guarded(fn: Callable[..., Any], exercise: str, blocks: Sequence[str]) -> Callable[..., Any]:
    """Wrap ``fn`` (e.g. a method of a student's class) so it runs with ``blocks`` blocked."""
    return _Guarded(fn, exercise, tuple(blocks))


def grader(exercise: str, *, blocks: Sequence[str] = ()) -> Callable[..., Callable[..., None]]:
    """Turn ``body(student, ...) -> str`` into a check-cell entry point for ``exercise``.

    The body gets the student's callable(s) guarded; it raises :class:`CheckFailure` on a wrong
    answer and returns a one-line summary with a cost figure, printed on success.
    """

    def decorate(body: Callable[..., str]) -> Callable[..., None]:
        @functools.wraps(body)
        def check(*students: Any, **kwargs: Any) -> None:
            if not students:
                raise CheckFailure(f"Exercise {exercise}: pass your function to the check.")
            for s in students:
                if not callable(s):
                    raise CheckFailure(
                        f"Exercise {exercise}: expected your function (a callable), got "
                        f"{type(s).__name__}. Did the exercise cell run?"
                    )
            guarded = [_Guarded(s, exercise, tuple(blocks)) for s in students]
            summary = body(*guarded, **kwargs)
            print(f"✔ Exercise {exercise} passed: {summary}")

        check.exercise = exercise  # type: ignore[attr-defined]
        check.blocks = tuple(blocks)  # type: ignore[attr-defined]
        return check

    return decorate


# --------------------------------------------------------------------------- comparisons
def rng(seed: int) -> np.random.Generator:
    """Return the seeded generator every random case uses (same cases on every run)."""
    return np.random.default_rng(seed)


def _as_array(x: Any, what: str, case: str) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
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
    hint: str = "",
) -> float:
    """Compare arrays with ``|a - e| <= atol + rtol |e|``; return the max abs error.

    On failure the message names the case, both shapes, the max error, the first mismatch and
    the hint (what this mistake usually means).
    """
    a = _as_array(actual, what, case)
    e = _as_array(expected, what, case)
    if a.shape != e.shape:
        raise CheckFailure(
            f"[{case}] {what} has shape {a.shape}, expected {e.shape}."
            + (f" {hint}" if hint else "")
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
        raise CheckFailure(
            f"[{case}] {what} differs in {int(bad.sum())} of {bad.size} entries "
            f"(max abs error {max_err:.3g}, rtol={rtol:g}, atol={atol:g}); first at {_where(idx)}: "
            f"got {a64[idx].item()!r}, expected {e64[idx].item()!r}." + (f" {hint}" if hint else "")
        )
    return max_err


def assert_bits_equal(
    actual: Any, expected: Any, *, case: str, what: str = "bit patterns", hint: str = ""
) -> None:
    """Require exact equality (integers, bit patterns); show the first mismatch in hex."""
    a = _as_array(actual, what, case)
    e = _as_array(expected, what, case)
    if a.shape != e.shape:
        raise CheckFailure(f"[{case}] {what} has shape {a.shape}, expected {e.shape}.")
    if a.dtype.kind not in "iub" and e.dtype.kind in "iu":
        raise CheckFailure(f"[{case}] {what} must be integers, got dtype {a.dtype}.")
    bad = a != e
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        width = max(2, e.dtype.itemsize * 2) if e.dtype.kind in "iu" else 0
        show = (lambda v: f"0x{int(v):0{width}x}") if width else repr
        raise CheckFailure(
            f"[{case}] {what} differ in {int(bad.sum())} of {bad.size} entries; first at "
            f"{_where(idx)}: got {show(a[idx])}, expected {show(e[idx])}."
            + (f" {hint}" if hint else "")
        )


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
