"""Batch grading that survives: JSON after every submission, --resume, --jobs, audit fields.

The grader is faked (no kernel) except in the one end-to-end test marked ``grader``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from a2s import grade
from a2s.batch import course_identity
from a2s.cli import main
from a2s.grade import ExerciseResult, SubmissionResult, grade_paths
from a2s.runner import RunOptions
from a2s.syllabus import repo_root

ROOT = repo_root()


def _class(tmp_path: Path, n: int = 4) -> Path:
    folder = tmp_path / "submissions"
    for i in range(n):
        path = folder / f"s{i}" / "00_orientation.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"cells": [], "nbformat": 4, "student": i}))
    return folder


class FakeGrader:
    """Stands in for grade_submission: scores s0 3/3, the others 1/3; records its calls."""

    def __init__(self, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.calls: list[str] = []
        self.delay, self.fail_on, self.lock = delay, fail_on, threading.Lock()
        self.running = self.most = 0

    def __call__(self, path, opts, root=None, progress=None) -> SubmissionResult:
        with self.lock:
            self.calls.append(path)
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.delay)
        with self.lock:
            self.running -= 1
        if self.fail_on and self.fail_on in path:
            raise self.exc if hasattr(self, "exc") else RuntimeError("grader bug")
        points = 3.0 if "/s0/" in path else 1.0
        ex = ExerciseResult(
            "00.1", "FLOPs", points, 3.0, "passed" if points == 3 else "failed", "msg", 0.5
        )
        return SubmissionResult(path, "00", points, 3.0, None, [ex], seed=11, isolation="none")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeGrader:
    grader = FakeGrader()
    monkeypatch.setattr(grade, "grade_submission", grader)
    return grader


def test_results_in_order_with_audit_fields(tmp_path: Path, fake: FakeGrader) -> None:
    folder = _class(tmp_path)
    results = grade_paths([str(folder), str(tmp_path / "gone.ipynb")], RunOptions(), ROOT)
    assert [Path(r.notebook).parent.name for r in results] == [
        "s0",
        "s1",
        "s2",
        "s3",
        tmp_path.name,
    ]
    first = results[0]
    raw = Path(first.notebook).read_bytes()
    assert first.sha256 == hashlib.sha256(raw).hexdigest()
    assert first.course_version and re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first.graded_at
    )
    assert first.wall_time is not None and first.wall_time >= 0
    assert (first.seed, first.isolation) == (11, "none")  # as grade_submission set them
    gone = results[-1]
    assert gone.error.endswith("no such file or folder") and gone.sha256 is None


def test_json_round_trip_keeps_every_field(tmp_path: Path, fake: FakeGrader) -> None:
    (res,) = grade_paths([str(_class(tmp_path, 1))], RunOptions(), ROOT)
    data = json.loads(json.dumps(res.as_dict()))
    assert list(data)[-1] == "exercises"  # the audit fields come before the long list
    assert SubmissionResult.from_dict(data) == res
    old = {k: v for k, v in data.items() if k not in ("sha256", "seed", "graded_at")}
    assert SubmissionResult.from_dict({**old, "from_the_future": 1}).sha256 is None


def test_the_json_grows_as_submissions_finish(tmp_path: Path, fake: FakeGrader) -> None:
    out = tmp_path / "grades.json"
    seen = []

    def on_done(res, finished, reused) -> None:
        seen.append(len(finished))
        out.write_text(json.dumps([r.notebook for r in finished]))

    grade_paths([str(_class(tmp_path))], RunOptions(), ROOT, on_done=on_done)
    assert seen == [1, 2, 3, 4]


def test_an_interrupted_run_keeps_what_was_graded(
    tmp_path: Path, fake: FakeGrader, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, out = _class(tmp_path), tmp_path / "grades.json"
    fake.fail_on, fake.exc = "/s2/", KeyboardInterrupt()
    assert main(["grade", str(folder), "--json", str(out), "--quiet"]) == 130
    kept = json.loads(out.read_text())["results"]
    assert [Path(r["notebook"]).parent.name for r in kept] == ["s0", "s1"]
    # --resume grades only what is missing
    fake.fail_on, fake.calls = None, []
    assert main(["grade", str(folder), "--json", str(out), "--quiet", "--resume"]) == 0
    assert [Path(p).parent.name for p in fake.calls] == ["s2", "s3"]
    assert len(json.loads(out.read_text())["results"]) == 4
    assert "graded 2 and kept 2 submission(s)" in capsys.readouterr().out


def test_resume_regrades_a_changed_file(tmp_path: Path, fake: FakeGrader) -> None:
    folder, out = _class(tmp_path), tmp_path / "grades.json"
    assert main(["grade", str(folder), "--json", str(out), "--quiet"]) == 0
    (folder / "s1" / "00_orientation.ipynb").write_text('{"cells": [], "nbformat": 4}')
    fake.calls = []
    assert main(["grade", str(folder), "--json", str(out), "--quiet", "--resume"]) == 0
    assert [Path(p).parent.name for p in fake.calls] == ["s1"]


def test_resume_refuses_a_file_that_is_not_grading_json(tmp_path: Path, fake, capsys) -> None:
    out = tmp_path / "grades.json"
    out.write_text("[1, 2]")
    assert main(["grade", str(_class(tmp_path)), "--json", str(out), "--resume"]) == 2
    assert "cannot resume" in capsys.readouterr().err and fake.calls == []


def test_jobs_grade_at_once_and_keep_the_order(tmp_path: Path, monkeypatch) -> None:
    grader = FakeGrader(delay=0.3)
    monkeypatch.setattr(grade, "grade_submission", grader)
    order = []
    t0 = time.monotonic()
    results = grade_paths(
        [str(_class(tmp_path, 6))],
        RunOptions(),
        ROOT,
        jobs=3,
        on_done=lambda r, f, reused: order.append(len(f)),
    )
    assert time.monotonic() - t0 < 6 * 0.3  # not one after the other
    assert grader.most == 3 and order == [1, 2, 3, 4, 5, 6]
    assert [Path(r.notebook).parent.name for r in results] == [f"s{i}" for i in range(6)]


def test_a_grader_bug_costs_one_submission(tmp_path: Path, fake: FakeGrader) -> None:
    fake.fail_on = "/s1/"
    results = grade_paths([str(_class(tmp_path))], RunOptions(), ROOT, jobs=2)
    assert [r.error is None for r in results] == [True, False, True, True]
    assert "the grader failed on this submission: RuntimeError: grader bug" in results[1].error


def test_fail_under_names_the_submissions(tmp_path: Path, fake, capsys) -> None:
    folder, out = _class(tmp_path, 3), tmp_path / "g.json"
    argv = [
        "grade",
        str(folder),
        str(tmp_path / "gone.ipynb"),
        "--json",
        str(out),
        "--quiet",
        "--fail-under",
        "50",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "3 submission(s) under 50%:" in err
    assert re.search(r"s1/00_orientation\.ipynb: 33\.3%", err)
    assert "gone.ipynb: 0.0% (" in err and "s0/" not in err
    assert main([*argv[:-1], "33"]) == 1 and main([*argv[:-1], "30"]) == 1  # gone stays under


def test_course_identity_from_the_image(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2S_COURSE_COMMIT", "abc123")
    assert course_identity(ROOT)[1] == "abc123"
    monkeypatch.delenv("A2S_COURSE_COMMIT")
    commit = course_identity(ROOT)[1]
    assert commit is None or re.fullmatch(r"[0-9a-f]{40}(-dirty)?", commit)


@pytest.mark.grader
def test_end_to_end_two_jobs_junit_and_resume(tmp_path: Path, capsys) -> None:
    """Two real gradings at once; the JUnit validates; --resume then grades nothing."""
    folder = tmp_path / "submissions"
    for student, source in (("alice", ROOT / "solutions"), ("bob", ROOT / "labs")):
        (folder / student).mkdir(parents=True)
        nb = source / "00_orientation.ipynb"
        (folder / student / nb.name).write_bytes(nb.read_bytes())
    out, xml = tmp_path / "grades.json", tmp_path / "grades.xml"
    argv = ["grade", str(folder), "--json", str(out), "--junit", str(xml), "--quiet"]
    assert main([*argv, "--jobs", "2"]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert [(r["score"], r["max_score"]) for r in results] == [(3.0, 3.0), (0.0, 3.0)]
    for r in results:
        assert r["sha256"] and r["graded_at"] and r["wall_time"] > 0 and r["course_version"]
    cases = ET.parse(xml).getroot().findall("testsuite/testcase")
    assert {c.get("classname") for c in cases} == {"alice.lab00", "bob.lab00"}
    xmlschema = pytest.importorskip("xmlschema")
    xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd")).validate(xml)
    capsys.readouterr()
    t0 = time.monotonic()
    assert main([*argv, "--resume"]) == 0
    assert time.monotonic() - t0 < 5 and "graded 0 and kept 2" in capsys.readouterr().out


def test_fail_under_counts_each_students_best_copy_and_quiet_prints_no_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    folder = _class(tmp_path, 2)
    draft = folder / "s0" / "draft" / "00_orientation.ipynb"  # s0's superseded copy
    draft.parent.mkdir()
    draft.write_text(json.dumps({"cells": [], "nbformat": 4}))

    def graded(path, opts, root=None, progress=None) -> SubmissionResult:
        points = 3.0 if "/s0/" in path and "draft" not in path else 1.0
        ex = ExerciseResult("00.1", "FLOPs", points, 3.0, "passed", "msg", 0.5)
        return SubmissionResult(path, "00", points, 3.0, None, [ex], seed=1, isolation="none")

    monkeypatch.setattr(grade, "grade_submission", graded)
    out = tmp_path / "g.json"
    assert main(["grade", str(folder), "--json", str(out), "--quiet", "--fail-under", "50"]) == 1
    captured = capsys.readouterr()
    assert "1 submission(s) under 50%:" in captured.err and "draft" not in captured.err
    assert "s1/00_orientation.ipynb: 33.3%" in captured.err
    assert "00.1" not in captured.out and "graded 3 and kept 0" in captured.out
