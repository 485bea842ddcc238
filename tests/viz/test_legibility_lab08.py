"""Lab 08's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import attention
from tests.viz.test_legibility import assert_legible


def test_peak_memory_plot_is_legible() -> None:
    ns = [128, 256, 512, 1024, 2048, 4096]
    peaks = {
        "naive attention": [0.44e6, 1.6e6, 6.3e6, 24.5e6, 97e6, 386e6],
        "your flash_forward": [0.54e6, 0.8e6, 1.3e6, 2.5e6, 5.0e6, 10.1e6],
    }
    fig = attention.plot_peak_memory(ns, peaks, 64)
    assert_legible(Path(__file__).stem, lambda: fig)
