"""The ``a2s`` command line: help everywhere, exit 2 on usage errors, list/build/report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a2s import commands, figures
from a2s.cli import build_parser, main
from a2s.grade import ExerciseResult, SubmissionResult
from a2s.syllabus import LABS, find_lab, find_lab_notebook, repo_root
from a2s.table import results_table

COMMANDS = [
    "list",
    "build",
    "execute",
    "check",
    "grade",
    "report",
    "similarity",
    "release",
    "doctor",
    "bench",
    "ranks",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage: a2s" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["grade", "x.ipynb"],  # --json missing
        ["grade", "x.ipynb", "--json", "o.json", "--cell-timeout", "-1"],
        ["grade", "x.ipynb", "--json", "o.json", "--fail-under", "140"],
        ["grade", "x.ipynb", "--json", "o.json", "--memory-limit", "lots"],
        ["grade", "x.ipynb", "--json", "o.json", "--memory-limit", "600"],
        ["report", "r.json", "--profile", "astronaut"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "99"],
        ["check", "00", "--notebook", "nowhere.ipynb"],
        ["bench", "nope"],
        ["list", "99"],
        ["execute", "42"],
        ["report", "missing.json"],
    ],
)
def test_bad_values_exit_2_with_message(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"a2s {argv[0]}: error:")


def test_grade_never_writes_over_a_notebook(tmp_path: Path) -> None:
    sub = tmp_path / "00_orientation.ipynb"
    sub.write_text("{}")
    assert main(["grade", str(sub), "--json", str(sub)]) == 2
    assert main(["grade", str(sub), "--json", str(tmp_path / "x.ipynb")]) == 2
    assert main(["grade", str(sub), "--json", str(tmp_path)]) == 2
    assert sub.read_text() == "{}"


def test_report_rejects_non_grading_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"nope": 1}')
    assert main(["report", str(bad)]) == 2
    bad.write_text("not json")
    assert main(["report", str(bad)]) == 2


def test_list_json_names_exercises(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json", "--all"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [row["lab"] for row in data["labs"]] == [lab.number for lab in LABS]
    lab00 = data["labs"][0]
    assert lab00["available"] and lab00["points"] == sum(e["points"] for e in lab00["exercises"])
    assert {"id", "title", "points", "topics", "subject", "dimension"} <= set(lab00["exercises"][0])


def test_build_check_passes_on_the_repo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--check"]) == 0


def test_parser_lists_all_commands() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted(COMMANDS)


# --------------------------------------------------------------------------- a2s check
def _clone(tmp_path: Path, *names: str) -> Path:
    """A learner's clone with empty lab files (the grader is faked: no kernel runs)."""
    clone = tmp_path / "clone"
    (clone / "labs").mkdir(parents=True)
    for name in names:
        (clone / "labs" / name).write_text("{}")
    return clone


@pytest.fixture
def graded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the grader by a fake that records which notebook it was given."""
    seen: list[str] = []

    def fake(path, opts, root, progress=None):
        seen.append(path)
        ex = ExerciseResult("01.1", "Decode", 0.0, 2.0, "failed", "wrong")
        return SubmissionResult(path, "01", 0.0, 2.0, None, [ex])

    monkeypatch.setattr(commands, "grade_submission", fake)
    return seen


def test_check_grades_the_lab_of_the_current_clone(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    graded: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    clone = _clone(tmp_path, "01_numerics.ipynb", "00_orientation.ipynb")
    inside = clone / "notes" / "week1"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    assert main(["check", "1"]) == 1  # the fake fails its exercise
    assert [Path(p).resolve() for p in graded] == [clone / "labs" / "01_numerics.ipynb"]
    assert Path(graded[0]).resolve().parent != repo_root() / "labs"
    out, err = capsys.readouterr()
    assert str(clone / "labs" / "01_numerics.ipynb") in err  # says which file it graded
    assert out.splitlines()[0].startswith(str(clone / "labs" / "01_numerics.ipynb"))


def test_check_from_the_clone_root_shows_a_relative_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    graded: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    clone = _clone(tmp_path, "01_numerics.ipynb")
    monkeypatch.chdir(clone)
    main(["check", "numerics"])
    assert capsys.readouterr().out.startswith(str(Path("labs", "01_numerics.ipynb")) + ":")


def test_check_takes_a_renamed_lab_but_refuses_two(tmp_path: Path) -> None:
    lab = find_lab("01")
    clone = _clone(tmp_path, "01_my_numerics.ipynb")
    assert find_lab_notebook(lab, clone) == clone / "labs" / "01_my_numerics.ipynb"
    (clone / "labs" / "01_copy.ipynb").write_text("{}")
    with pytest.raises(FileNotFoundError, match="several lab 01"):
        find_lab_notebook(lab, clone)
    (clone / "labs" / "01_numerics.ipynb").write_text("{}")  # the exact name wins
    assert find_lab_notebook(lab, clone) == clone / "labs" / "01_numerics.ipynb"


def test_check_without_a_lab_file_fails_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    graded: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _clone(tmp_path, "00_orientation.ipynb")  # a clone, but without lab 01
    monkeypatch.chdir(tmp_path / "clone")
    assert main(["check", "01"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("a2s check: error: no labs/01_*.ipynb in ")
    assert len(err.strip().splitlines()) == 1 and "--notebook" in err
    assert graded == []


def test_check_notebook_option_overrides_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, graded: list[str]
) -> None:
    mine = tmp_path / "attempt.ipynb"
    mine.write_text("{}")
    monkeypatch.chdir(tmp_path)
    main(["check", "01", "--notebook", str(mine)])
    assert [Path(p) for p in graded] == [mine]


def test_table_keeps_whole_messages_wrapped() -> None:
    fix = "fix: reverse the topological order before the backward sweep"
    message = "grad of a mismatch " * 40 + f"\n{fix}"
    ex = ExerciseResult("02.5", "Backward", 0.0, 2.0, "failed", message)
    lines = results_table(SubmissionResult("x.ipynb", "02", 0.0, 2.0, None, [ex]), width=80)
    body = lines[2:]
    assert all(len(line) <= 80 for line in body), body
    assert " ".join(" ".join(body).split()) == " ".join(message.split())
    assert body[-1].strip() == fix  # the message's own lines are kept
    assert all(line.startswith(" " * 11) for line in body)


def test_doctor_warns_about_a_cuda_build_without_a_gpu_and_a_missing_checkout(
    monkeypatch, tmp_path
):
    import torch

    from a2s import doctor, syllabus

    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    found = doctor._torch_threads()
    assert not found.ok and "CUDA build" in found.detail and "whl/cpu" in found.fix
    monkeypatch.setattr(torch.version, "cuda", None)
    assert doctor._torch_threads().ok
    assert doctor._checkout().ok
    monkeypatch.setattr(syllabus, "__file__", str(tmp_path / "a" / "b" / "syllabus.py"))
    monkeypatch.chdir(tmp_path)
    found = doctor._checkout()
    assert not found.ok and "cannot find the course checkout" in found.detail


def test_pyproject_and_doctor_name_the_same_torch():
    import tomllib

    from a2s.doctor import TORCH
    from a2s.syllabus import repo_root

    deps = tomllib.loads((repo_root() / "pyproject.toml").read_text())["project"]["dependencies"]
    assert TORCH in deps


def test_list_one_lab_and_the_course_total(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "18"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("18  Paged KV cache") and all(not ln.startswith("17") for ln in out)
    assert out[-1].startswith("1 lab(s), 5 exercises,")
    assert main(["list"]) == 0
    ready = sum(lab.solution_path(repo_root()).exists() for lab in LABS)
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"{ready} lab(s), ")


@pytest.mark.parametrize(
    ("value", "anchor", "missed"),
    [
        (3.094, "<= 2", True),
        (1.9, "target <= 2.0", False),
        (0.5, ">= 0.67 of gloo", True),
        (1.33, "one extra forward ~ 1.33", False),
        (5.0, "torch eager = 1.0", False),
    ],
)
def test_bench_flags_a_missed_target(value, anchor, missed):
    assert figures.missed_target(value, anchor) is missed


def test_check_progress_writes_nothing_to_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    bar = commands._Progress("lab 21", quiet=False)
    for done in range(4):
        bar.update(done, 3)
    bar.close()
    assert capsys.readouterr().err == ""  # stderr is not a terminal here
