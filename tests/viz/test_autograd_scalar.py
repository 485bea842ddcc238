"""Lab 02 plots: labelled figures from a drawn graph, a training run and the GC timings."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from a2s.viz import autograd_scalar as viz
from minitorch.autograd import Value


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


def _deep() -> Value:
    """Lab 02's logistic loss of one point: 9 columns deep, wider than a notebook."""
    w1, w2, b, x1, x2, label = (Value(v) for v in (0.5, -1.0, 0.1, 0.12, 1.15, -1.0))
    loss = (1 + (-(label * (w1 * x1 + w2 * x2 + b))).exp()).log()
    loss.backward()
    return loss


def test_a_deep_graph_wraps_into_bands_with_no_edge_across_a_gap() -> None:
    loss = _deep()
    order = loss.topo_order()
    spots, edges = viz._wrap(order, viz._layout(order), per_band=5)
    assert {band for _, band in spots} == {0, 1}
    assert max(x for x, _ in spots.values()) <= 4  # 5 columns a band
    for src, dst, _ in edges:
        assert src[1] == dst[1], "an edge stays inside its band"
        assert spots[src][0] < spots[dst][0], "and runs left to right"
    repeats = [k for k in spots if k[1] == 1 and (k[0], 0) in spots]
    assert len(repeats) == 1  # the margin y*s, carried to the second band
    fig = viz.draw_graph(loss)
    dashed = [
        t
        for t in fig.axes[0].texts
        if t.get_bbox_patch() and t.get_bbox_patch().get_linestyle() == "--"
    ]
    assert len(dashed) == 1
    assert fig.get_size_inches()[0] <= 9.0  # fits a notebook's ~900 px output
    plt.close(fig)
