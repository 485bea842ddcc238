"""Lab 36's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import cpu
from tests.viz.test_legibility import assert_legible


def test_cpu_plot_is_legible() -> None:
    widths = [1, 2, 4, 8]
    ipc = {"dot n=32": [0.8, 1.1, 1.2, 1.2], "matmul 4x4": [0.8, 1.2, 1.3, 1.3]}
    bound = {"dot n=32": 6.9, "matmul 4x4": 5.0}
    sizes = [2**k for k in range(0, 11)]
    acc = {
        "1-bit": [0.6 + 0.02 * k for k in range(11)],
        "gshare": [0.5 + 0.04 * k for k in range(11)],
    }
    fig = cpu.plot_cpu(widths, ipc, bound, sizes, acc, "lab 36")
    assert_legible(Path(__file__).stem, lambda: fig)
    assert len(fig.axes) == 2
