"""The course proves its own checks, for every lab that exists.

* labs/ is byte-identical to a fresh build of solutions/;
* every notebook follows the lab format (ids, tags, exercise metadata, one check per exercise);
* the generated lab fails every check because of its stub (graded end to end), and the
  solution gets full points from the same grader.

(The solutions also run as plain nbval tests: ``testpaths`` includes ``solutions/``.)
"""

from __future__ import annotations

import re

import pytest

from minitorch.course.build import build_all, existing_labs
from minitorch.course.grade import grade_submission
from minitorch.course.notebook import a2s_meta, exercises, read_notebook, tags
from minitorch.course.runner import RunOptions
from minitorch.course.syllabus import DIMENSIONS, SUBJECTS, repo_root

ROOT = repo_root()
LABS = existing_labs(ROOT)
IDS = [lab.name for lab, _ in LABS]
_CELL_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
OPTS = RunOptions(cell_timeout=120, timeout=600, memory_limit_mb=6144)


def test_labs_folder_matches_a_fresh_build() -> None:
    assert build_all(ROOT, check=True).differing == [], "run `a2s build` and commit labs/"


@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_notebook_follows_the_lab_format(lab, path) -> None:
    nb = read_notebook(path)
    assert nb.metadata.get("a2s", {}).get("lab") == lab.number
    ids = [c.get("id") for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    for cid in ids:
        assert cid and _CELL_ID.match(cid), f"cell id {cid!r} is not hand-picked (a-z, 0-9, -)"
    assert any("setup" in tags(c) for c in nb.cells), "a setup cell is required"
    assert ids[0] == "title" and nb.cells[0].cell_type == "markdown", "a lab opens with its title"
    built = next((c for c in nb.cells if c.get("id") == "built"), None)
    assert built is not None and "What you built" in built.source, "a lab closes with 'built'"
    exs = exercises(nb)
    assert exs, "a lab has at least one exercise"
    for ex in exs:
        number = ex.id.split(".")[0]
        assert number == lab.number and ex.cell_id == f"ex-{lab.number}-{ex.id.split('.')[1]}"
        assert ex.check_cell_id == f"check-{lab.number}-{ex.id.split('.')[1]}", ex.id
        assert ex.subject in SUBJECTS and ex.dimension in DIMENSIONS, ex.id
        assert ex.points > 0 and ex.task and ex.title and ex.topics
    for cell in nb.cells:
        if "check" in tags(cell):
            assert re.fullmatch(rf"lab{lab.number}\.check_\w+\(.*\)", cell.source.split("\n")[0])
            assert a2s_meta(cell).get("exercise") in {e.id for e in exs}
        if "exercise" in tags(cell):
            assert "### BEGIN SOLUTION" in cell.source
    plots = [c for c in nb.cells if c.cell_type == "code" and "plt.show()" in c.source]
    assert plots, "every lab has at least one plot"
    assert all(c.cell_type != "code" or c.execution_count for c in nb.cells if c.source.strip()), (
        "solutions are committed with outputs: run `a2s execute NN`"
    )


@pytest.mark.grader
@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_stub_lab_fails_every_check(lab, path) -> None:
    result = grade_submission(str(lab.lab_path(ROOT)), OPTS, ROOT)
    assert result.error is None, result.error
    assert result.score == 0
    for ex in result.exercises:
        assert ex.status == "failed", (ex.id, ex.status, ex.message)
        assert "not implemented yet" in ex.message, (ex.id, ex.message)


@pytest.mark.grader
@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_solution_gets_full_points(lab, path) -> None:
    result = grade_submission(str(path), OPTS, ROOT)
    assert result.error is None, result.error
    bad = [(e.id, e.status, e.message) for e in result.exercises if e.status != "passed"]
    assert not bad
    assert result.score == result.max_score > 0


def test_readme_lab_table_matches_the_repository() -> None:
    from minitorch.course.syllabus import LABS as ALL_LABS

    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    for lab in ALL_LABS:
        row = next((ln for ln in lines if ln.startswith(f"| {lab.number} |")), None)
        assert row is not None, f"README's lab table has no row for lab {lab.number}"
        ready = lab.solution_path(ROOT).exists()
        assert row.rstrip().endswith("| ready |" if ready else "| planned |"), row
        assert (f"(labs/{lab.name}.ipynb)" in row) == ready, row


@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_every_grader_has_wrong_answer_and_reference_tests(lab, path) -> None:
    """Each check function is exercised by tests/checks/test_labNN.py, which also tests that
    calling the reference is rejected (the course's own bar: every check can fail)."""
    test_file = ROOT / "tests" / "checks" / f"test_lab{lab.number}.py"
    assert test_file.exists(), f"{test_file.relative_to(ROOT)} is missing"
    text = test_file.read_text(encoding="utf-8")
    assert "ReferenceCalledError" in text, "no test shows that calling the reference fails"
    assert "CheckFailure" in text, "no test shows that a wrong answer fails"
    nb = read_notebook(path)
    for cell in nb.cells:
        if "check" in tags(cell):
            name = re.match(rf"lab{lab.number}\.(check_\w+)", cell.source).group(1)
            assert name in text, f"{name} is not exercised by {test_file.name}"
