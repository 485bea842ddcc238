"""A grader as a table: named teaching cases, drawn cases, the truth, the modelled mistakes.

An exercise whose answer is a value of its inputs is graded by data, not code. A
:class:`Table` lists what a grader used to write out by hand each time:

- ``named``: the teaching cases, ``(label, args)``, ``(label, args, hint)`` or, for a case
  whose answer is known in closed form, ``(label, args, hint, answer)`` (``hint`` None: the
  table's), in the order a learner should meet them (the edge a wrong answer needs first);
- ``draw(gen, i) -> (label, args)``: one random case (or a list of cases drawn together, e.g.
  one shape at three element sizes); the runner draws ``seeded`` of them
  from the exercise's fixed seed (the same on every run) and ``fresh`` from
  :func:`~a2s.checks.core.fresh_rng` of the exercise (new on every grading run, their labels
  naming the seed that replays them; ``draw_fresh``, when given, draws those instead);
- ``truth(*args)``: the independent ground truth, run only when its case runs;
- ``read(got, label)``: what turns the learner's plain answer into what is compared (it may
  fail with its own message), and ``same(got, want)``, the comparison;
- ``mistakes``: each modelled wrong answer (:class:`~a2s.checks.cases.Mistake`) with the
  hint shown when the learner's answer is that one; ``hint``: the rule restated otherwise;
- ``message``: the failure in the house format, a :meth:`str.format` template over
  ``label``, ``what``, ``args``, ``got``, ``want`` and ``hint`` (``{want[0]:.6g}`` works).

:meth:`Table.grade` runs it (through :func:`~a2s.checks.cases.run_cases`) and returns the
number of cases. Every table made is listed in :data:`TABLES`, so one generic test feeds each
modelled mistake to its table as the learner's answer (``tests/checks/test_tables.py``).

    FLOPS = Table(
        "00.1",
        truth=_counted_flops,
        named=[("m=2, n=3, k=4", (2, 3, 4)), ("m=1, n=1, k=1", (1, 1, 1))],
        draw=lambda g, i: _shape_case(g),
        seeded=6,
        fresh=3,
        mistakes=_FLOP_MISTAKES,
        what="matmul_flops",
        message="[{label}] matmul_flops returned {got!r}, the loop performs {want}.{hint}",
        seed=0,
    )
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake, fresh, run_cases
from a2s.checks.core import fresh_rng, rng

__all__ = ["HAND", "TABLES", "Table"]

Drawn = tuple[str, tuple[Any, ...]]

# why a grader checks by hand (``@grader(..., hand=KEY)``): what a table of cases cannot say
HAND = {
    "property": "a property every right answer has (any valid order, any cap at the optimum), "
    "not one expected value",
    "replay": "the answer is replayed through a simulator or the grader's own record "
    "(a cache, a schedule, a timeline) and judged there",
    "budget": "budgets on counted work (bytes, traffic, messages, peak memory, kernel launches) "
    "beside the values",
    "bulk": "millions of values compared in one vectorised pass, reported by kind",
    "trajectory": "a run over many steps (training, an optimizer, a stream) compared step by step",
    "parts": "several parts of one answer checked in turn, each with its own message",
    "ranks": "the learner's code runs as ranks on simulated or real processes",
    "measure": "a prediction judged against what the notebook measured on this machine",
    "kernel": "the learner's kernel runs against an instrumented device in a child process",
    "object": "the learner builds an object (a module, a graph, an engine) used through its API",
}
TABLES: list[Table] = []  # every table made, in import order (read by the generic test)


def _equal(got: Any, want: Any) -> bool:
    return bool(got == want)


def _seed(exercise: str) -> int:
    """The fixed seed of an exercise's seeded cases: "05.3" -> 503, "13.4" -> 1304."""
    lab, _, number = exercise.partition(".")
    return int(lab) * 100 + int(number)


@dataclass(frozen=True)
class Table:
    """One exercise's grader as data (see the module docstring for each field)."""

    exercise: str
    truth: Callable[..., Any]
    named: Sequence[tuple[Any, ...]] = ()
    draw: Callable[[np.random.Generator, int], Drawn | list[Drawn]] | None = None
    seeded: int = 0
    fresh: int = 0
    mistakes: Sequence[Mistake] = ()
    hint: str = ""
    same: Callable[[Any, Any], bool] = _equal
    read: Callable[[Any, str], Any] | None = None
    what: str = "result"
    message: str | Callable[[Case, Any, Any, str], str] = (
        "[{label}] {what} returned {got!r}, expected {want!r}.{hint}"
    )
    draw_fresh: Callable[[np.random.Generator, int], Drawn | list[Drawn]] | None = None
    seed: int | None = None  # None: from the exercise number (see _seed)
    prepare: Callable[[Any], Any] | None = None  # wraps the learner's function before the cases

    def __post_init__(self) -> None:
        if (self.seeded or self.fresh) and self.draw is None:
            raise ValueError(f"table {self.exercise}: seeded/fresh cases need draw")
        TABLES.append(self)

    def _case(
        self, label: str, args: tuple[Any, ...], hint: str | None = None, want: Any = None
    ) -> Case:
        expected = self.truth if want is None else want
        return Case(
            label, tuple(args), expected, self.mistakes, self.hint if hint is None else hint
        )

    def cases(self, named: Sequence[tuple[Any, ...]] | None = None) -> list[Case]:
        """The named cases (``named`` for this run, when given, replaces the table's: cases
        that depend on the grader's arguments), then the seeded ones, then the fresh ones."""
        rows = copy.deepcopy(list(self.named if named is None else named))  # never the table's own
        out = [self._case(*row) for row in rows]
        if self.draw is not None:
            gen = rng(_seed(self.exercise) if self.seed is None else self.seed)
            seeded = (self._drawn(gen, i, self.draw) for i in range(self.seeded))
            out += [self._case(*d) for drawn in seeded for d in drawn]
            new = fresh_rng(self.exercise)
            for i in range(self.fresh):
                drawn = self._drawn(new, i, self.draw_fresh or self.draw)
                out += [self._case(fresh(row[0]), *row[1:]) for row in drawn]
        return out

    @staticmethod
    def _drawn(gen: np.random.Generator, i: int, draw: Any) -> list[Drawn]:
        """The case(s) of one draw: ``draw`` returns one ``(label, args)`` or a list of them."""
        got = draw(gen, i)
        return list(got) if isinstance(got, list) else [got]

    def write(self, case: Case, got: Any, want: Any, hint: str) -> str:
        """The failure message of ``case``: the template filled in, the hint after a space."""
        if callable(self.message):
            return self.message(case, got, want, hint)
        hint = f" {hint.lstrip()}" if hint else ""
        fields = {"label": case.label, "what": self.what, "args": case.args, "hint": hint}
        return self.message.format(got=got, want=want, **fields)

    def grade(
        self, student: Callable[..., Any], named: Sequence[tuple[Any, ...]] | None = None
    ) -> int:
        """Run every case on ``student``; raise at the first wrong answer; return the count."""
        if self.prepare is not None:
            student = self.prepare(student)
        return run_cases(
            student,
            self.cases(named),
            message=self.write,
            same=self.same,
            read=self.read,
            what=self.what,
        )
