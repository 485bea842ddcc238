"""Lab 25's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import pipeline as viz
from minitorch.parallel import pipeline, pipeline_exec
from tests.viz.test_legibility import assert_legible


def test_timeline_plot_is_legible() -> None:
    p, m = 4, 8
    timelines = {
        "GPipe": pipeline_exec.simulate(pipeline.gpipe(p, m), 1.0, 2.0)[2],
        "1F1B": pipeline_exec.simulate(pipeline.one_f_one_b(p, m), 1.0, 2.0)[2],
        "interleaved, v=2": pipeline_exec.simulate(pipeline.interleaved(p, m, 2), 0.5, 1.0)[2],
    }
    assert_legible(Path(__file__).stem + "_timeline", lambda: viz.plot_timelines(timelines))


def test_bubble_and_memory_plot_is_legible() -> None:
    ms = [4, 8, 16, 32, 64]
    measured = {
        "GPipe": [pipeline.bubble_formula(4, m) for m in ms],
        "1F1B": [pipeline.bubble_formula(4, m) for m in ms],
        "interleaved v=2": [pipeline.bubble_formula(4, m, 2) for m in ms],
    }
    formula = {
        "(p-1)/(m+p-1)": measured["GPipe"],
        "(p-1)/(vm+p-1), v=2": measured["interleaved v=2"],
    }
    peaks: dict[str, list[float]] = {
        "GPipe": [8.0] * 4,
        "1F1B": [4.0, 3.0, 2.0, 1.0],
        "interleaved v=2": [5.5, 4.5, 3.5, 2.5],
    }
    fig = viz.plot_bubble_and_memory(ms, measured, formula, peaks)
    assert_legible(Path(__file__).stem + "_bubble", lambda: fig)
