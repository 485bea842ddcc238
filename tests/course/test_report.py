"""The skill report: scores, weights, levels, profiles and the radar chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a2s.cli import main
from a2s.report import level, skill_report
from a2s.syllabus import DIMENSIONS, PROFILES, SUBJECTS, repo_root

ROOT = repo_root()


def _results(points_00_1: float, points_00_2: float) -> dict:
    exs = [
        {
            "id": "00.1",
            "title": "",
            "points": points_00_1,
            "max_points": 1.0,
            "status": "passed",
            "message": "",
        },
        {
            "id": "00.2",
            "title": "",
            "points": points_00_2,
            "max_points": 2.0,
            "status": "passed",
            "message": "",
        },
    ]
    res = {
        "notebook": "a.ipynb",
        "lab": "00",
        "score": points_00_1 + points_00_2,
        "max_score": 3.0,
        "error": None,
        "exercises": exs,
    }
    return {"version": 1, "results": [res]}


def test_weights_sum_to_one() -> None:
    assert sum(w for _, w in SUBJECTS.values()) == pytest.approx(1.0)
    assert sum(w for _, w in DIMENSIONS.values()) == pytest.approx(1.0)
    for prof in PROFILES.values():
        assert sum(prof.dimension_weights.values()) == pytest.approx(1.0)


LEVELS = [
    (10, "S"),
    (8.0, "S"),
    (7.99, "A"),
    (6, "A"),
    (5.9, "B"),
    (2.0, "C"),
    (1.99, "D"),
    (0, "D"),
]


@pytest.mark.parametrize(("score", "want"), LEVELS)
def test_levels(score: float, want: str) -> None:
    assert level(score) == want


def test_full_and_partial_scores() -> None:
    full = skill_report(_results(1, 2), ROOT)
    assert full.total == pytest.approx(10.0) and full.level == "S"
    # lab 00: 00.1 is architecture/breadth (w_d 0.2), 00.2 architecture/depth (w_d 0.3)
    half = skill_report(_results(1, 0), ROOT)
    assert half.subjects["architecture"] == pytest.approx(10 / 3)
    assert half.total == pytest.approx(10 * 0.2 / 0.5)
    assert half.subjects["distributed"] is None  # not assessed, not zero


def test_profiles_threshold() -> None:
    rep = skill_report(_results(1, 2), ROOT, "intern")
    assert rep.profile_met is True
    rep = skill_report(_results(0, 0), ROOT, "intern")
    assert rep.profile_met is False and rep.level == "D"
    rep = skill_report(_results(1, 2), ROOT, "training")
    assert rep.profile_met is False and rep.profile_value is None  # no distributed lab graded


def test_errors_are_noted_not_crashed() -> None:
    data = {
        "version": 1,
        "results": [
            {
                "notebook": "x",
                "lab": None,
                "score": 0,
                "max_score": 0,
                "error": "not a notebook",
                "exercises": [],
            }
        ],
    }
    rep = skill_report(data, ROOT)
    assert rep.total == 0 and any("not a notebook" in n for n in rep.notes)


def test_unknown_or_planned_lab_is_a_note() -> None:
    data = _results(1, 2)
    data["results"].append(
        {
            "notebook": "b",
            "lab": "99",
            "score": 0,
            "max_score": 1,
            "error": None,
            "exercises": [{"id": "99.1", "points": 0, "max_points": 1}],
        }
    )
    rep = skill_report(data, ROOT)  # (every lab 00-28 has a notebook now: 99 is unknown)
    assert rep.total == pytest.approx(10.0)
    assert any("99" in n for n in rep.notes)


def test_cli_report_writes_radar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_results(1, 1)))
    png = tmp_path / "radar.png"
    assert main(["report", str(path), "--profile", "compiler", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "weighted total" in out and "AI compiler engineer" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------- coverage and the radar
def test_level_is_over_what_was_assessed_and_says_how_much() -> None:
    rep = skill_report(_results(1, 2), ROOT)
    # lab 00 covers architecture x breadth and architecture x depth: 0.15 x (0.2 + 0.3)
    assert rep.coverage == pytest.approx(0.15 * 0.5)
    assert rep.total == pytest.approx(10.0) and rep.level == "S"
    assert rep.course_total == pytest.approx(0.75)
    text = "\n".join(rep.lines())
    assert "7.5% of the course's weight" in text and "describes that part only" in text
    assert "over the whole course (not assessed counts 0): 0.8 / 10" in text
    assert "7.5%" in rep.summary() and "level S" in rep.summary()
    assert "distributed training/HPC" in rep.unassessed


def test_nothing_assessed_has_no_level() -> None:
    data = {
        "version": 1,
        "results": [
            {
                "notebook": "x",
                "lab": None,
                "score": 0,
                "max_score": 0,
                "error": "not a notebook",
                "exercises": [],
            }
        ],
    }
    rep = skill_report(data, ROOT)
    assert rep.coverage == 0 and rep.level == "n/a"
    assert rep.summary() == "nothing assessed yet: no level"


def _texts_inside(fig) -> list[str]:
    """The texts drawn past the figure's edge (none is the goal)."""
    import matplotlib.text

    fig.canvas.draw()
    renderer, frame = fig.canvas.get_renderer(), fig.bbox
    out = []
    for t in fig.findobj(matplotlib.text.Text):
        if t.get_visible() and t.get_text():
            box = t.get_window_extent(renderer)
            if box.x0 < frame.x0 or box.y0 < frame.y0 or box.x1 > frame.x1 or box.y1 > frame.y1:
                out.append(t.get_text())
    return out


@pytest.mark.parametrize("assessed", [1, 4, 6])
def test_radar_draws_gaps_not_zeros_and_keeps_labels_inside(assessed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from a2s.viz.report import plot_skill_radar

    labels = [label for label, _w in SUBJECTS.values()]
    scores = {label: (7.0 if i < assessed else None) for i, label in enumerate(labels)}
    fig = plot_skill_radar(scores, "skills", summary="7.0/10 over 30% of the course")
    ax = fig.axes[0]
    drawn = [r for line in ax.get_lines() for r in line.get_ydata()]
    assert 0.0 not in drawn, "an unassessed subject was drawn at 0"
    assert sorted(set(drawn)) == [7.0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == len(labels) - assessed  # one hatched gap per unassessed subject
    words = " ".join(t.get_text() for t in ax.texts)
    assert words.count("not assessed") == len(labels) - assessed
    assert _texts_inside(fig) == []
    plt.close(fig)


def test_report_png_is_the_size_of_a_notebook_output(tmp_path: Path) -> None:
    import matplotlib.image

    from a2s.report import save_radar

    png = tmp_path / "r.png"
    save_radar(skill_report(_results(1, 2), ROOT), png, "alice")
    height, width = matplotlib.image.imread(png).shape[:2]
    assert (width, height) == (840, 888)  # at most ~900 px wide: JupyterLab's output width


def test_an_unreadable_file_of_a_known_lab_counts_zero_not_nothing() -> None:
    full = skill_report(_results(1.0, 2.0), ROOT)
    assert full.total == pytest.approx(10.0)
    broken = _results(1.0, 2.0)
    unreadable = {
        "notebook": "alice/01_numerics.ipynb",
        "lab": None,
        "score": 0,
        "max_score": 0,
        "error": "not a notebook",
        "exercises": [],
    }
    broken["results"].append(unreadable)
    rep = skill_report(broken, ROOT)
    assert rep.total < 5.0, "the unreadable lab 01 must weigh in as 0, as the gradebook has it"
    assert any("lab 01 counts 0" in n for n in rep.notes)
    broken["results"][-1]["notebook"] = "notes.ipynb"  # no lab to be had from the name
    rep = skill_report(broken, ROOT)
    assert rep.total == pytest.approx(10.0) and any("not graded" in n for n in rep.notes)
