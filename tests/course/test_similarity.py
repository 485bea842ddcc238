"""The similarity report: canonical forms, pairs of students, matches with the solutions."""

from __future__ import annotations

import copy
import csv
from pathlib import Path

import pytest

from a2s.cli import main
from a2s.notebook import dumps, read_notebook
from a2s.similarity import SOLUTION, canonical, find_matches
from a2s.syllabus import find_lab, repo_root

ROOT = repo_root()

ORIGINAL = '''
import numpy as np

def spread(values, scale=2):
    """Scale the deviations."""
    mean = np.mean(values)  # the centre
    out = []
    for v in values:
        out.append((v - mean) * scale)
    return out
'''
RENAMED = '''
import numpy as np
def spread(xs, k=2):
    # a comment of my own
    """Another docstring."""
    m = np.mean(xs)
    result = []
    for x in xs:   result.append((x - m) * k)
    return result
'''


def test_canonical_ignores_names_comments_docstrings_and_layout() -> None:
    assert canonical(ORIGINAL)[0] == canonical(RENAMED)[0]
    text, size = canonical(ORIGINAL)
    assert ".mean(" in text and "append" in text and "Scale" not in text and size > 20


@pytest.mark.parametrize(
    "changed",
    [
        ORIGINAL.replace("(v - mean) * scale", "scale * (v - mean)"),  # another expression
        ORIGINAL.replace("np.mean", "np.median"),  # another library call: names it uses stay
        ORIGINAL.replace("out.append", "out.extend"),  # attributes stay
        ORIGINAL.replace("for v in values", "for v in reversed(values)"),
    ],
)
def test_canonical_tells_different_code_apart(changed: str) -> None:
    assert canonical(changed)[0] != canonical(ORIGINAL)[0]


def test_canonical_survives_magics_and_broken_code() -> None:
    assert canonical("%timeit f()\nx = 1")[0] == canonical("y = 1")[0]
    broken, _size = canonical("def f(:\n    return 1  # oops")
    assert broken.startswith("unparsed:") and "oops" not in broken
    assert canonical("def f(:\n  return 1")[0] == broken  # spacing does not count


def _solution_cells() -> dict:
    nb = read_notebook(find_lab("00").solution_path(ROOT))
    return {c.get("id"): c for c in nb.cells}, nb


def _submission(folder: Path, student: str, edit=None) -> Path:
    _cells, nb = _solution_cells()
    nb = copy.deepcopy(nb)
    if edit is not None:
        edit({c.get("id"): c for c in nb.cells})
    path = folder / "submissions" / student / "00_orientation.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(nb), encoding="utf-8")
    return path


def _renamed(cells: dict) -> None:
    cell = cells["ex-00-2"]
    cell.source = (
        cell.source.replace("moved", "traffic")
        .replace("# hint", "# my note")
        .replace("(m * k", "( m*k")
    )


def _own(cells: dict) -> None:
    cells["ex-00-2"].source = (
        "def arithmetic_intensity(m, n, k, bytes_per_element):\n"
        "    elements = m * k + k * n + m * n\n"
        "    flops = 2 * m * n * k\n"
        "    return flops / (elements * bytes_per_element)\n"
    )


def _moved_cell(cells: dict) -> None:
    cells["ex-00-2"]["id"] = "my-own-id"  # found by metadata.a2s.exercise, as the grader does
    _renamed(cells)


@pytest.fixture
def term(tmp_path: Path) -> Path:
    _submission(tmp_path, "alice")
    _submission(tmp_path, "bob", _renamed)
    _submission(tmp_path, "carol", _own)
    _submission(tmp_path, "erin", _moved_cell)
    stub = tmp_path / "submissions" / "dave" / "00_orientation.ipynb"
    stub.parent.mkdir(parents=True)
    stub.write_bytes((ROOT / "labs" / "00_orientation.ipynb").read_bytes())
    (tmp_path / "submissions" / "frank").mkdir()
    (tmp_path / "submissions" / "frank" / "00_orientation.ipynb").write_text("not json")
    return tmp_path


def test_pairs_and_solution_matches(term: Path) -> None:
    matches, notes = find_matches([str(term / "submissions")], ROOT)
    pairs = {(m.student_a, m.student_b): m for m in matches}
    # alice, bob and erin all handed in the published 00.2: listed once each, against it, not
    # again as the three pairs among them
    assert set(pairs) == {("alice", SOLUTION), ("bob", SOLUTION), ("erin", SOLUTION)}
    m = pairs[("alice", SOLUTION)]
    assert m.lab == "00" and m.exercises == ["00.2"] and m.shared_by == {"00.2": 3}
    assert m.compared == 1  # 00.1 is too short to tell (a one-line answer) at the default size
    assert any("listed only under 'equal to the published solution'" in n for n in notes)
    assert not any("carol" in key or "dave" in key for key in pairs)  # own code; the stub
    assert any("frank" in n and "not a Jupyter notebook" in n for n in notes)


def test_short_exercises_are_compared_only_when_asked(term: Path) -> None:
    matches, _ = find_matches([str(term / "submissions")], ROOT, min_size=1)
    pair = next(m for m in matches if (m.student_a, m.student_b) == ("alice", SOLUTION))
    assert pair.exercises == ["00.1", "00.2"] and pair.compared == 2
    # carol wrote her own 00.2 but the same one-line 00.1 as everyone: 4 share it
    carol = next(m for m in matches if m.student_a == "carol" and m.student_b == SOLUTION)
    assert carol.exercises == ["00.1"] and carol.shared_by["00.1"] == 4


def test_cli_report_and_csv(term: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_csv = term / "sim.csv"
    _submission(term, "gina", _own)  # the same code as carol's, not the published one
    assert main(["similarity", str(term / "submissions"), "--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    assert "carol ~ gina: 1 of 1 compared: 00.2 (2)" in out and "alice ~ bob" not in out
    assert "equal to the published solution" in out and "not a verdict" in out
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert {r["kind"] for r in rows} == {"pair", "solution"}
    assert len(rows) == 4 and all(r["exercise"] == "00.2" for r in rows)
