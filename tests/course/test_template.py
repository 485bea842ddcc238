"""The released template works as a student's repository and its student image gives nothing away.

A student has the course package installed (not this checkout) and runs ``a2s`` inside the
template: the subprocess tests simulate that with a copy of the ``minitorch`` package alone
(as a wheel installs it: no ``solutions/`` beside it) on ``PYTHONPATH``, in a working
directory outside this repository, with ``A2S_COURSE`` unset.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a2s import doctor, syllabus
from a2s.build import BEGIN, END, grading_base
from a2s.cli import main
from a2s.notebook import dumps, exercises, read_notebook
from a2s.syllabus import REFERENCE_DIR, find_lab, repo_root

ROOT = repo_root()
IMAGE = "ghcr.io/acme/algo2silicon-student:2026"
LABS = ("00", "01")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("classroom") / "template"
    assert main(["release", str(out), "--labs", ",".join(LABS), "--image", IMAGE]) == 0
    assert ROOT not in out.parents  # the checkout is not above it
    return out


@pytest.fixture(scope="module")
def student_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a student's shell: the course package installed, no checkout."""
    site = tmp_path_factory.mktemp("site")
    for package in ("minitorch", "a2s"):
        shutil.copytree(
            ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A2S_", "PYTEST"))}
    env["PYTHONPATH"] = str(site)
    return env


def _a2s(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "a2s.cli", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _solution_bodies(lab: str) -> list[str]:
    """The text between each ``### BEGIN SOLUTION`` and ``### END SOLUTION`` of a solution."""
    bodies = []
    for cell in read_notebook(find_lab(lab).solution_path(ROOT)).cells:
        body: list[str] | None = None
        for line in cell.source.splitlines():
            if line.strip() == BEGIN:
                body = []
            elif line.strip() == END and body is not None:
                bodies.append("\n".join(body))
                body = None
            elif body is not None:
                body.append(line)
    return bodies


def test_the_student_process_sees_the_package_and_the_template_only(
    template: Path, student_env: dict[str, str]
) -> None:
    code = "import a2s.syllabus as s; print(s.__file__); print(s.repo_root())"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=template,
        env=student_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    module, root = proc.stdout.split()
    assert Path(module).is_relative_to(student_env["PYTHONPATH"])
    assert Path(root) == template.resolve()


def test_check_list_and_grade_work_in_the_template(
    template: Path, student_env: dict[str, str], tmp_path: Path
) -> None:
    proc = _a2s(template, student_env, "check", "00")  # the stubbed lab, as released
    assert proc.returncode == 1, proc.stderr
    assert "0/3 points" in proc.stdout and "not implemented yet" in proc.stdout
    assert f"against the course in {template.resolve()}" in proc.stderr

    proc = _a2s(template, student_env, "list")
    assert proc.returncode == 0, proc.stderr
    assert "2 lab(s), 9 exercises, 13 points" in proc.stdout

    # a solved lab 00 (the solution's exercise cells in the student copy) gets every point
    solved = read_notebook(template / "labs" / "00_orientation.ipynb")
    answers = {
        c.get("id"): c.source for c in read_notebook(find_lab("00").solution_path(ROOT)).cells
    }
    for ex in exercises(solved):
        cell = next(c for c in solved.cells if c.get("id") == ex.cell_id)
        lines = answers[ex.cell_id].splitlines()
        cell.source = "\n".join(x for x in lines if x.strip() not in (BEGIN, END))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "00_orientation.ipynb").write_text(dumps(solved), encoding="utf-8")
    grades = tmp_path / "grades.json"
    proc = _a2s(
        template, student_env, "grade", str(tmp_path / "mine"), "--json", str(grades), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    assert '"score": 3.0' in grades.read_text() and '"max_score": 3.0' in grades.read_text()


def test_commands_that_need_solutions_refuse_in_one_line(
    template: Path, monkeypatch, capsys, tmp_path: Path
) -> None:
    monkeypatch.setattr(syllabus, "__file__", str(tmp_path / "a" / "b" / "syllabus.py"))
    monkeypatch.delenv("A2S_COURSE", raising=False)
    monkeypatch.setenv("A2S_COURSE_COMMIT", "test")  # a template sets it when unset
    monkeypatch.chdir(template)
    for args in (["build"], ["execute", "00"], ["release", str(tmp_path / "t"), "--labs", "00"]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "needs the course checkout" in err, err
    assert not (tmp_path / "t").exists()
    assert doctor._checkout().ok and "assignment repository" in doctor._checkout().detail


def test_doctor_names_the_checkout_and_an_edited_reference_is_refused(
    template: Path, monkeypatch, capsys, tmp_path: Path
) -> None:
    assert "checkout" in doctor._checkout().detail  # here: this repository
    copy = tmp_path / "mine"
    shutil.copytree(template, copy)
    ref = copy / REFERENCE_DIR / "00_orientation.ipynb"
    ref.write_text(ref.read_text(encoding="utf-8").replace("check_", "chekc_"), encoding="utf-8")
    monkeypatch.setattr(syllabus, "__file__", str(tmp_path / "a" / "b" / "syllabus.py"))
    monkeypatch.setenv("A2S_COURSE", str(copy))
    monkeypatch.setenv("A2S_COURSE_COMMIT", "test")
    found = doctor._checkout()
    assert not found.ok and "changed since it was released" in found.detail
    assert main(["check", "00", "--notebook", str(copy / "labs" / "00_orientation.ipynb")]) == 2
    assert "changed since it was released" in capsys.readouterr().err


@pytest.mark.parametrize("lab", LABS)
def test_a_reference_grades_as_the_solution_does(template: Path, lab: str) -> None:
    """What a submission runs in is the same notebook in the template as in the checkout."""
    name = find_lab(lab).name
    ref = read_notebook(template / REFERENCE_DIR / f"{name}.ipynb")
    solution = read_notebook(find_lab(lab).solution_path(ROOT))
    assert dumps(grading_base(ref)) == dumps(grading_base(solution))


def _pattern(text: str) -> re.Pattern[str]:
    """A .dockerignore pattern as Docker (moby's patternmatcher) reads it."""
    out, i = "", 0
    while i < len(text):
        if text.startswith("**", i):
            out, i = out + ".*", i + 2
        else:
            ch = text[i]
            out += "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
            i += 1
    return re.compile(out)


def build_context(folder: Path) -> list[str]:
    """The files ``docker build folder`` sends: the last matching line of .dockerignore wins,
    and a line matching a folder matches everything in it."""
    rules = []
    ignore = folder / ".dockerignore"
    for line in ignore.read_text().splitlines() if ignore.exists() else []:
        line = line.strip()
        if line and not line.startswith("#"):
            keep = line.startswith("!")
            rules.append((keep, _pattern(line.lstrip("!").strip("/"))))
    sent = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        parts = rel.split("/")
        prefixes = ["/".join(parts[: k + 1]) for k in range(len(parts))]
        included = True
        for keep, pattern in rules:
            if any(pattern.fullmatch(p) for p in prefixes):
                included = keep
        if included:
            sent.append(rel)
    return sent


def test_the_student_images_context_holds_no_solution_text(template: Path) -> None:
    context = build_context(template)
    assert context == [
        ".a2s/course.json",
        ".a2s/labs/00_orientation.ipynb",
        ".a2s/labs/01_numerics.ipynb",
        "Dockerfile",
        "labs/00_orientation.ipynb",
        "labs/01_numerics.ipynb",
    ]
    dockerfile = (template / "Dockerfile").read_text()
    for src in re.findall(r"^COPY (\S+) ", dockerfile, re.M):  # it copies only what is sent
        assert any(f.startswith(src) for f in context), src
    assert "solutions/" not in dockerfile and "--extra-checks" not in dockerfile
    texts = {f: (template / f).read_text(encoding="utf-8") for f in context}
    texts.update(
        {
            f"{f} (cells)": "\n".join(c.source for c in read_notebook(template / f).cells)
            for f in context
            if f.endswith(".ipynb")
        }
    )
    bodies = [b for lab in LABS for b in _solution_bodies(lab)]
    assert len(bodies) == 9 and all(b.strip() for b in bodies)
    for name, text in texts.items():
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text, name
        assert "a2s_extra" not in text, name  # the instructor's hidden checks' module
        for body in bodies:
            assert body not in text, (name, body)


def test_the_checkouts_grading_image_is_documented_as_private() -> None:
    """The repository's Dockerfile holds solutions/ and is the instructor's, not the students'."""
    text = (ROOT / "Dockerfile").read_text()
    assert "COPY . /course" in text and "PRIVATE" in text
    guide = (ROOT / "docs" / "instructor_guide.md").read_text()
    assert "student image" in guide and "grading image" in guide
