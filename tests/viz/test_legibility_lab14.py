"""Lab 14's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from a2s.viz import memory_plan
from minitorch.compiler import capture, memory, models
from tests.viz.test_legibility import assert_legible


def test_arena_plot_is_legible() -> None:
    fn, _ = models.attention_block(64, 4)
    bufs = memory.buffers(capture.trace(fn, [np.zeros((128, 64), np.float32)]))
    plans = [
        ("first fit", bufs, memory.first_fit(bufs)),
        ("greedy", bufs, memory.greedy_by_size(bufs)),
    ]
    assert_legible(Path(__file__).stem, lambda: memory_plan.plot_arena(plans))
