"""The capstone section of ``a2s report``: the skill matrix over all labs and every profile."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from a2s.cli import main
from a2s.notebook import exercises, read_notebook
from a2s.profiles import (
    _ranges,
    _reweighted,
    capstone_section,
    covers_capstone,
    profiles_png,
    save_profiles_radar,
)
from a2s.syllabus import DIMENSIONS, LABS, PROFILES, SUBJECTS, repo_root

ROOT = repo_root()
Frac = Callable[[str, str], float]  # (layer, subject) -> the share of the points earned

_READY = [lab.number for lab in LABS if lab.solution_path(ROOT).exists()]  # not planned
_CELLS = {
    (e.subject, e.dimension)
    for lab in LABS
    if lab.number in _READY
    for e in exercises(read_notebook(lab.solution_path(ROOT)))
}


def _grades(frac: Frac, labs: list[str] | None = None, student: str = "alice") -> dict:
    """A grading JSON with every exercise of the given labs (all by default)."""
    results = []
    for lab in LABS:
        if (labs is not None and lab.number not in labs) or not lab.solution_path(ROOT).exists():
            continue  # a planned lab has no exercises yet
        rows: list[dict[str, Any]] = [
            {
                "id": e.id,
                "title": e.title,
                "points": frac(lab.layer, e.subject) * e.points,
                "max_points": e.points,
                "status": "passed",
                "message": "",
            }
            for e in exercises(read_notebook(lab.solution_path(ROOT)))
        ]
        results.append(
            {
                "notebook": f"submissions/{student}/{lab.name}.ipynb",
                "lab": lab.number,
                "score": sum(r["points"] for r in rows),
                "max_score": sum(r["max_points"] for r in rows),
                "error": None,
                "exercises": rows,
            }
        )
    return {"version": 1, "results": results}


def _compiler_strong(layer: str, subject: str) -> float:
    return 1.0 if layer in ("3", "4") else (0.7 if subject == "distributed" else 0.9)


CASES = {  # name -> (points earned, verdict of compiler, training, intern)
    "compiler strong, distributed weak": (_compiler_strong, ("met", "NOT met", "met")),
    "everything right": (lambda _l, _s: 1.0, ("met", "met", "met")),
    "nothing right": (lambda _l, _s: 0.0, ("NOT met", "NOT met", "NOT met")),
    "kernels weak, rest fine": (
        lambda layer, _s: 0.5 if layer in ("3", "4") else 0.9,
        ("NOT met", "met", "met"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_every_profile_on_grades_of_all_labs(case: str) -> None:
    frac, want = CASES[case]
    data = _grades(frac)
    assert covers_capstone(data["results"])
    cap = capstone_section(data["results"], ROOT)
    assert [p.key for p in cap.profiles] == list(PROFILES)
    assert tuple(p.verdict for p in cap.profiles) == want
    assert cap.labs == _READY
    for p in cap.profiles:
        assert p.value is not None and p.threshold == PROFILES[p.key].threshold
        assert (p.value >= p.threshold) == (p.verdict == "met")


def test_values_are_what_each_profile_measures() -> None:
    cap = capstone_section(_grades(_compiler_strong)["results"], ROOT)
    rows = {p.key: p for p in cap.profiles}
    assert rows["compiler"].value == pytest.approx(10.0)  # layers 3 and 4 pooled
    assert rows["training"].value == pytest.approx(7.0)  # the distributed subject
    assert rows["training"].reason == "1.5 short of 8.5"
    assert rows["intern"].value == pytest.approx(rows["intern"].total)
    # every cell an exercise of the course is in was graded
    assert set(cap.report.matrix) == cap.course_cells
    assert cap.report.coverage == pytest.approx(cap.course_coverage)


def test_cli_prints_the_section_when_lab_28_is_graded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grades.json"
    path.write_text(json.dumps(_grades(_compiler_strong)))
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "weighted total over what was assessed" in out  # the report is still there
    n = len(_READY)
    assert (
        f"capstone: the skill matrix over all labs ({n} of {n} labs graded: {_ranges(_READY)})"
        in out
    )
    lines = out.splitlines()
    table = {
        ln.split()[0]: ln
        for ln in lines[
            lines.index(next(ln for ln in lines if ln.startswith("hiring profiles"))) + 2 :
        ]
    }
    assert "AI compiler engineer" in table["compiler"] and "met (10.0 >= 8.0)" in table["compiler"]
    assert "NOT met (1.5 short of 8.5)" in table["training"]
    assert table["intern"].split()[-5:-3] == ["4.0", "met"]
    section = lines[next(i for i, ln in enumerate(lines) if ln.startswith("capstone:")) :]
    matrix = next(ln for ln in section if ln.strip().startswith("distributed training/HPC"))
    assert matrix.split()[2:] == ["25%", "-", "7.0", "7.0", "7.0", "7.0", "7.0"]


def test_no_section_without_lab_28_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grades.json"
    path.write_text(json.dumps(_grades(lambda _l, _s: 1.0, labs=["00", "06", "13"])))
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "weighted total" in out and "capstone" not in out and "hiring profiles" not in out
    assert main(["report", str(path), "--profiles"]) == 0
    out = capsys.readouterr().out
    assert f"the skill matrix over all labs (3 of {len(_READY)} labs graded: 00, 06, 13)" in out
    assert "hiring profiles" in out
    compiler = next(ln for ln in out.splitlines() if ln.lstrip().startswith("compiler "))
    assert compiler.rstrip().endswith("met (10.0 >= 8.0)")
    only_28 = tmp_path / "capstone.json"
    only_28.write_text(json.dumps(_grades(lambda _l, _s: 1.0, labs=["28"])))
    assert main(["report", str(only_28)]) == 0
    assert "hiring profiles" in capsys.readouterr().out


def test_a_profile_with_nothing_graded_is_na_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grades.json"
    path.write_text(json.dumps(_grades(lambda _l, _s: 1.0, labs=["00"])))
    assert main(["report", str(path), "--profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {ln.split()[0]: ln for ln in lines if ln.startswith("  ") and ln.split()[0] in PROFILES}
    assert rows["compiler"].rstrip().endswith("n/a (no graded exercise in layers 3 and 4)")
    assert "n/a (no graded exercise in distributed training/HPC)" in rows["training"]
    assert rows["intern"].rstrip().endswith("met (10.0 >= 4.0)")
    # lab 00 covers architecture x breadth and x depth; '.' not graded, '-' not in the course
    section = lines[next(i for i, ln in enumerate(lines) if ln.startswith("capstone:")) :]
    arch = next(ln for ln in section if ln.strip().startswith("computer architecture"))
    cells = [
        "10.0" if d in ("breadth", "depth") else "." if ("architecture", d) in _CELLS else "-"
        for d in DIMENSIONS
    ]
    assert arch.split()[2:] == ["15%", *cells, "10.0"]


def test_labs_graded_are_shown_as_ranges() -> None:
    assert _ranges(["00", "01", "02", "05", "06", "28"]) == "00-02, 05, 06, 28"
    assert _ranges([f"{i:02d}" for i in range(29)]) == "00-28"


def test_a_profile_reweights_each_subject_by_its_dimension_weights() -> None:
    matrix = {("algorithms", "breadth"): 10.0, ("algorithms", "depth"): 0.0}
    for key, prof in PROFILES.items():
        w = prof.dimension_weights
        got = _reweighted(matrix, w)["algorithms"]
        assert got == pytest.approx(10 * w["breadth"] / (w["breadth"] + w["depth"])), key
    assert _reweighted(matrix, PROFILES["intern"].dimension_weights)["distributed"] is None


def test_png_also_writes_the_profiles_radar(tmp_path: Path) -> None:
    path = tmp_path / "grades.json"
    path.write_text(json.dumps(_grades(_compiler_strong, labs=["00", "06", "20", "28"])))
    png = tmp_path / "skills.png"
    assert main(["report", str(path), "--png", str(png)]) == 0
    assert profiles_png(png) == tmp_path / "skills-profiles.png"
    for p in (png, profiles_png(png)):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_class_csv_gains_the_profile_columns(tmp_path: Path) -> None:
    data = _grades(_compiler_strong)
    data["results"] += _grades(lambda _l, _s: 1.0, labs=["00"], student="bob")["results"]
    path, out = tmp_path / "grades.json", tmp_path / "book.csv"
    path.write_text(json.dumps(data))
    assert main(["report", str(path), "--by-student", "--csv", str(out)]) == 0
    rows = {r["student"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert list(rows["alice"])[-1] == "notes"
    assert rows["alice"]["compiler value (threshold 8)"] == "10.0"
    assert rows["alice"]["training verdict"] == "NOT met: 1.5 short of 8.5"
    assert rows["bob"]["compiler value (threshold 8)"] == ""
    assert rows["bob"]["compiler verdict"] == "n/a: no graded exercise in layers 3 and 4"
    assert rows["bob"]["intern verdict"] == "met: 10.0 >= 4.0"


# ------------------------------------------------------------------------------ the figure
@pytest.mark.parametrize("labs", [None, ["00"], ["00", "20", "28"]])
def test_profiles_radar_is_legible_and_draws_gaps(labs: list[str] | None, tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")

    from a2s.viz.report import plot_profiles_radar
    from tests.viz.test_legibility import assert_legible

    cap = capstone_section(_grades(_compiler_strong, labs)["results"], ROOT)
    series = {
        f"{p.title}: {p.verdict} ({p.reason})": {SUBJECTS[k][0]: v for k, v in p.subjects.items()}
        for p in cap.profiles
    }
    gaps = sum(v is None for v in cap.report.subjects.values())

    def make():
        fig = plot_profiles_radar(series, "hiring profiles of alice", summary=cap.report.summary())
        ax = fig.axes[0]
        assert len([p for p in ax.patches if p.get_hatch()]) == gaps
        drawn = [r for line in ax.get_lines() for r in line.get_ydata()]
        assert 0.0 not in drawn, "an unassessed subject was drawn at 0"
        assert set(series) <= {t.get_text() for t in fig.texts}  # the key, one line each
        return fig

    assert_legible(f"profiles radar {labs}", make)
    png = tmp_path / "p.png"
    save_profiles_radar(cap, png, "alice")
    import matplotlib.image

    height, width = matplotlib.image.imread(png).shape[:2]
    assert width <= 900 and (width, height) == (840, 888)
