"""The grader decorator: guarded student calls, fresh cases, no cascades, sealed verdicts.

Every lab grader (``a2s.checks.labNN``) is a set of functions decorated with
:func:`grader`. A grader receives the student's callable already wrapped so that, while it
runs, the reference entry points of that exercise are blocked (:mod:`.guard`) and calls into
forbidden modules (torch, by default) are caught anywhere in its call tree.

    @grader("01.2", blocks=("minitorch.numerics.bfloat16:round_to_bf16_bits",))
    def check_round_to_bf16(student) -> str:
        got = student(x)                      # guarded call
        assert_bits_equal(got, expected, case="ties")
        return "1,000,000 values bit-exact with torch"   # the cost line

When an exercise builds on an earlier one that has not passed in this kernel (``uses=``), the
check runs with the course's reference for the earlier one and says so. Every verdict is also
raised as the audit event ``a2s.verdict``; under ``a2s grade`` a hook installed before any
student code (:mod:`a2s.sealed`) signs it, so a verdict comes only from here.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from a2s.checks.errors import (
    NOT_IMPLEMENTED,
    CheckFailure,
    ForbiddenCallError,
    ReferenceCalledError,
    StudentError,
)
from a2s.checks.guard import _CALLS, blocked, reference_called, resolve, truth_blocked
from a2s.checks.intact import lab_intact
from a2s.checks.values import assert_bits_equal, assert_close, assert_true, fmt_bytes, plain
from a2s.checks.watch import Watch

__all__ = [
    "DEFAULT_FORBID",
    "CheckFailure",
    "ForbiddenCallError",
    "ReferenceCalledError",
    "StudentError",
    "assert_bits_equal",
    "assert_close",
    "assert_true",
    "blocked",
    "case_label",
    "fmt_bytes",
    "fresh_rng",
    "grader",
    "grading_seed",
    "guarded",
    "plain",
    "rng",
]

DEFAULT_FORBID: tuple[str, ...] = ("torch",)
_PASSED: dict[str, bool] = {}  # exercise -> did its last check pass (in this kernel)
_CASE = threading.local()  # .label: the case running now on this thread (see case_label)


@contextmanager
def case_label(label: str) -> Iterator[None]:
    """Name the case the student's code runs on: an error it raises then says ``[label]``."""
    before = getattr(_CASE, "label", None)
    _CASE.label = label
    try:
        yield
    finally:
        _CASE.label = before


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A short readable summary of a call's arguments, for error messages."""

    def one(v: Any) -> str:
        if isinstance(v, np.ndarray):
            return f"array{v.shape} {v.dtype}"
        text = repr(v)
        return text if len(text) <= 40 else type(v).__name__

    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


@dataclass(slots=True)
class _Guarded:
    """The student's callable, run with the exercise's references blocked and calls watched."""

    fn: Callable[..., Any]
    exercise: str
    blocks: tuple[str, ...]
    forbid: tuple[str, ...] = DEFAULT_FORBID
    allow: tuple[str, ...] = ()  # names of a blocked module that stay allowed
    calls: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    watch: Watch | None = None  # built at the first call (before any guard swaps code)

    @property
    def lab(self) -> str:
        return self.exercise.split(".")[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        start = len(_CALLS)
        if self.watch is None:
            self.watch = Watch(self.forbid, self.blocks, self.allow)
            self.watch.scan(self.fn)
        watch = self.watch
        watch.hits.clear()
        t0 = time.perf_counter()
        try:
            with blocked(self.blocks, self.allow), truth_blocked(self.lab), watch.active():
                result = self.fn(*args, **kwargs)
        except (CheckFailure, StudentError):
            if watch.hits:  # raise the first forbidden call, whatever the student did after
                watch.raise_first()
            raise
        except NotImplementedError as exc:
            raise CheckFailure(f"{NOT_IMPLEMENTED}: {exc}") from None
        except Exception as exc:
            if watch.hits:
                watch.raise_first()
            if len(_CALLS) > start:
                reference_called(_CALLS[-1])
            described = _describe(args, kwargs)
            called = f" (called with {described})" if described else ""
            label = getattr(_CASE, "label", None)
            case = f" [{label}]" if label else ""
            raise StudentError(
                f"Exercise {self.exercise}{case}: your function raised {type(exc).__name__}: "
                f"{exc}{called}"
            ) from exc
        finally:
            self.seconds += time.perf_counter() - t0
        if watch.hits:  # the student caught our exception: still a forbidden call
            watch.raise_first()
        if len(_CALLS) > start:  # the student caught our exception: still a reference call
            reference_called(_CALLS[-1])
        return result


def guarded(
    fn: Callable[..., Any],
    exercise: str,
    blocks: Sequence[str],
    forbid: Sequence[str] = DEFAULT_FORBID,
    allow: Sequence[str] = (),
) -> Callable[..., Any]:
    """Wrap ``fn`` (e.g. a method of a student's class) so it runs guarded like a check's."""
    return _Guarded(fn, exercise, tuple(blocks), tuple(forbid), tuple(allow))


@contextmanager
def _substituted(
    students: Sequence[Any], uses: Sequence[tuple[str, str, str]]
) -> Iterator[list[str]]:
    """Put the reference in place of each earlier exercise that has not passed."""
    names: dict[str, None] = {}  # in order, once each
    failed: dict[str, None] = {}
    saved: list[tuple[dict[str, Any], str, Any]] = []
    try:
        for earlier, name, target in uses:
            if _PASSED.get(earlier):
                continue
            for s in students:
                namespace = getattr(s, "__globals__", None)
                if namespace is None or name not in namespace:
                    continue
                saved.append((namespace, name, namespace[name]))
                namespace[name] = resolve(target)
            names[f"`{name}`"] = failed[earlier] = None
        # one short clause, however many earlier exercises stood in
        yield (
            [
                f"checked with the reference {', '.join(names)}, since yours failed "
                f"{', '.join(failed)}"
            ]
            if names
            else []
        )
    finally:
        for namespace, name, value in reversed(saved):
            namespace[name] = value


def _verdict(exercise: str, status: str, message: str) -> None:
    _PASSED[exercise] = status == "passed"
    sys.audit("a2s.verdict", exercise, status, message)


def grader(
    exercise: str,
    *,
    blocks: Sequence[str] = (),
    forbid: Sequence[str] = DEFAULT_FORBID,
    uses: Sequence[tuple[str, str, str]] = (),
    allow: Sequence[str] = (),
    hand: str = "",
) -> Callable[..., Callable[..., None]]:
    """Turn ``body(student, ...) -> str`` into a check-cell entry point for ``exercise``.

    The body gets the student's callable(s) guarded; it raises :class:`CheckFailure` on a wrong
    answer and returns a one-line summary with a cost figure, printed on success.

    * ``blocks``: reference entry points (``"pkg.module:name"``) that raise when called; a
      bare module (``"pkg.module"``) blocks every public function and class defined in it,
      less the names in ``allow``. The graders' own ground truth (every grader module) is
      blocked for the student's code by default (:func:`~a2s.checks.guard.truth_blocked`).
    * ``forbid``: modules or functions (``"torch"``, ``"numpy.linalg"``, ``"numpy:convolve"``)
      that may not be called anywhere in the student's call tree while it runs.
    * ``uses``: earlier exercises this one builds on, as ``(exercise, name, reference)``: when
      ``exercise`` has not passed in this kernel, the student's global ``name`` is replaced by
      ``reference`` for the check, and the message says so (one mistake costs one exercise).
    * ``hand``: why the body checks by hand, not with a :class:`~a2s.checks.table.Table`
      (a key of :data:`~a2s.checks.table.HAND` or a sentence); a body that runs a table needs none.
    """
    blocks, forbid, uses, allow = tuple(blocks), tuple(forbid), tuple(uses), tuple(allow)

    def decorate(body: Callable[..., str]) -> Callable[..., None]:
        @functools.wraps(body)
        def check(*students: Any, **kwargs: Any) -> None:
            try:
                _check_callables(exercise, students)
                with ExitStack() as stack, lab_intact(exercise):
                    notes = stack.enter_context(_substituted(students, uses))
                    wrapped = [_Guarded(s, exercise, blocks, forbid, allow) for s in students]
                    try:
                        summary = body(*wrapped, **kwargs)
                    except CheckFailure as exc:
                        if notes and not str(exc).startswith(NOT_IMPLEMENTED):
                            exc.args = (f"({'; '.join(notes)}) {exc}",)
                        raise
            except CheckFailure as exc:
                _verdict(exercise, "failed", str(exc))
                raise
            except BaseException as exc:
                _verdict(exercise, "error", f"{type(exc).__name__}: {exc}")
                raise
            note = f" ({'; '.join(notes)})" if notes else ""
            line = f"✔ Exercise {exercise} passed{note}: {summary}"
            _verdict(exercise, "passed", line)
            print(line)

        check.exercise = exercise  # type: ignore[attr-defined]
        check.blocks = blocks  # type: ignore[attr-defined]
        check.forbid = forbid  # type: ignore[attr-defined]
        check.uses = uses  # type: ignore[attr-defined]
        check.allow = allow  # type: ignore[attr-defined]
        check.hand = hand  # type: ignore[attr-defined]
        return check

    return decorate


def _check_callables(exercise: str, students: Sequence[Any]) -> None:
    if not students:
        raise CheckFailure(f"Exercise {exercise}: pass your function to the check.")
    for s in students:
        if not callable(s):
            raise CheckFailure(
                f"Exercise {exercise}: expected your function (a callable), got "
                f"{type(s).__name__}. Did the exercise cell run?"
            )


# --------------------------------------------------------------------------- random cases
def rng(seed: int) -> np.random.Generator:
    """Return the seeded generator of the fixed teaching cases (same cases on every run)."""
    return np.random.default_rng(seed)


_SEED_ENV = "A2S_SEED"
_SESSION_SEED = int.from_bytes(os.urandom(4), "little")


def grading_seed() -> int:
    """The seed of this run's fresh cases: ``$A2S_SEED`` when set (replay), else random."""
    raw = os.environ.get(_SEED_ENV, "")
    return int(raw) if raw.strip().isdigit() else _SESSION_SEED


def fresh_rng(exercise: str) -> np.random.Generator:
    """Return a generator for the fresh cases of ``exercise``: new on every grading run.

    Answers memorised from a failure message fail these. The seed is recorded in the grading
    JSON and printed in failure messages, so ``A2S_SEED=<seed>`` replays the same cases.
    """
    salt = int.from_bytes(exercise.encode("utf-8"), "little") % (2**32)
    return np.random.default_rng([grading_seed(), salt])
