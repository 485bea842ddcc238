"""The GitHub Classroom recipe: a valid workflow that reports points, and the grading image."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from a2s.cli import build_parser
from a2s.notebook import exercises, read_notebook
from a2s.release import COMMAND_GRADER, REPORTER, workflow
from a2s.syllabus import find_lab, repo_root

ROOT = repo_root()
COMMITTED = ROOT / "classroom" / "autograding.yml"
_CHECK = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))


def _labs(*numbers: str) -> list:
    return [
        (lab, exercises(read_notebook(lab.solution_path(ROOT)))) for lab in map(find_lab, numbers)
    ]


def test_committed_workflow_is_what_release_writes() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == workflow(_labs("00")), (
        "classroom/autograding.yml is out of date: regenerate it with "
        "a2s.release.workflow (lab 00, the default image)"
    )


@pytest.mark.skipif(
    _CHECK is None, reason="check-jsonschema not installed (pip install -e '.[dev]')"
)
def test_workflows_are_valid_against_githubs_schema(tmp_path: Path) -> None:
    """check-jsonschema's vendored copy of the GitHub workflow schema: no network."""
    several = tmp_path / "several.yml"
    several.write_text(workflow(_labs("00", "01", "02")), encoding="utf-8")
    for path in (COMMITTED, several):
        cmd = [str(_CHECK), "--builtin-schema", "vendor.github-workflows", str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("numbers", [("00",), ("01", "03")])
def test_workflow_structure_reports_each_exercises_points(numbers: tuple[str, ...]) -> None:
    labs = _labs(*numbers)
    doc = yaml.safe_load(workflow(labs, "ghcr.io/acme/grader:1"))
    assert doc["name"] == "Autograding Tests"  # Classroom reads points from this name only
    triggers = doc.get("on", doc.get(True))  # PyYAML reads the key `on` as True
    assert {"push", "repository_dispatch"} <= set(triggers)
    assert list(doc["jobs"]) == ["run-autograding-tests"]  # one job, with this id
    job = doc["jobs"]["run-autograding-tests"]
    assert job["container"]["image"] == "ghcr.io/acme/grader:1"
    assert job["container"]["options"] == "--privileged"  # namespaces for each grading run
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    graders = [s for s in steps if s.get("uses") == COMMAND_GRADER]
    wanted = [ex for _lab, exs in labs for ex in exs]
    assert [g["with"]["test-name"] for g in graders] == [f"{e.id} {e.title}" for e in wanted]
    assert [g["with"]["max-score"] for g in graders] == [int(e.points) for e in wanted]
    for g in graders:  # the command is one this CLI accepts, with no shell needed
        argv = shlex.split(g["with"]["command"])
        assert argv[0] == "a2s" and not set("|&;<>*$`") & set(g["with"]["command"])
        assert build_parser().parse_args(argv[1:]).exercise == argv[-1]
    (reporter,) = [s for s in steps if s.get("uses") == REPORTER]
    ids = [g["id"] for g in graders]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {
        f"{i.upper()}_RESULTS": f"${{{{ steps.{i}.outputs.result }}}}" for i in ids
    }
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", i) for i in ids)
    grading = next(s for s in steps if "a2s grade" in s.get("run", ""))
    assert grading["continue-on-error"] is True and steps.index(grading) < steps.index(graders[0])
    assert "rm -f grades.json" in grading["run"]  # a committed grades.json never counts


def _dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return [" ".join(s.split()) for s in "\n".join(lines).replace("\\\n", " ").splitlines() if s]


def test_image_installs_the_cpu_torch_before_the_course() -> None:
    steps = _dockerfile()
    assert steps[0] == "FROM python:3.11-slim"
    torch = next(i for i, s in enumerate(steps) if "torch" in s and s.startswith("RUN"))
    assert "--index-url https://download.pytorch.org/whl/cpu" in steps[torch]
    course = next(i for i, s in enumerate(steps) if "pip install -e /course" in s)
    assert steps.index("COPY . /course") < course and torch < course
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = next(d for d in deps if d.startswith("torch"))  # the same range as the course
    assert f'"{wanted}"' in steps[torch]
    assert any("a2s check 00 --notebook /course/solutions/" in s for s in steps)  # proves it grades


def test_dockerignore_keeps_local_environments_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".git", ".venv", "**/__pycache__"} <= set(ignored)
    assert "solutions" not in ignored  # the image must hold the canonical solutions


def test_classroom_readme_explains_the_recipe() -> None:
    text = (ROOT / "classroom" / "README.md").read_text(encoding="utf-8")
    for needle in ("a2s release", ".github/workflows/classroom.yml", "docker build", "--image"):
        assert needle in text
