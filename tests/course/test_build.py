"""The student-copy build: stubs, hidden tests, outputs, determinism."""

from __future__ import annotations

import nbformat
import pytest

from a2s.build import build_lab, grading_base, marker_problems, stub_source
from a2s.notebook import NotebookError, dumps

SOLVED = """\
def f(x):
    # hint: square it (≈ 1 line)
    ### BEGIN SOLUTION
    y = x * x
    return y
    ### END SOLUTION

class A:
    def g(self):
        ### BEGIN SOLUTION
        return 1
        ### END SOLUTION"""


def test_stub_keeps_indentation_and_hints() -> None:
    out = stub_source(SOLVED, "Exercise 01.2: square x")
    assert "    # hint: square it (≈ 1 line)" in out
    assert "    raise NotImplementedError('Exercise 01.2: square x')" in out
    assert "        raise NotImplementedError('Exercise 01.2: square x')" in out
    assert "x * x" not in out and "return 1" not in out
    compile(out, "<stub>", "exec")


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("## BEGIN SOLUTION\nx\n### END SOLUTION", "misspelt"),
        ("### BEGIN SOLUTION\nx", "never closed"),
        ("x\n### END SOLUTION", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside an open"),
        ("# begin solution", "misspelt"),
    ],
)
def test_marker_problems_are_found(source: str, problem: str) -> None:
    assert any(problem in p for p in marker_problems(source))


def test_good_markers_have_no_problems() -> None:
    assert marker_problems(SOLVED) == []


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"a2s": {"lab": "00"}, "kernelspec": {"name": "python3"}, "language_info": {}}
    ex = nbformat.v4.new_code_cell(SOLVED, execution_count=3)
    ex["id"] = "ex-00-1"
    ex.metadata = {"tags": ["exercise"], "a2s": {"exercise": "00.1", "task": "square x"}, "x": 1}
    ex.outputs = [nbformat.v4.new_output("stream", text="hi")]
    check = nbformat.v4.new_code_cell(
        "lab00.check(f)\n### BEGIN HIDDEN TESTS\nassert f(2) == 4\n### END HIDDEN TESTS"
    )
    check["id"] = "check-00-1"
    check.metadata = {"tags": ["check"], "a2s": {"exercise": "00.1"}}
    nb.cells = [ex, check]
    return nb


def test_build_lab_stubs_clears_and_strips_hidden() -> None:
    lab = build_lab(_notebook())
    ex, check = lab.cells
    assert "NotImplementedError('Exercise 00.1: square x')" in ex.source
    assert ex.outputs == [] and ex.execution_count is None
    assert ex.metadata == {"tags": ["exercise"], "a2s": {"exercise": "00.1", "task": "square x"}}
    assert ex["id"] == "ex-00-1"
    assert check.source == "lab00.check(f)"
    assert set(lab.metadata) == {"a2s", "kernelspec", "language_info"}


def test_grading_base_keeps_hidden_tests() -> None:
    base = grading_base(_notebook())
    assert "assert f(2) == 4" in base.cells[1].source
    assert "NotImplementedError" in base.cells[0].source


def test_build_is_byte_deterministic() -> None:
    assert dumps(build_lab(_notebook())) == dumps(build_lab(_notebook()))


def test_bad_markers_stop_the_build() -> None:
    nb = _notebook()
    nb.cells[0].source = "### BEGIN SOLUTION\nx = 1"
    with pytest.raises(NotebookError, match="never closed"):
        build_lab(nb, "x.ipynb")


def _lab_root(tmp_path):
    import shutil

    from a2s.syllabus import repo_root

    (tmp_path / "labs").mkdir()
    (tmp_path / "solutions").mkdir()
    src = repo_root() / "solutions" / "00_orientation.ipynb"
    shutil.copy(src, tmp_path / "solutions" / src.name)
    return tmp_path


def test_build_never_overwrites_student_work_without_force(tmp_path) -> None:
    from a2s.build import build_all

    root = _lab_root(tmp_path)
    assert build_all(root).written == ["00_orientation"]
    lab = root / "labs" / "00_orientation.ipynb"
    nb = nbformat.read(lab, as_version=4)
    next(c for c in nb.cells if c.get("id") == "ex-00-1").source = "def matmul_flops(m, n, k): ..."
    work = dumps(nb)
    lab.write_text(work)
    (root / "labs" / "my_notes.ipynb").write_text("{}")
    # a changed solution makes the lab differ; the student's edits are kept all the same
    sol = root / "solutions" / "00_orientation.ipynb"
    sol.write_text(sol.read_text().replace("Orientation", "Orientation!"))
    report = build_all(root)
    assert report.written == [] and len(report.kept) == 2
    assert lab.read_text() == work and (root / "labs" / "my_notes.ipynb").exists()
    report = build_all(root, force=True)
    assert report.written == ["00_orientation"] and not (root / "labs" / "my_notes.ipynb").exists()
