"""The adversarial battery of a lab's graders: honest variants, wrong answers and cheats.

Each lab's ``tests/checks/test_labNN_attacks.py`` lists ``ATTEMPTS``, written by someone who
did not write the lab, and runs every one against the grader in-process:

    ATTEMPTS = [
        honest("18.1", "numpy floor-divide", lambda: lab18.check_slot_mapping(slots_np)),
        wrong("18.1", "off by one", lambda: lab18.check_slot_mapping(off), match="Off by one"),
        cheat("18.1", "calls the reference", lambda: lab18.check_slot_mapping(ref),
              match="reference", error=ReferenceCalledError),
    ]

    @pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
    def test_attempt(attempt):
        judge(attempt)

* ``honest``: a correct answer written differently (another algorithm, imports inside the
  function, a class, recursion, lists instead of arrays where the task allows): must pass;
* ``wrong``: a realistic mistake: must fail with a :class:`CheckFailure` whose message matches
  ``match`` (the hint that names that mistake);
* ``cheat``: an answer that does not do the exercise (calls a reference or torch, rewrites a
  counter, reads the expected value, replays a fixed answer): must fail, with ``error``.

``tests/checks/test_attack_coverage.py`` holds every lab from 05 on to at least 2 honest, 3 wrong
and 4 cheats per exercise. The pieces most batteries need are here once: :func:`wrapped` (an
honest answer behind a ``functools.wraps`` decorator), :func:`public_answers` and
:func:`replay_public` (the cheat that replays a table's public cases).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from a2s.checks.core import CheckFailure

__all__ = [
    "Attempt",
    "attempt_id",
    "cheat",
    "honest",
    "judge",
    "public_answers",
    "replay_public",
    "wrapped",
    "wrong",
]

KINDS = ("honest", "wrong", "cheat")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One answer tried against a grader: ``run()`` calls the check with it."""

    exercise: str
    kind: str  # honest | wrong | cheat
    name: str
    run: Callable[[], object]
    match: str | None = None  # regex the failure message must match
    error: type[BaseException] = CheckFailure


def honest(exercise: str, name: str, run: Callable[[], object]) -> Attempt:
    """A correct answer written differently: it must pass."""
    return Attempt(exercise, "honest", name, run)


def wrong(exercise: str, name: str, run: Callable[[], object], match: str) -> Attempt:
    """A realistic mistake: it must fail with the hint that names it (``match``)."""
    return Attempt(exercise, "wrong", name, run, match)


def cheat(
    exercise: str,
    name: str,
    run: Callable[[], object],
    match: str | None = None,
    error: type[BaseException] = CheckFailure,
) -> Attempt:
    """An answer that does not do the exercise: it must fail (``error``, ``match``)."""
    return Attempt(exercise, "cheat", name, run, match, error)


def attempt_id(attempt: Attempt) -> str:
    return f"{attempt.exercise}-{attempt.kind}-{attempt.name}".replace(" ", "_")


def judge(attempt: Attempt) -> None:
    """Pass the honest attempt; fail the wrong and the cheating ones as declared."""
    if attempt.kind == "honest":
        attempt.run()
        return
    with pytest.raises(attempt.error, match=attempt.match) as info:
        attempt.run()
    assert attempt.error is not CheckFailure or isinstance(info.value, CheckFailure)


def wrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` behind a decorator made with ``functools.wraps``: honest, and must pass."""

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return inner


def public_answers(table: Any) -> dict[str, Any]:
    """A table's named and seeded cases (the same on every run) -> answer, by ``repr(args)``."""
    return {repr(c.args): c.want() for c in table.cases() if "fresh case" not in c.label}


def replay_public(table: Any, fallback: Callable[..., Any]) -> Callable[..., Any]:
    """The cheat that replays the public cases' answers and falls back on ``fallback``: the
    fresh cases of every run must catch it."""
    known = public_answers(table)

    def answer(*args: Any) -> Any:
        key = repr(args)
        return known[key] if key in known else fallback(*args)

    return answer
