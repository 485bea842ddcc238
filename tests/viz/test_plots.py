"""Every plotting helper returns a labelled figure (title and axis labels), without a display."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from a2s.viz import numerics, orientation, report


def _labelled(fig: Figure) -> None:
    assert isinstance(fig, Figure)
    titled = fig._suptitle is not None or any(ax.get_title() for ax in fig.axes)
    assert titled, "every plot has a title"
    cartesian = [ax for ax in fig.axes if ax.name != "polar" and ax.has_data()]
    for ax in cartesian:
        assert ax.get_xlabel(), f"x axis of {ax.get_title()!r} has no label"
    if cartesian:  # shared y axes label only the first; categorical axes name their ticks
        assert any(ax.get_ylabel() or ax.get_yticklabels()[0].get_text() for ax in cartesian)
    plt.close(fig)


@pytest.mark.parametrize(
    "make",
    [
        lambda: orientation.plot_gemm_throughput([64, 128], [10.7, 21.3], [5.0, 20.0]),
        lambda: report.plot_skill_radar({"a": 5.0, "b": None, "c": 9.0}, "skills"),
        lambda: numerics.plot_format_grid(),
        lambda: numerics.plot_relative_error(n=200),
        lambda: numerics.plot_summation_error([10, 100], {"naive": [0.5, 2.0], "kahan": [0, 0.1]}),
    ],
    ids=["gemm", "radar", "format-grid", "relative-error", "summation"],
)
def test_plot_is_labelled(make) -> None:
    _labelled(make())
