"""Lab 31's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import chip
from tests.viz.test_legibility import assert_legible


def test_backend_plot_is_legible() -> None:
    steps = {
        "ALiBi + LayerNorm": {"on_chip": 72, "fallbacks": 0, "bytes": 0},
        "RoPE + RMSNorm": {"on_chip": 95, "fallbacks": 4, "bytes": 4608},
    }
    kernels = [("lowered", 91), ("after passes", 79), ("after fusion", 70)]
    fig = chip.plot_backend(steps, kernels)
    assert len(fig.axes) == 2
    assert_legible(Path(__file__).stem, lambda: fig)
