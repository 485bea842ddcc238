"""``a2s release``: the student template of an assignment holds no solution and no grader test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from a2s.cli import main
from a2s.notebook import exercises, read_notebook, tags
from a2s.release import DEFAULT_IMAGE, package_spec, release, workflow
from a2s.syllabus import LABS, find_lab, repo_root

ROOT = repo_root()
IMAGE = "ghcr.io/acme/algo2silicon-student:2026"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "template"
    assert main(["release", str(out), "--labs", "0,01", "--image", IMAGE]) == 0
    return out


def test_the_template_holds_labs_docs_readme_and_the_workflow(template: Path) -> None:
    files = sorted(str(p.relative_to(template)) for p in template.rglob("*") if p.is_file())
    assert files == [
        ".a2s/course.json",
        ".a2s/labs/00_orientation.ipynb",
        ".a2s/labs/01_numerics.ipynb",
        ".dockerignore",
        ".github/workflows/classroom.yml",
        ".gitignore",
        "Dockerfile",
        "README.md",
        "docs/glossary.md",
        "docs/student_guide.md",
        "labs/00_orientation.ipynb",
        "labs/01_numerics.ipynb",
    ]


def test_the_student_guide_is_written_for_the_template(template: Path) -> None:
    for name in ("docs/student_guide.md", "README.md"):
        text = (template / name).read_text(encoding="utf-8")
        assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text, name
        assert '"algo2silicon @ git+COURSE_REPO_URL"' in text, name  # the course package
        assert "a2s check 00" in text and "jupyter lab labs/" in text, name
        assert "solutions/" not in text and '-e ".[dev]"' not in text, name
        assert "pip install -e" not in text and "algo2silicon-grader" not in text, name
    guide = (template / "docs/student_guide.md").read_text(encoding="utf-8")
    assert guide != (ROOT / "docs/student_guide.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("url", "spec"),
    [
        ("https://github.com/acme/course", "algo2silicon @ git+https://github.com/acme/course"),
        (
            "git+ssh://git@github.com/acme/course",
            "algo2silicon @ git+ssh://git@github.com/acme/course",
        ),
        (
            "https://acme.org/algo2silicon-0.1.0-py3-none-any.whl",
            "algo2silicon @ https://acme.org/algo2silicon-0.1.0-py3-none-any.whl",
        ),
    ],
)
def test_the_install_line_takes_a_wheel_or_git_url(url: str, spec: str) -> None:
    assert package_spec(url) == spec


def test_no_solution_hidden_test_or_output_leaves(template: Path) -> None:
    for path in template.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text, path
    for path in (template / "labs").glob("*.ipynb"):
        nb = read_notebook(path)
        solution = read_notebook(find_lab(path.name[:2]).solution_path(ROOT))
        stubs = {c.get("id"): c.source for c in nb.cells if "exercise" in tags(c)}
        assert set(stubs) == {ex.cell_id for ex in exercises(solution)}
        assert all("raise NotImplementedError" in src for src in stubs.values())
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_readme_lists_the_labs_and_their_points(template: Path) -> None:
    readme = (template / "README.md").read_text(encoding="utf-8")
    assert "| 00 | [Orientation](labs/00_orientation.ipynb) | 2 | 3 |" in readme
    assert "| 01 | [Numerics](labs/01_numerics.ipynb) | 7 | 10 |" in readme
    assert "\n## Labs\n" in readme  # docs/glossary.md links to ../README.md#labs
    assert IMAGE in readme and "download.pytorch.org/whl/cpu" in readme


def test_the_workflow_grades_only_the_assignments_labs(template: Path) -> None:
    text = (template / ".github/workflows/classroom.yml").read_text(encoding="utf-8")
    steps = yaml.safe_load(text)["jobs"]["run-autograding-tests"]["steps"]
    grade = next(s for s in steps if "a2s grade" in s.get("run", ""))
    assert re.findall(r"labs/\S+\.ipynb", grade["run"]) == [
        "labs/00_orientation.ipynb",
        "labs/01_numerics.ipynb",
    ]
    ids = [s["with"]["command"].split()[-1] for s in steps if "command" in s.get("with", {})]
    assert ids == ["00.1", "00.2"] + [f"01.{k}" for k in range(1, 8)]


def test_release_refuses_a_folder_in_use_and_unknown_labs(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main(["release", str(tmp_path / "busy"), "--labs", "00"]) == 2
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    assert main(["release", str(tmp_path / "a"), "--labs", "99"]) == 2
    planned = LABS[-1].number  # every lab has a notebook now: pretend the last has none
    real = type(LABS[-1]).solution_path
    monkeypatch.setattr(
        type(LABS[-1]),
        "solution_path",
        lambda self, root: (
            root / "solutions" / "none.ipynb" if self.number == planned else real(self, root)
        ),
    )
    assert main(["release", str(tmp_path / "b"), "--labs", planned]) == 2  # no notebook yet
    assert "planned" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_default_image_is_flagged_as_a_placeholder(tmp_path: Path, capsys) -> None:
    assert main(["release", str(tmp_path / "t"), "--labs", "00"]) == 0
    assert DEFAULT_IMAGE in capsys.readouterr().err


def test_whole_points_only() -> None:
    lab = find_lab("00")
    exs = exercises(read_notebook(lab.solution_path(ROOT)))
    exs[0].points = 1.5
    with pytest.raises(ValueError, match="whole points"):
        workflow([(lab, exs)])


def test_release_checks_what_it_writes(tmp_path: Path, monkeypatch) -> None:
    """Were a solution to reach a student file, nothing at all is written."""
    import a2s.release as rel

    monkeypatch.setattr(rel, "_readme", lambda *a: "### BEGIN SOLUTION\n")
    with pytest.raises(ValueError, match="nothing was released"):
        release(ROOT, tmp_path / "t", [find_lab("00")])
    assert not (tmp_path / "t").exists()
