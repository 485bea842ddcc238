"""Lab 29's figures are legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from matplotlib.figure import Figure

from a2s.viz import driver
from minitorch.driver import completion, launch
from minitorch.driver.device import CostModel, DeviceMemory
from tests.viz.test_legibility import assert_legible

_MODEL = CostModel()
_SIZES = [2**k for k in range(4, 23)]


def _waits() -> Figure:
    costs = {
        p: [completion.wait(p, _MODEL.transfer_ns(n), _MODEL)[:2] for n in _SIZES]
        for p in completion.POLICIES
    }
    return driver.plot_waits(_SIZES, costs, 5000.0)


def _timelines() -> Figure:
    runs = {}
    for name in ("eager: 48 launches", "graph: one replay"):
        engine = launch.ComputeEngine(DeviceMemory(1 << 12), _MODEL)
        stream = launch.Stream(engine)
        if name.startswith("graph"):
            stream.begin_capture()
        for _ in range(48):
            stream.launch(launch.Launch(launch.NOP))
        if name.startswith("graph"):
            stream.replay(stream.instantiate(stream.end_capture()))
        runs[name] = [(s.start_ns, s.end_ns) for s in engine.spans]
    return driver.plot_timelines(runs, "48 small kernels of a decode step")


FIGURES: dict[str, Callable[[], Figure]] = {"29-waits": _waits, "29-timelines": _timelines}


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])


def test_timelines_show_one_row_per_run() -> None:
    fig = _timelines()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        "eager: 48 launches",
        "graph: one replay",
    ]
