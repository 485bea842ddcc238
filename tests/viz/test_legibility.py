"""Every course figure is legible at JupyterLab's default output width.

Each figure is rendered as the inline backend renders it (``savefig`` at the figure's dpi with
``bbox_inches="tight"``), then scaled down to ``WIDTH_PX`` when it is wider, as the browser does.
A figure fails when any text is smaller than ``MIN_PT`` points after that scaling, when text lies
outside the saved image, when an annotation leaves the frame of its axes, or when two tick labels
of one axis overlap. Inputs mimic the notebooks' (sizes, label lengths, number of series).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from a2s.viz import autograd_scalar, autograd_tensor, numerics, orientation, training
from minitorch.autograd import Value
from minitorch.data.shapes import SHAPE_NAMES, make_shapes

WIDTH_PX = 900  # JupyterLab's output area on a laptop screen, about
MIN_PT = 7.9  # ~8 pt after scaling


def _tick_labels(ax: Axes) -> list[list[Text]]:
    """The tick labels drawn on each axis of ``ax`` (ticks outside the view are not drawn)."""
    groups = []
    for axis in (ax.xaxis, ax.yaxis):
        if not (ax.axison and axis.get_visible()):
            continue
        ticks = axis._update_ticks()  # the ticks matplotlib draws, within the view
        for which in ("label1", "label2"):
            labels = [getattr(t, which) for t in ticks]
            groups.append([t for t in labels if t.get_visible() and t.get_text()])
    return groups


def _texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text of ``fig``; tick labels only where a tick is drawn."""
    ticks = {id(t) for ax in fig.axes for group in _tick_labels(ax) for t in group}
    tick_objects = {  # drawn or not
        id(t)
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        for tick in axis.get_major_ticks() + axis.get_minor_ticks()
        for t in (tick.label1, tick.label2)
    }
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        if id(t) in tick_objects and id(t) not in ticks:
            continue
        out.append(t)
    return out


def legibility_problems(fig: Figure) -> tuple[list[str], tuple[int, int]]:
    """Render ``fig`` like the inline backend; return its problems and its size in pixels."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight")
    renderer = fig.canvas.get_renderer()
    saved = fig.get_tightbbox(renderer).padded(0.1)  # inches; savefig's pad_inches
    width, height = round(saved.width * fig.dpi), round(saved.height * fig.dpi)
    scale = min(1.0, WIDTH_PX / width)
    image = Bbox.from_extents(*(saved.extents * fig.dpi)).padded(1)  # display pixels
    problems = []
    for t in _texts(fig):
        label = repr(t.get_text()[:40])
        size = t.get_fontsize() * scale
        if size < MIN_PT:
            problems.append(f"{label}: {t.get_fontsize():g} pt shown at {size:.1f} pt")
        box = t.get_window_extent(renderer)
        if not image.contains(box.x0, box.y0) or not image.contains(box.x1, box.y1):
            problems.append(f"{label}: extends past the figure")
        ax = t.axes
        if isinstance(t, Annotation) or (ax is not None and t in ax.texts):
            if ax is not None and ax.axison and not _inside(box, ax.get_window_extent(renderer)):
                problems.append(f"{label}: outside the frame of its axes")
    for ax in fig.axes:
        for group in _tick_labels(ax):
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in group]
            for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
                if ba.overlaps(bb):
                    problems.append(f"tick labels {a!r} and {b!r} overlap")
    return problems, (width, height)


def _inside(box: Bbox, frame: Bbox) -> bool:
    frame = frame.padded(1)
    return frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)


# --------------------------------------------------------------------------- the figures
def _gemm() -> Figure:
    sizes = [32, 64, 128, 256, 512, 1024]
    intensity = [n / 6 for n in sizes]
    gflops = [17.5, 48.0, 66.1, 60.3, 78.9, 81.2]  # a dip, as on a busy machine
    return orientation.plot_gemm_throughput(sizes, intensity, gflops)


def _neuron() -> Value:
    x1, x2, w1, w2, b = Value(2.0), Value(0.0), Value(-3.0), Value(1.0), Value(6.8813735870195432)
    out = (x1 * w1 + x2 * w2 + b).tanh()
    out.backward()
    return out


def _logistic_loss() -> tuple[Value, dict[Value, str]]:
    """Lab 02's drawn graph: the logistic loss of one point (13 nodes, 8 columns)."""
    w1, w2, b = Value(0.5), Value(-1.0), Value(0.1)
    x1, x2, label = Value(0.1187), Value(1.149), Value(-1.0)
    s = w1 * x1 + w2 * x2 + b
    margin = label * s
    loss = (1 + (-margin).exp()).log()
    loss.backward()
    names = {
        w1: "w1",
        w2: "w2",
        b: "b",
        x1: "x1",
        x2: "x2",
        label: "y",
        s: "+ = s",
        margin: "* = y s",
        loss: "log = L",
    }
    return loss, names


def _moons_training() -> Figure:
    g = np.random.default_rng(0)
    x = g.normal(size=(80, 2))
    y = (x[:, 1] > np.sin(x[:, 0])).astype(int)
    losses = list(0.7 * np.exp(-np.linspace(0, 2.3, 100)))
    return autograd_scalar.plot_training(
        losses, lambda p: p[:, 1] - np.sin(p[:, 0]), x, y, title="MLP 2-8-8-1"
    )


def _agreement() -> Figure:
    steps = np.arange(60)
    torch_curve = 2.3 * np.exp(-steps / 40)
    g = np.random.default_rng(1)
    return autograd_tensor.plot_training_agreement(
        {
            "torch": torch_curve,
            "minitorch rules": torch_curve + g.normal(0, 1e-15, 60),
            "your rules": torch_curve + g.normal(0, 1e-15, 60),
        }
    )


def _loss_curves() -> Figure:
    steps = np.arange(282)
    base = 2.3 * np.exp(-steps / 60) + 0.2
    curves = {
        "FP32, AdamW": base,
        "BF16, AdamW": base + 0.002,
        "FP16 + loss scaling, AdamW": base + 0.001,
        "FP32, SGD Nesterov": base - 0.03,
    }
    lr = 3e-3 * np.minimum((steps + 1) / 28, 0.55 + 0.45 * np.cos(np.pi * steps / 282))
    scale = 2.0 ** (16 + np.minimum(steps // 50, 3))
    return training.plot_loss_curves(
        curves,
        lr=lr,
        lr_label="AdamW learning rate",
        scale=scale,
        title="MLP 100-64-10 on shapes: your AdamW, loop and AMP step",
    )


def _tape() -> Figure:
    depths = [4, 9, 16, 36, 64, 144, 256]
    return training.plot_tape_bytes(
        depths,
        {
            "keep everything": [2 * n + 1 for n in depths],
            "checkpoint every layer": [n + 5 for n in depths],
            "sqrt(N) segments (yours)": [int(4 * n**0.5) + 1 for n in depths],
        },
        256,
    )


FIGURES: dict[str, Callable[[], Figure]] = {
    "00-gemm": _gemm,
    "01-format-grid": numerics.plot_format_grid,
    "01-relative-error": lambda: numerics.plot_relative_error(n=3000),
    "01-summation": lambda: numerics.plot_summation_error(
        [10, 100, 1_000, 10_000, 100_000],
        {
            "naive loop": [0.2, 2.4, 1.6, 25.0, 23.8],
            "your pairwise_sum": [0.2, 0.3, 0.1, 0.2, 0.1],
            "your kahan_sum": [0.0, 0.0, 0.1, 0.0, 0.0],
        },
    ),
    "02-neuron-graph": lambda: autograd_scalar.draw_graph(_neuron(), title="one neuron"),
    "02-loss-graph": lambda: autograd_scalar.draw_graph(
        *_logistic_loss(), title="logistic loss of one point"
    ),
    "02-training": _moons_training,
    "02-gc-trap": lambda: autograd_scalar.plot_gc_trap(
        {
            "closure (micrograd)": (6.2, 1.9),
            "FnValue (yours)": (3.0, 2.1),
            "Value (reference)": (2.9, 2.0),
        },
        40_000,
    ),
    "03-agreement": _agreement,
    "03-im2col": lambda: autograd_tensor.plot_im2col_blowup(
        [1, 3, 5, 7, 9],
        {"stride 1": [1, 9, 25, 49, 81], "stride 2": [0.25, 2.25, 6.25, 12.25, 20.25]},
    ),
    "04-samples": lambda: training.plot_samples(*make_shapes(300, seed=0), SHAPE_NAMES),
    "04-loss-curves": _loss_curves,
    "04-tape": _tape,
}


def assert_legible(name: str, make: Callable[[], Figure]) -> None:
    """Render ``make()`` as a notebook would and fail with every legibility problem found."""
    fig = make()
    try:
        problems, (width, height) = legibility_problems(fig)
    finally:
        plt.close(fig)
    assert not problems, f"{name} ({width} x {height} px):\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])


def test_the_check_finds_small_text_and_escaped_labels() -> None:
    fig, ax = plt.subplots(figsize=(14, 3))  # 1,400 px: shown at 64 %
    ax.plot([0, 1], [0, 1])
    ax.set_title("ten points is too small here", fontsize=10)
    ax.annotate("outside", (1, 1), xytext=(30, 0), textcoords="offset points")
    problems, (width, _) = legibility_problems(fig)
    plt.close(fig)
    assert width > WIDTH_PX
    assert any("ten points" in p and "shown at" in p for p in problems)
    assert any("outside" in p and "frame" in p for p in problems)


def test_the_check_finds_colliding_ticks() -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    ax.set_xticks([0.0, 0.02], ["a long tick label", "another long one"])
    problems, _ = legibility_problems(fig)
    plt.close(fig)
    assert any("overlap" in p for p in problems)
