"""Lab 17's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import allocator
from minitorch.runtime.allocator import CachingAllocator, Device, NaiveAllocator
from minitorch.runtime.trace import replay, training_step_trace
from tests.viz.test_legibility import assert_legible


def test_memory_plot_is_legible() -> None:
    trace = training_step_trace(steps=3)
    runs = {
        "caching": replay(trace, CachingAllocator(Device())),
        "naive": replay(trace, NaiveAllocator(Device())),
    }
    fig = allocator.plot_memory(runs, title="tiny GPT, 3 training steps")
    assert_legible(Path(__file__).stem, lambda: fig)
