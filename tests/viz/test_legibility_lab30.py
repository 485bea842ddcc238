"""Lab 30's figure is legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from matplotlib.figure import Figure

from a2s.viz import telemetry
from minitorch.driver.governor import SimulatedGpu
from minitorch.driver.power import PowerModel
from minitorch.driver.workload import decode_trace
from tests.viz.test_legibility import assert_legible


def _runs() -> Figure:
    out = {}
    for name, cap in (("no cap", 700_000.0), ("400 W cap", 400_000.0)):
        gpu = SimulatedGpu(PowerModel())
        gpu.set_power_limit_mw(cap)
        run = gpu.run(decode_trace(params=7e9, steps=12), dt_ns=2e6)
        out[name] = [(t, f, p, temp) for t, f, p, temp, _ in run.log]
    return telemetry.plot_capped_run(out, 400.0, "a 7B decode under a power cap")


FIGURES: dict[str, Callable[[], Figure]] = {"30-capped-run": _runs}


@pytest.mark.parametrize("name", FIGURES)
def test_lab30_figure_is_legible(name: str) -> None:
    assert_legible(name, FIGURES[name])


def test_capped_run_draws_one_line_per_run_and_the_cap() -> None:
    fig = _runs()
    top, bottom = fig.axes
    assert len(top.lines) == 2 and len(bottom.lines) == 3
    assert bottom.lines[-1].get_ydata()[0] == 400.0
