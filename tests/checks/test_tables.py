"""One generic test over every grader written as a table (``a2s.checks.table``).

For each table: its own truth, fed as the learner's function, passes every case; and every
modelled mistake that computes its wrong answer (``Mistake(answer=...)``), fed as the
learner's function, is rejected with its own hint. A mistake that only recognises an answer
(``when=``) has no answer to feed; its test stays beside its grader.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
from typing import Any

import pytest

import a2s.checks
from a2s.checks.errors import CheckFailure
from a2s.checks.table import TABLES, Table


def _load_every_grader() -> list[Table]:
    for info in pkgutil.walk_packages(a2s.checks.__path__, "a2s.checks."):
        if info.name.split(".")[2].startswith("lab"):
            importlib.import_module(info.name)
    return list(TABLES)


_ALL = _load_every_grader()
_MISTAKES = [
    pytest.param(t, i, id=f"{t.exercise}-{i}")
    for t in _ALL
    for i, m in enumerate(t.mistakes)
    if m.answer is not None
]


def test_tables_exist() -> None:
    assert len(_ALL) >= 2


@pytest.mark.parametrize("table", _ALL, ids=lambda t: t.exercise)
def test_the_truth_passes_its_own_table(table: Table) -> None:
    n = table.grade(table.truth)
    assert n == len(table.cases()) > 0


@pytest.mark.parametrize(("table", "index"), _MISTAKES)
def test_each_modelled_mistake_gets_its_own_hint(table: Table, index: int) -> None:
    mistake = table.mistakes[index]

    def wrong(*args: Any) -> Any:
        assert mistake.answer is not None
        return mistake.answer(*args)

    with pytest.raises(CheckFailure) as err:
        table.grade(wrong)
    if mistake.message.strip() in str(err.value):
        return
    # an earlier mistake of the table gives this very answer on the failing case: the two are
    # one answer there, and the earlier one's hint is shown (07.1's formulas at stride 0)
    case = next(c for c in table.cases() if not table.same(wrong(*c.args), c.want()))
    got = wrong(*case.args)
    earlier = [m for m in table.mistakes[:index] if m.matches(got, case.args, table.same)]
    assert earlier and earlier[0].message.strip() in str(err.value), (
        f"{table.exercise}: the mistake {mistake.message.strip()[:60]!r} got another message:\n"
        f"{err.value}"
    )


def test_a_learner_who_changes_the_inputs_changes_no_table() -> None:
    """The named cases are copied for every run: sorting a list in place changes nothing."""
    from a2s.checks.lab19.predict import STEPS

    before = copy.deepcopy([row[1] for row in STEPS.named])

    def sorts_in_place(lens: list[int], b: int, policy: str) -> int:
        lens.sort()
        return 0

    with pytest.raises(CheckFailure):
        STEPS.grade(sorts_in_place)
    assert [row[1] for row in STEPS.named] == before
    assert STEPS.grade(STEPS.truth) == len(STEPS.cases())


def _graders() -> list[Any]:

    seen: dict[int, Any] = {}
    for info in pkgutil.walk_packages(a2s.checks.__path__, "a2s.checks."):
        if not info.name.split(".")[2].startswith("lab"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if callable(value) and hasattr(value, "hand") and hasattr(value, "exercise"):
                if getattr(value, "__module__", "") == info.name:
                    seen[id(value)] = value
    return sorted(seen.values(), key=lambda g: (g.exercise, g.__name__))


def _runs_a_table(check: Any) -> bool:
    import inspect

    return ".grade(" in inspect.getsource(check.__wrapped__)


def test_every_grader_is_a_table_or_says_why_not() -> None:
    """A grader runs a Table, or its ``hand=`` names what a table cannot say."""
    from a2s.checks.table import HAND

    unexplained = [
        f"{g.exercise} {g.__module__}.{g.__name__}"
        for g in _graders()
        if not _runs_a_table(g) and g.hand not in HAND and len(g.hand.split()) < 6
    ]
    assert not unexplained, f"graders with neither a table nor a reason: {unexplained}"


def test_how_many_graders_are_tables() -> None:
    """At least the 48 graders architecture.md ("Graders as tables") counts."""
    graders = _graders()
    tables = sum(_runs_a_table(g) for g in graders)
    assert tables >= 48, (tables, len(graders))
