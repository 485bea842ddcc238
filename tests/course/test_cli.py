"""The ``a2s`` command line: help everywhere, exit 2 on usage errors, list/build/report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minitorch.course.cli import build_parser, main
from minitorch.course.syllabus import LABS

COMMANDS = ["list", "build", "execute", "check", "grade", "report", "doctor", "bench"]


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
    [["check", "99"], ["check", "00", "--notebook", "nowhere.ipynb"], ["bench", "nope"],
     ["execute", "42"], ["report", "missing.json"]],
)  # fmt: skip
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
