"""Cases as data, run by one runner: the inputs, the answer, a hint per known mistake.

In the spirit of the Tensor Puzzles' ``make_test``: a grader lists its cases (named teaching
cases first, then seeded random ones, then *fresh* ones drawn for this grading run) and
:func:`run_cases` calls the student on each, makes the answer plain, compares it, and on the
first wrong one names the known mistake it matches.

    cases = [Case("m=2, n=3, k=4", (2, 3, 4), counted_flops, _MISTAKES), ...]
    run_cases(student, cases, message=lambda c, got, want, hint: f"[{c.label}] got {got!r}")

A fresh case's label carries the grading seed, ``"m=5, n=1, k=9 (fresh case, A2S_SEED=1234)"``,
so ``A2S_SEED=1234`` replays the run that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from a2s.checks.core import case_label, grading_seed, plain
from a2s.checks.errors import CheckFailure

__all__ = ["Case", "Mistake", "fresh", "fresh_run", "run_cases"]


def fresh(label: str) -> str:
    """Mark ``label`` as a fresh case: its failure message then names the seed that replays it."""
    return f"{label} (fresh case, A2S_SEED={grading_seed()})"


@contextmanager
def fresh_run(what: str) -> Iterator[None]:
    """A fresh case of several checks: a failure inside is prefixed ``[what (fresh case, ...)]``."""
    try:
        yield
    except CheckFailure as exc:
        exc.args = (f"[{fresh(what)}] {exc}",)
        raise


@dataclass(slots=True, frozen=True)
class Mistake:
    """A known wrong answer and what it means.

    ``answer(*args)`` computes the wrong answer (compared with the runner's ``same``), or
    ``when(got, *args)`` recognises it directly.
    """

    message: str
    answer: Callable[..., Any] | None = None
    when: Callable[..., bool] | None = None

    def matches(self, got: Any, args: tuple[Any, ...], same: Callable[[Any, Any], bool]) -> bool:
        try:
            if self.when is not None:
                return bool(self.when(got, *args))
            return self.answer is not None and bool(same(got, self.answer(*args)))
        except (TypeError, ValueError, ArithmeticError):
            return False


@dataclass(slots=True)
class Case:
    """One call of the student's function: ``student(*args)`` should give ``expected``.

    ``expected`` is the answer, or a function of ``args`` that computes it (ground truth run
    only when the case runs). ``hint`` is the message when no known mistake matches.
    """

    label: str
    args: tuple[Any, ...]
    expected: Any
    mistakes: Sequence[Mistake] = ()
    hint: str = ""

    def want(self) -> Any:
        return self.expected(*self.args) if callable(self.expected) else self.expected

    def diagnose(self, got: Any, same: Callable[[Any, Any], bool]) -> str:
        """The message of the first known mistake ``got`` matches, else the case's hint."""
        return next(
            (m.message for m in self.mistakes if m.matches(got, self.args, same)), self.hint
        )


def _equal(got: Any, want: Any) -> bool:
    return bool(got == want)


def _snapshot(x: Any) -> Any:
    """``x`` with every numpy array in it (through lists, tuples and dicts) copied."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if type(x) in (list, tuple):
        return type(x)(_snapshot(v) for v in x)
    if type(x) is dict:
        return {k: _snapshot(v) for k, v in x.items()}
    return x


def run_cases(
    student: Callable[..., Any],
    cases: Iterable[Case],
    *,
    message: Callable[[Case, Any, Any, str], str],
    same: Callable[[Any, Any], bool] = _equal,
    read: Callable[[Any, str], Any] | None = None,
    what: str = "result",
) -> int:
    """Run every case; raise :class:`CheckFailure` at the first wrong answer.

    ``message(case, got, want, hint)`` writes the failure (the grader's own wording);
    ``same(got, want)`` decides equality (exact by default); ``read(got, label)`` turns the
    plain answer into what is compared (it may fail with its own message). Returns the
    number of cases.
    """
    count = 0
    for case in cases:
        # the expected answer first, and a copy of it: a student who changes the case's arrays
        # in place must not change what they are compared with
        want = _snapshot(case.want())
        with case_label(case.label):  # an error the student's code raises names the case
            answer = student(*_snapshot(case.args))  # a copy: the mistakes see the case's own
        got = plain(answer, what=what, case=case.label)
        got = read(got, case.label) if read is not None else got
        try:
            ok = bool(same(got, want))
        except (TypeError, ValueError, ArithmeticError):
            ok = False
        if not ok:
            raise CheckFailure(message(case, got, want, case.diagnose(got, same)))
        count += 1
    return count
