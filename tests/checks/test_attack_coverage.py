"""Every lab from 05 on has an adversarial battery and a table of its musts, both complete.

* ``tests/checks/test_labNN_attacks.py`` lists ``ATTEMPTS`` (:mod:`tests.helpers.attacks`): for
  each exercise of the lab at least 2 honest answers written differently, 3 realistic wrong
  answers and 4 cheats.
* ``tests/checks/test_labNN.py`` holds ``MUSTS``: ``(exercise, phrase, test)`` rows, one per
  "must", "only", budget and invariant of the lab's prose. ``phrase`` is quoted from the
  solution notebook's markdown (compared case- and whitespace-insensitively) and ``test`` names
  the test, in the grader tests or the attack battery, that fails when the rule is broken.

A lab not reviewed yet is skipped with its reason, so the gap shows in every run.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from a2s.notebook import exercises
from a2s.syllabus import LABS
from tests.helpers.attacks import KINDS

ROOT = Path(__file__).resolve().parents[2]
REVIEWED = [lab for lab in LABS if lab.number >= "05" and lab.solution_path(ROOT).exists()]
MINIMUM = {"honest": 2, "wrong": 3, "cheat": 4}


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def _notebook(lab):
    return nbformat.read(lab.solution_path(ROOT), as_version=4)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.mark.parametrize("lab", REVIEWED, ids=lambda lab: lab.number)
def test_every_exercise_has_a_full_battery(lab):
    module = _module(f"tests.checks.test_lab{lab.number}_attacks")
    if module is None:
        pytest.skip(f"lab {lab.number} has no adversarial battery yet (issue 18, item 9)")
    counts = Counter((a.exercise, a.kind) for a in module.ATTEMPTS)
    assert all(a.kind in KINDS for a in module.ATTEMPTS)
    short = [
        f"{ex.id}: {counts[ex.id, kind]} {kind} (at least {n})"
        for ex in exercises(_notebook(lab))
        for kind, n in MINIMUM.items()
        if counts[ex.id, kind] < n
    ]
    assert not short, "battery too small: " + "; ".join(short)


@pytest.mark.parametrize("lab", REVIEWED, ids=lambda lab: lab.number)
def test_every_must_of_the_prose_has_a_failing_test(lab):
    tests = _module(f"tests.checks.test_lab{lab.number}")
    musts = getattr(tests, "MUSTS", None)
    if musts is None:
        pytest.skip(f"lab {lab.number} has no MUSTS table yet (issue 18, item 5)")
    nb = _notebook(lab)
    prose = _squash(" ".join(c.source for c in nb.cells if c.cell_type == "markdown"))
    ids = {ex.id for ex in exercises(nb)}
    attacks = _module(f"tests.checks.test_lab{lab.number}_attacks")
    names = set(dir(tests)) | set(dir(attacks) if attacks else ())
    problems = []
    for exercise, phrase, test in musts:
        if exercise not in ids:
            problems.append(f"{exercise}: not an exercise of lab {lab.number}")
        if _squash(phrase) not in prose:
            problems.append(f"{exercise}: {phrase!r} is not in the lab's prose")
        if test not in names:
            problems.append(f"{exercise}: no test named {test}")
    missing = ids - {row[0] for row in musts}
    problems += [f"{ex}: no row (every exercise has at least one rule)" for ex in sorted(missing)]
    assert not problems, "; ".join(problems)
