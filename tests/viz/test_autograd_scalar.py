"""Lab 02 plots: labelled figures from a drawn graph, a training run and the GC timings."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from minitorch.autograd import Value
from minitorch.viz import autograd_scalar as viz


def _neuron() -> Value:
    x, w, b = Value(2.0), Value(-3.0), Value(1.0)
    out = (x * w + b).tanh()
    out.backward()
    return out


def _training() -> Figure:
    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0]])
    y = np.array([0, 1, 0, 1])
    return viz.plot_training([0.7, 0.5, 0.3], lambda p: p[:, 0] - p[:, 1], x, y, grid=8)


@pytest.mark.parametrize(
    "make",
    [
        lambda: viz.draw_graph(_neuron(), title="neuron"),
        _training,
        lambda: viz.plot_gc_trap({"closure": (9.0, 2.0), "Value": (3.0, 2.0)}, 1000),
    ],
    ids=["graph", "training", "gc-trap"],
)
def test_plot_is_labelled(make) -> None:
    fig = make()
    assert isinstance(fig, Figure)
    assert any(ax.get_title() for ax in fig.axes)
    for ax in fig.axes:
        if ax.axison:
            assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
    plt.close(fig)


def test_graph_layout_puts_parents_left_of_children() -> None:
    out = _neuron()
    fig = viz.draw_graph(out)
    order = out.topo_order()
    boxes = [t for t in fig.axes[0].texts if "data" in t.get_text()]
    assert len(boxes) == len(order)  # one box per node
    pos = viz._layout(order)
    assert all(pos[id(p)][0] < pos[id(v)][0] for v in order for p in v.parents)
    plt.close(fig)
